"""The installed agent CLI's version, and the one table of what each feature needs.

A run that needs a feature the installed CLI lacks stops before any session with one line (exit 2),
instead of sessions that silently load nothing.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

#: (cli, feature) -> the oldest version known to have it, and what the feature is.
#: plugin-dir: 2.1.197 (the oldest release run here) loads a plugin folder with --plugin-dir and
#: lists its parts in the init event. plugin-eval: ``claude plugin eval`` (absent from 2.1.197).
FEATURES: dict[tuple[str, str], tuple[str, str]] = {
    ("claude", "plugin-dir"): ("2.1.197", "loading a plugin folder (--plugin-dir)"),
    ("claude", "plugin-eval"): ("2.1.269", "`claude plugin eval` suites"),
    # Resuming from a session file's path (not an id) is what `claude plugin eval` does with a
    # case's history_file; checked live on 2.1.330, assumed from 2.1.269 where that command is.
    ("claude", "resume-file"): ("2.1.269", "resuming a recorded session (a case's context.history_file)"),
}
#: Skills every Claude Code session lists of its own (2.1.197 and 2.1.330, see TRIGGERS.md). They are
#: never the user's artifact: a skill under test may not share a name with one of them.
CLAUDE_BUILTIN_SKILLS = frozenset(
    {
        "batch",
        "claude-api",
        "code-review",
        "dataviz",
        "debug",
        "deep-research",
        "doctor",
        "fewer-permission-prompts",
        "loop",
        "plugin-authoring",
        "run",
        "run-skill-generator",
        "simplify",
        "update-config",
        "verify",
        "workflow-authoring",
    }
)
VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = VERSION.search(text or "")
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


@functools.cache
def installed_version(binary: str) -> str | None:
    """``<binary> --version``'s x.y.z, None when it cannot be told (the CLI is then not gated)."""
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "DISABLE_AUTOUPDATER": "1", "NO_COLOR": "1"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = parse_version(done.stdout) or parse_version(done.stderr)
    return ".".join(map(str, found)) if found else None


def feature_problem(cli: str, feature: str, version: str | None) -> str | None:
    """Why ``version`` of ``cli`` cannot do ``feature`` (None when it can, or when unknown)."""
    need = FEATURES.get((cli, feature))
    have = parse_version(version or "")
    if need is None or have is None:
        return None
    minimum, what = need
    wanted = parse_version(minimum)
    if wanted is not None and have < wanted:
        return (
            f"--runner {cli}: {what} needs {cli} >= {minimum}, but {version} is installed: "
            "run scripts/install-agent-clis.sh (or set SKILLAB_AGENT_CLI_DIR / "
            f"SKILLAB_{cli.upper()}_BIN to a newer one)"
        )
    return None
