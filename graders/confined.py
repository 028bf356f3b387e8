"""User code of a benchmark (custom assertions in Python or JavaScript) run in a child process,
confined: the OS sandbox of ``executors.sandbox`` where bubblewrap runs here (read-only host,
private /tmp, the real HOME covered), always the environment allow-list (no API key reaches user
code), a throwaway HOME, a timeout after which the whole process group is killed, and only the tail
of its output kept (a flood cannot fill memory).

The child answers with ``MARKER`` followed by one JSON object; anything else (a crash, a hang, a
cut-off answer) comes back as a one-line reason.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from executors.parsing import JsonObject
from executors.sandbox import Isolation, executable_paths, host_env, probe, run_sandboxed
from executors.workspace import session_root
from graders.schema import GradingError

OUTPUT_CAP = 64 * 1024  # bytes of the child's output kept
MARKER = "\x00SKILLAB\x00"


def isolation() -> Isolation:
    """Bubblewrap where it builds a sandbox here; elsewhere only the fresh HOME and the scrubbed
    environment stand between user code and this machine."""
    return "bubblewrap" if probe() is None else "none"


def python_paths() -> list[Path]:
    """What this interpreter needs readable inside the sandbox (a virtualenv under /tmp or HOME is
    covered there unless bound back)."""
    return [
        *executable_paths(sys.executable),
        *(Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}),
    ]


def run_confined(
    interpreter: str,
    script: tuple[str, str],
    args: Sequence[str],
    payload: JsonObject,
    *,
    code_dir: Path,
    timeout_s: float,
    readable: Sequence[Path] = (),
) -> JsonObject | str:
    """Run ``interpreter WORK/script[0] *args WORK/payload.json`` in ``code_dir`` (read-only), where
    ``script[1]`` is the script's text: its answer, or a one-line reason it gave none."""
    name, text = script
    with session_root() as work:
        (work / "home").mkdir()
        (work / name).write_text(text, encoding="utf-8")
        (work / "payload.json").write_text(json.dumps(payload), encoding="utf-8")
        env = host_env() | {"HOME": str(work / "home"), "TMPDIR": str(work / "home")}
        argv = [interpreter, str(work / name), *args, str(work / "payload.json")]
        code, out = run_sandboxed(
            argv,
            isolation=isolation(),
            workdir=work,
            env=env,
            timeout_s=timeout_s,
            cap=OUTPUT_CAP,
            readable=[code_dir, *readable],
            chdir=code_dir,
        )
    if code is None:
        return f"timed out after {timeout_s:g}s"
    if MARKER not in out:
        lines = [line for line in out.strip().splitlines() if line.strip()]
        return lines[-1][:300] if lines else f"exited with code {code} and no answer"
    try:
        answer = json.loads(out.rsplit(MARKER, 1)[1])
    except json.JSONDecodeError:
        return "its answer was cut off (output over the cap)"
    return answer if isinstance(answer, dict) else "no answer"


def outcome(answer: JsonObject | str) -> tuple[bool, str, float | None]:
    """A custom check's (passed, message, score) from its answer. A reason it gave none (a crash, a
    timeout), an error it reported, or a score that is not a finite number raises GradingError: the
    check could not decide, which says nothing about the output."""
    if isinstance(answer, str):
        raise GradingError(
            f"custom check {answer if answer.startswith('timed out') else 'failed: ' + answer}"
        )
    if "error" in answer:
        raise GradingError(f"custom check failed: {answer['error']}")
    score = answer.get("score")
    if isinstance(score, float) and not math.isfinite(score):
        raise GradingError(f"custom check returned a score that is not a finite number ({score})")
    return (
        bool(answer.get("pass")),
        str(answer.get("message") or ""),
        float(score) if isinstance(score, int | float) else None,
    )
