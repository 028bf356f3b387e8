"""Custom assertions in JavaScript: a ``.mjs``/``.js`` file whose default export (or, as
oh-my-knowledge also accepts, a named ``check``) is ``function(output, { sample, assertion })``
returning ``{ pass, message }`` or a Promise of it.

The function runs under node, confined as the Python checks are (``graders.confined``: the OS
sandbox, the environment allow-list, a throwaway HOME, a timeout, the output's tail). An exception, a hang, a return that is not
``{ pass: boolean }`` or a module without a function export is a failed assertion with its message.
At load time the module is imported the same way (short timeout) to check it exports a function.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from executors.errors import InputError
from executors.parsing import JsonObject
from graders.confined import outcome, run_confined

SUFFIXES = (".mjs", ".js")
LOAD_TIMEOUT_S = 5.0
MESSAGE_CAP = 2000  # characters of the function's message kept

# The wrapper: argv = [mode ("check" | "run"), payload file]. It answers with MARKER + JSON written
# synchronously (process.stdout is asynchronous on a pipe and process.exit would cut it short).
_WRAPPER = r"""
import { readFileSync, writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const MARKER = '\u0000SKILLAB\u0000';
// stdout may be left non-blocking by a flood of console.log: a full pipe answers EAGAIN, so wait
// a millisecond and write the rest (the reader drains it; the timeout bounds the wait).
const pause = new Int32Array(new SharedArrayBuffer(4));
const writeAll = (text) => {
  let buf = Buffer.from(text);
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(1, buf));
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
};
const answer = (obj) => { writeAll(MARKER + JSON.stringify(obj)); process.exit(0); };
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


def node_binary() -> str:
    found = shutil.which("node")
    if found is None:
        raise InputError("node is not installed: JavaScript custom assertions need Node.js on PATH")
    return found


def run_node(mode: str, path: Path, payload: JsonObject, timeout_s: float) -> JsonObject | str:
    """The wrapper's answer, or a one-line reason it gave none (timeout, crash)."""
    return run_confined(
        node_binary(),
        ("wrapper.mjs", _WRAPPER),
        [mode],
        {**payload, "path": str(path)},
        code_dir=path.parent,
        timeout_s=timeout_s,
    )


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
    path: Path, output: str, sample: JsonObject, assertion: JsonObject, timeout_s: float
) -> tuple[bool, str, float | None]:
    """Run the file's function on one output: (passed, message, score)."""
    return outcome(
        run_node("run", path, {"output": output, "sample": sample, "assertion": assertion}, timeout_s)
    )
