"""The deterministic checks, run inside a session's sandbox (the one I/O graders do).

The result has the seed's checks.json shape (``file_exists``, ``file_contains`` {pattern: bool},
``syntax_valid``, ``runs_without_error``, ``all_passed``) plus ``details`` with each check's reason
and ``isolation``, the OS sandbox the commands ran in. A check that cannot run here (no
interpreter) is a warning, not a failure, as the seed says.

Every command a check runs (the task's own for ``runs_without_error``, the syntax checkers) runs in
the OS sandbox of ``executors.sandbox``: the task's sandbox folder writable, a throwaway HOME, the
real HOME covered, a scrubbed environment (no API keys). Files are read only inside the sandbox: a
path that leads out of it, by ``..`` or a symlink the agent left, is not followed.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import yaml

from executors.agent import agent_cli_classes, find_binary
from executors.conversation import ASK_TOOL
from executors.parsing import load_json, load_yaml
from executors.sandbox import Isolation, executable_paths, host_env, require, run_sandboxed
from executors.schema import AgentSession
from executors.workspace import session_root
from graders.agent_task import CONVERSATION_CHECKS, FILE_CHECKS, AgentTask, Check
from graders.grades import CheckDetail, CheckResults
from graders.schema import GradingError

RUN_TIMEOUT_S = 60.0
OUTPUT_TAIL = 8192  # bytes of a command's output kept for the reason
EXTENSIONS = {
    "python": (".py",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".tsx"),
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "shell": (".sh", ".bash"),
}
ALIASES = {
    "py": "python",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "yml": "yaml",
    "bash": "shell",
    "sh": "shell",
}


@functools.cache
def skip_dirs() -> frozenset[str]:
    """Folders no check reads: packages, caches, and the agent CLIs' own (asked of their executors
    when first needed: a sample run imports no agent CLI's module)."""
    return frozenset(
        {
            "node_modules",
            "__pycache__",
            ".git",
            *(d for cli in agent_cli_classes() for d in cli.workspace_dirs),
        }
    )


def sandbox_files(sandbox: Path) -> list[Path]:
    """The sandbox's files, without the CLIs' folders, and without symlinks that lead outside it."""
    root = sandbox.resolve()
    return sorted(
        p
        for p in sandbox.rglob("*")
        if not skip_dirs() & set(p.relative_to(sandbox).parts)
        and p.is_file()
        and p.resolve().is_relative_to(root)
    )


def inside(sandbox: Path, relative: str) -> Path | None:
    """``sandbox / relative`` when it stays inside the sandbox once symlinks are followed, else None."""
    path = sandbox / relative
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return None
    return path if resolved.is_relative_to(sandbox.resolve()) else None


class CheckRunner:
    """Runs the checks' commands in one sandbox folder under one isolation, with a throwaway HOME."""

    def __init__(self, sandbox: Path, home: Path, isolation: Isolation, timeout_s: float) -> None:
        self.sandbox = sandbox
        self.home = home
        self.isolation = isolation
        self.timeout_s = timeout_s
        (home / "tmp").mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        return host_env() | {"HOME": str(self.home), "TMPDIR": str(self.home / "tmp")}

    def run(self, argv: list[str], cwd: Path | None = None) -> tuple[int | None, str]:
        """(exit code, the output's tail); exit code None when it ran out of time (or disk) and was
        killed."""
        readable = [p for name in ("tsc",) if (found := find_binary(name)) for p in executable_paths(found)]
        return run_sandboxed(
            argv,
            isolation=self.isolation,
            workdir=self.sandbox,
            env=self.env(),
            timeout_s=self.timeout_s,
            cap=OUTPUT_TAIL,
            writable=[self.home],
            readable=readable,
            chdir=cwd or self.sandbox,
        )


