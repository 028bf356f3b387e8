"""The deterministic checks, run inside a session's sandbox (the one I/O graders do).

The result has the seed's checks.json shape (``file_exists``, ``file_contains`` {pattern: bool},
``syntax_valid``, ``runs_without_error``, ``all_passed``) plus ``details`` with each check's reason.
A check that cannot run here (no interpreter) is a warning, not a failure, as the seed says.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from graders.agent_task import AgentTask, Check

RUN_TIMEOUT_S = 60.0
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
SKIP_DIRS = {".claude", ".agents", ".codex", ".gemini", "node_modules", "__pycache__", ".git"}


def sandbox_files(sandbox: Path) -> list[Path]:
    return sorted(
        p for p in sandbox.rglob("*") if p.is_file() and not SKIP_DIRS & set(p.relative_to(sandbox).parts)
    )


def _syntax(path: Path, language: str) -> tuple[bool | None, str]:
    """(ok, reason); ok None when no checker is available."""
    try:
        if language == "json":
            json.loads(path.read_text(encoding="utf-8"))
            return True, ""
        if language == "yaml":
            yaml.safe_load(path.read_text(encoding="utf-8"))
            return True, ""
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        return False, f"{path.name}: {str(exc).splitlines()[0]}"
    commands = {
        "python": ["python3", "-m", "py_compile", str(path)],
        "javascript": ["node", "--check", str(path)],
        "shell": ["bash", "-n", str(path)],
    }
    if language == "typescript":
        tsc = shutil.which("tsc") or shutil.which(
            "tsc", path=str(Path.home() / ".cache/skillab/agent-clis/node_modules/.bin")
        )
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
    if not shutil.which(cmd[0]):
        return None, f"{cmd[0]} is not installed"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=path.parent)
    err = (proc.stderr or proc.stdout).strip().splitlines()
    return (
        proc.returncode == 0,
        "" if proc.returncode == 0 else f"{path.name}: {err[-1] if err else 'syntax error'}",
    )


def run_check(check: Check, sandbox: Path, timeout_s: float = RUN_TIMEOUT_S) -> tuple[bool | None, str]:
    files = sandbox_files(sandbox)
    if check.kind == "file_exists":
        ok = (sandbox / check.target).is_file()
        return ok, "" if ok else f"{check.target} was not created"
    if check.kind == "file_contains":
        targets = [sandbox / check.file] if check.file else files
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
            path = sandbox / check.target
            language = next((lang for lang, exts in EXTENSIONS.items() if path.suffix in exts), "")
            chosen = [path] if path.is_file() else []
            if not language:
                return None, f"unknown language of {check.target}"
        if not chosen:
            return False, f"no {language} file to check"
        for path in chosen:
            verdict, reason = _syntax(path, language)
            if verdict is not True:
                return verdict, reason
        return True, f"{len(chosen)} {language} file(s) parse"
    try:
        proc = subprocess.run(
            check.target,
            shell=True,
            cwd=sandbox,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout_s:g}s"
    tail = (proc.stderr or proc.stdout).strip().splitlines()
    return proc.returncode == 0, f"exit code {proc.returncode}" + (
        f": {tail[-1][:200]}" if tail and proc.returncode else ""
    )


def run_checks(task: AgentTask, sandbox: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    details = []
    warnings = []
    for check in task.checks:
        ok, reason = run_check(check, sandbox)
        details.append({"check": check.label, "passed": ok, "reason": reason})
        if ok is None:
            warnings.append(f"{check.label}: skipped: {reason}")
            continue
        if check.kind == "file_contains":
            out.setdefault("file_contains", {})[check.target] = ok
        else:
            out[check.kind] = bool(out.get(check.kind, True)) and ok
    out["all_passed"] = all(d["passed"] is not False for d in details)
    out["details"] = details
    if warnings:
        out["warnings"] = warnings
    return out
