"""Putting the artifact where an agent CLI finds it: the skill (and its neighbours) in the session's
skills folder, a plugin's copy in its HOME (loaded by the CLI's own mechanism) or, for a CLI without
a plugin loader, the plugin's skills installed as skills; and the CLI's instructions file."""

from __future__ import annotations

from pathlib import Path

from executors.contents import copy_tree
from executors.plugin import prepared_copy, read_plugin
from executors.schema import AgentRequest


def install_skill(request: AgentRequest, *where: str) -> bool:
    """Copy the skill (and any further ``request.skills``) into the sandbox where the CLI looks for
    skills, each under the name it is listed by; False when the skill under test is not installed."""
    for extra in request.skills:
        copy_tree(extra.path, Path(request.sandbox).joinpath(*where, extra.name), f"skill {extra.name}")
    if not (request.skill_name and request.skill_dir):
        return False
    copy_tree(
        request.skill_dir,
        Path(request.sandbox).joinpath(*where, request.skill_name),
        f"skill {request.skill_name}",
    )
    return True


def install_and_instruct(
    request: AgentRequest, where: tuple[str, str], force: str, instructions: Path
) -> None:
    """The skills installed where the CLI discovers them (a plugin's as single skills), and the CLI's
    instructions file written: the order to load the skill under test (``force``, with ``{name}``;
    never in trigger mode) and sample mode's system text; no file when there is neither."""
    parts = []
    install_plugin_skills(request, *where)
    if install_skill(request, *where) and request.force_skill:
        parts.append(force.format(name=request.skill_name))
    if request.system:
        parts.append(request.system)
    if parts:
        instructions.parent.mkdir(parents=True, exist_ok=True)
        instructions.write_text("\n\n".join(parts), encoding="utf-8")


def plugin_copy(request: AgentRequest) -> Path | None:
    """The session's copy of the plugin under test (in its fresh HOME, outside the working
    directory), MCP servers stripped unless the request opts in; None without a plugin."""
    if not request.plugin_dir:
        return None
    name = read_plugin(Path(request.plugin_dir)).name
    return prepared_copy(
        request.plugin_dir, Path(request.home) / "skillab-plugins" / name, request.plugin_mcp
    )


def install_plugin_skills(request: AgentRequest, *where: str) -> tuple[str, ...]:
    """Codex and Gemini have no plugin loader: the plugin's skills are installed as skills, under
    their own names (its other parts are refused before the run, see executors.plugin)."""
    if not request.plugin_dir:
        return ()
    dirs = read_plugin(Path(request.plugin_dir)).skill_dirs()
    for name, folder in dirs.items():
        copy_tree(folder, Path(request.sandbox).joinpath(*where, name), f"plugin skill {name}")
    return tuple(dirs)
