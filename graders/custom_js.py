"""Custom assertions in JavaScript: a ``.mjs``/``.js`` file whose default export (or, as
oh-my-knowledge also accepts, a named ``check``) is ``function(output, { sample, assertion })``
returning ``{ pass, message }`` or a Promise of it.

The function runs under node in a child process, in the OS sandbox of ``executors.sandbox`` when
bubblewrap can run here (read-only host, private /tmp, the real HOME covered), always with the
environment allow-list (no API key reaches user code), a throwaway HOME, the Python custom checks'
timeout, and only the tail of its output kept. An exception, a hang, a return that is not
``{ pass: boolean }`` or a module without a function export is a failed assertion with its message.
At load time the module is imported the same way (short timeout) to check it exports a function.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

from executors.errors import InputError
from executors.sandbox import Isolation, host_env, probe, wrap

SUFFIXES = (".mjs", ".js")
LOAD_TIMEOUT_S = 5.0
OUTPUT_CAP = 64 * 1024  # bytes of the child's output kept: a flood cannot fill memory
MESSAGE_CAP = 2000  # characters of the function's message kept
MARKER = "\x00SKILLAB\x00"

# The wrapper: argv = [mode ("check" | "run"), payload file]. It answers with MARKER + JSON written
# synchronously (process.stdout is asynchronous on a pipe and process.exit would cut it short).
_WRAPPER = r"""
import { readFileSync, writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const MARKER = '\u0000SKILLAB\u0000';
const answer = (obj) => { writeSync(1, MARKER + JSON.stringify(obj)); process.exit(0); };
const text = (err) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
process.on('unhandledRejection', (err) => answer({ error: `unhandled rejection: ${text(err)}` }));
const [mode, payloadFile] = process.argv.slice(2);
const payload = JSON.parse(readFileSync(payloadFile, 'utf8'));
let mod;
try {
  mod = await import(pathToFileURL(payload.path).href);
} catch (err) {
  answer({ error: `cannot load: ${text(err)}` });
}
const fn = typeof mod.default === 'function' ? mod.default : mod.check;
if (typeof fn !== 'function') {
  const kind = mod.default === undefined ? 'no default export' : `default export is ${typeof mod.default}`;
  answer({ error: `${kind}: export default function (output, { sample, assertion })` });
}
if (mode === 'check') answer({ ok: true });
let result;
try {
  result = await fn(payload.output, { sample: payload.sample, assertion: payload.assertion });
} catch (err) {
  answer({ error: `threw ${text(err)}` });
}
if (result === null || typeof result !== 'object' || Array.isArray(result) || typeof result.pass !== 'boolean') {
  let shown;
  try { shown = JSON.stringify(result); } catch { shown = String(result); }
  answer({ error: `returned ${String(shown).slice(0, 200)}; expected { pass: boolean, message?: string }` });
}
const score = typeof result.score === 'number' ? result.score : null;
answer({ pass: result.pass, message: String(result.message ?? '').slice(0, %d), score });
""".replace("%d", str(MESSAGE_CAP))


def is_js(fn: str) -> bool:
    return fn.lower().endswith(SUFFIXES)


def isolation() -> Isolation:
    """Bubblewrap where it builds a sandbox here; elsewhere only the fresh HOME and the scrubbed
    environment stand between user code and this machine."""
    return "bubblewrap" if probe() is None else "none"


def node_binary() -> str:
    found = shutil.which("node")
    if found is None:
        raise InputError("node is not installed: JavaScript custom assertions need Node.js on PATH")
    return found


def _drain(proc: subprocess.Popen[bytes], tail: deque[bytes]) -> None:
    if proc.stdout is None:
        return
    size = 0
    while chunk := os.read(proc.stdout.fileno(), 1 << 16):
        tail.append(chunk)
        size += len(chunk)
        while size - len(tail[0]) > OUTPUT_CAP:
            size -= len(tail.popleft())


def run_node(mode: str, path: Path, payload: dict[str, Any], timeout_s: float) -> dict[str, Any] | str:
    """The wrapper's answer, or a one-line reason it gave none (timeout, crash)."""
    node = node_binary()
    with tempfile.TemporaryDirectory(prefix="skillab-js-") as work_dir:
        work = Path(work_dir)
        (work / "home").mkdir()
        (work / "wrapper.mjs").write_text(_WRAPPER, encoding="utf-8")
        (work / "payload.json").write_text(json.dumps({**payload, "path": str(path)}), encoding="utf-8")
        env = host_env() | {"HOME": str(work / "home"), "TMPDIR": str(work / "home")}
        argv = [node, str(work / "wrapper.mjs"), mode, str(work / "payload.json")]
        command = wrap(
            argv,
            isolation=isolation(),
            workdir=work,
            readable=[path.parent],
            search_path=env["PATH"],
            chdir=path.parent,
        )
        proc = subprocess.Popen(
            command,
            cwd=path.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        tail: deque[bytes] = deque()
        reader = threading.Thread(target=_drain, args=(proc, tail), daemon=True)
        reader.start()
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(timeout=5)
        if proc.stdout is not None and not reader.is_alive():
            proc.stdout.close()
    out = b"".join(tail)[-OUTPUT_CAP:].decode("utf-8", "replace")
    if code is None:
        return f"timed out after {timeout_s:g}s"
    if MARKER not in out:
        lines = [line for line in out.strip().splitlines() if line.strip()]
        return lines[-1][:300] if lines else f"node exited with code {code} and no answer"
    try:
        answer = json.loads(out.rsplit(MARKER, 1)[1])
    except json.JSONDecodeError:
        return "its answer was cut off (output over the cap)"
    return answer if isinstance(answer, dict) else "no answer"


_validated: dict[tuple[str, float, int], str | None] = {}


def validate_file(path: Path) -> None:
    """Load the module in node (sandboxed, short timeout): it must export a function. Raises
    InputError ``fn: ...``. Cached per file version: a file shared by many samples loads once."""
    if not path.is_file():
        raise InputError(f"fn: custom assertion file not found: {path}")
    stat = path.stat()
    key = (str(path), stat.st_mtime, stat.st_size)
    if key not in _validated:
        answer = run_node("check", path, {"output": "", "sample": {}, "assertion": {}}, LOAD_TIMEOUT_S)
        if isinstance(answer, str):
            _validated[key] = f"loading it {answer}" if answer.startswith("timed out") else answer
        else:
            _validated[key] = answer.get("error")
    problem = _validated[key]
    if problem is not None:
        raise InputError(f"fn: {path}: {problem}")


def run_js(
    path: Path, output: str, sample: dict[str, Any], assertion: dict[str, Any], timeout_s: float
) -> tuple[bool, str, float | None]:
    """Run the file's function on one output: (passed, message, score)."""
    answer = run_node("run", path, {"output": output, "sample": sample, "assertion": assertion}, timeout_s)
    if isinstance(answer, str):
        return False, f"custom check {answer}", None
    if "error" in answer:
        return False, f"custom check failed: {answer['error']}", None
    score = answer.get("score")
    if isinstance(score, float) and not math.isfinite(score):
        return (
            False,
            f"custom check returned a score that is not a finite number ({score}): not counted",
            None,
        )
    return (
        bool(answer.get("pass")),
        str(answer.get("message") or ""),
        float(score) if isinstance(score, int | float) else None,
    )