@contextlib.contextmanager
def check_runner(
    sandbox: Path, isolation: Isolation = "bubblewrap", timeout_s: float = RUN_TIMEOUT_S
) -> Iterator[CheckRunner]:
    """A runner with a fresh HOME outside the sandbox, removed afterwards. Raises
    SandboxUnavailableError when bubblewrap is asked for and cannot run here."""
    require(isolation)
    with session_root() as home:
        yield CheckRunner(sandbox, home, isolation, timeout_s)


def _syntax(path: Path, language: str, runner: CheckRunner) -> tuple[bool | None, str]:
    """(ok, reason); ok None when no checker is available."""
    try:
        if language == "json":
            load_json(path.read_text(encoding="utf-8"))
            return True, ""
        if language == "yaml":
            load_yaml(path.read_text(encoding="utf-8"))
            return True, ""
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        return False, f"{path.name}: {str(exc).splitlines()[0]}"
    except OSError as exc:
        return False, f"{path.name}: {exc.strerror or exc}"
    commands = {
        "python": ["python3", "-m", "py_compile", str(path)],
        "javascript": ["node", "--check", str(path)],
        "shell": ["bash", "-n", str(path)],
    }
    if language == "typescript":
        tsc = find_binary("tsc")
        if not tsc:
            return None, "no TypeScript compiler (tsc) here"
        commands["typescript"] = [
            tsc,
            "--noEmit",
            "--skipLibCheck",
            "--allowJs",
            "--target",
            "es2022",
            str(path),
        ]
    cmd = commands[language]
    if not shutil.which(cmd[0], path=runner.env()["PATH"]):
        return None, f"{cmd[0]} is not installed"
    code, output = runner.run(cmd, cwd=path.parent)
    if code is None:  # the checker hung, not the agent's code: no verdict
        raise GradingError(f"{path.name}: the {language} syntax check timed out after {runner.timeout_s:g}s")
    err = output.strip().splitlines()
    return code == 0, "" if code == 0 else f"{path.name}: {err[-1] if err else 'syntax error'}"


def _outside(value: str) -> str:
    return f"{value} leads outside the sandbox: not read"


def run_check(check: Check, runner: CheckRunner) -> tuple[bool | None, str]:
    sandbox = runner.sandbox
    files = sandbox_files(sandbox)
    if check.kind == "file_exists":
        path = inside(sandbox, check.target)
        if path is None:
            return False, _outside(check.target)
        ok = path.is_file()
        return ok, "" if ok else f"{check.target} was not created"
    if check.kind == "file_contains":
        if check.file:
            only = inside(sandbox, check.file)
            if only is None:
                return False, _outside(check.file)
            targets = [only]
        else:
            targets = files
        for path in targets:
            try:
                if check.target in path.read_text(encoding="utf-8", errors="replace"):
                    return True, f"found in {path.relative_to(sandbox)}"
            except OSError:
                continue
        return False, f"{check.target!r} not found in {check.file or 'any file'}"
    if check.kind == "syntax_valid":
        language = ALIASES.get(check.target.lower(), check.target.lower())
        if language in EXTENSIONS:
            chosen = [p for p in files if p.suffix in EXTENSIONS[language]]
        else:
            language = next((lang for lang, exts in EXTENSIONS.items() if check.target.endswith(exts)), "")
            if not language:
                return None, f"unknown language of {check.target}"
            path = inside(sandbox, check.target)
            if path is None:
                return False, _outside(check.target)
            chosen = [path] if path.is_file() else []
        if not chosen:
            return False, f"no {language} file to check"
        for path in chosen:
            verdict, reason = _syntax(path, language, runner)
            if verdict is not True:
                return verdict, reason
        return True, f"{len(chosen)} {language} file(s) parse"
    code, output = runner.run(["/bin/sh", "-c", check.target])
    if code is None:
        return False, f"timed out after {runner.timeout_s:g}s"
    tail = output.strip().splitlines()
    return code == 0, f"exit code {code}" + (f": {tail[-1][:200]}" if tail and code else "")


