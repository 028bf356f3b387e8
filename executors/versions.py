"""The installed agent CLI's version, and whether it is recent enough for a feature (each CLI's
executor declares its features and their oldest versions).

A run that needs a feature the installed CLI lacks stops before any session with one line (exit 2),
instead of sessions that silently load nothing.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

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


def version_problem(
    runner: str, binary: str, need: tuple[str, str] | None, version: str | None
) -> str | None:
    """Why ``version`` of a CLI falls short of ``need`` (the oldest version with a feature, and what
    the feature is); None when it does not, or when either is unknown."""
    have = parse_version(version or "")
    if need is None or have is None:
        return None
    minimum, what = need
    wanted = parse_version(minimum)
    if wanted is not None and have < wanted:
        return (
            f"--runner {runner}: {what} needs {binary} >= {minimum}, but {version} is installed: "
            "run scripts/install-agent-clis.sh (or set SKILLAB_AGENT_CLI_DIR / "
            f"SKILLAB_{binary.upper()}_BIN to a newer one)"
        )
    return None
