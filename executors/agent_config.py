"""What an agent CLI reads as its own configuration, found in a folder a suite ships.

A file that configures the agent (Claude Code's settings and hooks, an OpenCode plugin, a Codex or
Copilot instructions file) runs, or is obeyed, inside the CLI process of every session that finds it
in its working folder. Shipped by a suite's case into both arms, it can tell the arms apart and rig
one of them (a Stop hook that deletes the baseline's output; a plugin that writes a forged event into
the stream skillab parses). So such a file is either part of the artifact under test (a plugin's own
hooks, loaded in the with-skill arm only) or refused before any session starts, in one line naming it.

``CONFIG_FILES`` lists each agent CLI's paths; the check takes every CLI's, whichever runs: a suite
is refused the same way on every agent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

#: What of a working folder (at any depth) each agent CLI reads as its own configuration: settings,
#: hooks, plugins, agents, commands, instructions, MCP servers (the CLI's own skills folder among
#: them), from the CLIs' documentation and their behaviour here. Every agent CLI has its entry
#: (tests/executors/test_registry.py).
CONFIG_FILES: dict[str, tuple[str, ...]] = {
    # settings (hooks among them), rules, skills, commands, agents, output styles, workflows, memory
    "claude": (".claude", ".mcp.json", "CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", ".worktreeinclude"),
    # project config and hooks, rules, agents; skills and plugin catalogues in .agents
    "codex": (".codex", ".agents", "AGENTS.md", "AGENTS.override.md"),
    # settings (hooks, MCP servers), commands, skills, agents; .env is read into its environment
    "gemini-cli": (".gemini", ".agents", "GEMINI.md", ".geminiignore", ".env"),
    "copilot": (
        ".github/copilot-instructions.md",
        ".github/instructions",
        ".github/copilot",  # settings: hooks, plugins
        ".github/hooks",
        ".github/agents",
        ".github/skills",
        ".github/extensions",
        ".github/mcp.json",
        ".github/lsp.json",
        ".mcp.json",
        ".agents",
        ".claude",  # its settings' hooks and plugins, agents, skills, commands, rules
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
    ),
    # config (plugins, MCP, instructions), plugins, tools, agents, commands, modes, skills
    "opencode": (
        ".opencode",
        "opencode.json",
        "opencode.jsonc",
        ".agents",
        ".claude",
        "AGENTS.md",
        "CLAUDE.md",
        "CONTEXT.md",
    ),
}
#: Entries walked at most when looking (a scaffold may leave a huge tree; the disk bound is elsewhere).
MAX_ENTRIES = 200_000
HERE = PurePosixPath()  # the working folder itself


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p.lower() for p in PurePosixPath(path).parts)


def _match(parts: tuple[str, ...], config: str) -> bool:
    want = _parts(config)
    return any(parts[i : i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def reader(relative: PurePosixPath, paths: Mapping[str, Iterable[str]]) -> tuple[str, str] | None:
    """(the CLIs, one configuration path they read) when agent CLIs read ``relative`` (a path inside a
    working folder, at any depth: CLIs read nested folders and parents too) as their configuration.
    Names are compared without case: a case-insensitive file system would serve them alike."""
    parts = tuple(p.lower() for p in relative.parts)
    found = [(cli, c) for cli, declared in sorted(paths.items()) for c in declared if _match(parts, c)]
    if not found:
        return None
    return ", ".join(dict.fromkeys(cli for cli, _ in found)), found[0][1]


def refusal(relative: PurePosixPath, found: tuple[str, str], what: str) -> str:
    cli, config = found
    return (
        f"{what}: {relative.as_posix()}: agent configuration, read by {cli} ({config}: settings, hooks, "
        "plugins, instructions or MCP servers) in both arms: refused; make it part of the plugin under "
        "test (loaded in the with-skill arm only) or remove it"
    )


def shipped_configuration(
    root: Path, what: str, paths: Mapping[str, Iterable[str]], at: PurePosixPath = HERE
) -> str | None:
    """One line naming the first entry under ``root`` (links not followed) that an agent CLI reads as
    its own configuration; None when there is none. ``at``: where ``root`` lands in the working
    folder (a skill-creator ``files`` entry keeps its relative path), itself checked too."""
    if at.parts and (found := reader(at, paths)) is not None:
        return refusal(at, found, what)
    if not root.is_dir() or root.is_symlink():
        return None
    seen = 0
    for folder, dirs, files in os.walk(root):
        base = at / PurePosixPath(Path(folder).relative_to(root).as_posix())
        dirs.sort()
        for name in sorted([*dirs, *files]):
            seen += 1
            if seen > MAX_ENTRIES:  # not looked through is not known clean
                return f"{what}: more than {MAX_ENTRIES:,} entries: refused"
            relative = base / name
            found = reader(relative, paths)
            if found is not None:
                return refusal(relative, found, what)
    return None
