"""Custom assertions: a Python file exposing ``check(output, ctx)``, or a JavaScript one
(``.mjs``/``.js``, oh-my-knowledge's format) run by ``graders.custom_js``.

It runs in a child process, confined (``graders.confined``: the OS sandbox, no credentials, a
timeout, the output's tail), so that an exception, a hang or a crash is a failed assertion with its
message, never a crash or a stuck run, and the check cannot touch the host. ``check`` returns a bool or ``{"pass", "message", "score"}``.
``ctx`` holds ``sample`` (the sample's fields), ``assertion``, ``cost_usd`` and ``latency_ms``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from executors.errors import InputError
from graders import custom_js
from graders.confined import outcome, python_paths, run_confined
from graders.schema import CustomAssertion, Observation

DEFAULT_TIMEOUT_S = 10.0

# argv = [payload file]; the answer is MARKER + JSON (graders.confined).
_RUNNER = r"""
import importlib.util, json, sys
payload = json.loads(open(sys.argv[1], encoding="utf-8").read())
sys.path.insert(0, payload["path"].rsplit("/", 1)[0])  # a helper module beside the check imports
spec = importlib.util.spec_from_file_location("skillab_custom_check", payload["path"])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
result = module.check(payload["output"], payload["ctx"])
if isinstance(result, bool):
    result = {"pass": result}
if not isinstance(result, dict) or not isinstance(result.get("pass"), bool):
    raise TypeError(f"check() returned {result!r}; expected a bool or {{'pass': bool, 'message': str}}")
sys.stdout.write("\x00SKILLAB\x00" + json.dumps({"pass": result["pass"], "message": str(result.get("message", "")),
                  "score": result.get("score")}))
"""


def resolve(fn: str, source_dir: str) -> Path:
    return (Path(source_dir) / fn).resolve()


def validate_file(path: Path) -> None:
    """Load-time check: a Python file exists, parses and defines check() (without running it); a
    JavaScript one is loaded in node, sandboxed, and must export a function."""
    if custom_js.is_js(path.name):
        custom_js.validate_file(path)
        return
    if not path.is_file():
        raise InputError(f"custom assertion file not found: {path}")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise InputError(
            f"custom assertion file {path}: syntax error at line {exc.lineno}: {exc.msg}"
        ) from exc
    if not any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "check" for n in tree.body
    ):
        raise InputError(f"custom assertion file {path} defines no function check(output, ctx)")


def run_custom(a: CustomAssertion, obs: Observation) -> tuple[bool, str, float | None]:
    sample = obs.sample
    source_dir = sample.source_dir if sample else "."
    path = resolve(a.fn, source_dir)
    fields = sample.model_dump(mode="json", by_alias=True) if sample else {}
    timeout = a.timeout_s or DEFAULT_TIMEOUT_S
    if custom_js.is_js(path.name):
        return custom_js.run_js(path, obs.output, fields, a.described(), timeout)
    ctx = {
        "sample": fields,
        "assertion": a.described(),
        "cost_usd": obs.cost_usd,
        "latency_ms": obs.latency_ms,
    }
    answer = run_confined(
        sys.executable,
        ("runner.py", _RUNNER),
        [],
        {"path": str(path), "output": obs.output, "ctx": ctx},
        code_dir=path.parent,
        timeout_s=timeout,
        readable=python_paths(),
    )
    return outcome(answer)