def first_question(session: AgentSession) -> int | None:
    """Where in the session's events the agent first asked its user (AskUserQuestion, or a turn's
    text the conversation took as a question)."""
    asked = {u.text.strip() for u in session.conversation if u.kind == "question"}
    if not session.events:  # a reference conversation: what was said, with no stream of its own
        return 0 if asked else None
    return next(
        (
            i
            for i, e in enumerate(session.events)
            if (e.kind == "tool_use" and e.tool == ASK_TOOL)
            or (e.kind == "text" and (e.text or "").strip() in asked)
        ),
        None,
    )


def conversation_check(check: Check, session: AgentSession | None) -> tuple[bool | None, str]:
    """A check of what was said: asked, asked_before, refused (graders.agent_task)."""
    if session is None:
        return None, "no conversation to grade (a reference solution has none)"
    questions = [u.text for u in session.conversation if u.kind == "question"]
    if check.kind == "asked":
        hit = next((q for q in questions if re.search(check.target, q, re.I)), None)
        return (
            (True, f"asked: {hit[:160]}")
            if hit
            else (False, f"no question matched {check.target!r} ({len(questions)} asked)")
        )
    if check.kind == "refused":
        refused = [
            u
            for u in session.conversation
            if u.decision == "deny" and fnmatch.fnmatchcase(u.tool or "", check.target)
        ]
        return (
            (True, f"refused: {refused[0].tool}: {refused[0].text[:160]}")
            if refused
            else (False, f"no call of {check.target} was refused")
        )
    asked = first_question(session)
    used = next(
        (
            i
            for i, e in enumerate(session.events)
            if e.kind == "tool_use" and fnmatch.fnmatchcase(e.tool or "", check.target)
        ),
        None,
    )
    if asked is None:
        return False, "the agent never asked" + (f" before using {check.target}" if used is not None else "")
    if used is not None and used < asked:
        return False, f"{check.target} was used before the first question"
    return (
        True,
        f"asked before using {check.target}" if used is not None else f"asked; {check.target} was not used",
    )


def run_checks(
    task: AgentTask,
    sandbox: Path,
    isolation: Isolation = "bubblewrap",
    timeout_s: float = RUN_TIMEOUT_S,
    session: AgentSession | None = None,
) -> CheckResults:
    """Every check of ``task`` against ``sandbox`` (and the session's conversation); commands under
    ``isolation``. Raises SandboxUnavailableError when bubblewrap is asked for and cannot run here."""
    kinds: dict[str, bool] = {}
    contains: dict[str, bool] = {}
    details: list[CheckDetail] = []
    warnings = []
    undecided = []
    with check_runner(sandbox, isolation, timeout_s) as runner:
        for check in task.checks:
            try:
                talked = check.kind in CONVERSATION_CHECKS
                ok, reason = conversation_check(check, session) if talked else run_check(check, runner)
            except Exception as exc:  # a checker that hung or broke decides nothing (fail closed)
                reason = str(exc) if isinstance(exc, GradingError) else f"{type(exc).__name__}: {exc}"
                details.append(CheckDetail(check=check.label, passed=None, reason=reason, error=True))
                undecided.append(f"{check.label}: {reason}")
                continue
            details.append(CheckDetail(check=check.label, passed=ok, reason=reason))
            if ok is None:
                warnings.append(f"{check.label}: skipped: {reason}")
            elif check.kind == "file_contains":
                contains[check.target] = ok
            elif check.kind in FILE_CHECKS:
                kinds[check.kind] = kinds.get(check.kind, True) and ok
    optional: dict[str, object] = {"warnings": warnings, "grading_error": "; ".join(undecided)}
    return CheckResults.model_validate(
        {
            **kinds,
            **({"file_contains": contains} if contains else {}),
            "all_passed": all(d.passed is not False for d in details),
            "details": details,
            "isolation": isolation,
            **{k: v for k, v in optional.items() if v},
        }
    )
