"""Agentic sessions after they ran: the contamination check and the seed's per-session output files
(response.json, transcript.json, meta.json)."""

from __future__ import annotations

import json
import re
import shutil

from executors.agent import AgentExecutor
from executors.conversation import CALLS, MOCK_CALLS, RECORDED, STAND_INS
from executors.parsing import JsonObject
from executors.plugin import Plugin
from executors.schema import AgentSession
from flows.inputs.recordings import RECORD_LOG
from flows.modes.agentic.plan import Session
from tasks.schema import Arm
from tasks.store.files import atomic_write_json


def baseline_leak(init: JsonObject, skill: str, description: str, builtins: frozenset[str]) -> str | None:
    """What of the skill the baseline's init event shows: its name among the listed skills, slash
    commands or agents, or its name or description anywhere else in the event (the working
    directory is part of the model's system prompt)."""
    # A skill named like one of the CLI's own is listed in every baseline under that name (the user's
    # project skill replaces the built-in one in the with-arm): the name tells nothing there.
    for key in ("skills", "slash_commands", "agents"):
        names = init.get(key) or []
        if skill in builtins:
            break
        if isinstance(names, list) and any(str(n).split(":")[-1] == skill for n in names):
            return f"the baseline session's init event lists {skill!r} in {key}"
    # The working directory is ours (a random neutral path, see isolation_root): not searched.
    rest = {k: v for k, v in init.items() if k not in {"skills", "slash_commands", "agents", "cwd"}}
    text = json.dumps(rest)
    if re.search(rf"[/\"]{re.escape(skill)}[/\"]", text):
        return "the baseline session's init event carries the skill's name"
    if len(description) >= 20 and json.dumps(description)[1:-1] in text:
        return "the baseline session's init event carries the skill's description"
    return None


def _names(init: JsonObject, key: str) -> list[str]:
    values = init.get(key) or []
    if not isinstance(values, list):
        return []
    return [str(v.get("name")) if isinstance(v, dict) else str(v) for v in values]


def plugin_leak(init: JsonObject, plugin: Plugin) -> str | None:
    """What of a plugin the baseline's init event shows: the plugin itself, any of its parts (the CLI
    lists them as ``<plugin>:<part>``; a bare name may be one of the CLI's built-in skills, which
    both arms list), or one of its MCP servers."""
    if plugin.name in _names(init, "plugins"):
        return f"the baseline session's init event lists plugin {plugin.name!r}"
    parts = set(plugin.parts)
    for key in ("skills", "slash_commands", "agents"):
        hit = next((n for n in _names(init, key) if n in parts), None)
        if hit:
            return f"the baseline session's init event lists {hit!r} of plugin {plugin.name!r} in {key}"
    server = next((n for n in _names(init, "mcp_servers") if n.startswith(f"plugin:{plugin.name}:")), None)
    if server:
        return f"the baseline session's init event lists the plugin's MCP server {server!r}"
    return None


def plugin_contamination(
    session: AgentSession, mode: Arm, plugin: Plugin, init: JsonObject | None, cli: type[AgentExecutor]
) -> str | None:
    """A whole plugin: the with-arm's init event must list it; the baseline must list nothing of it."""
    if mode == Arm.BASELINE:
        leak = plugin_leak(init, plugin) if init else None
        if leak:
            return leak
        invoked = [name for e in session.events if e.kind == "tool_use" for name in cli.invoked_skills(e)]
        hit = next((name for name in invoked if name in set(plugin.parts)), None)
        return f"the baseline session invoked {hit!r} of plugin {plugin.name!r}" if hit else None
    loaded = session.meta.plugins
    if init is not None and loaded is not None and plugin.name not in loaded:
        return f"the with-skill session's init event does not list plugin {plugin.name!r} (it did not load)"
    return None


def contamination(
    session: AgentSession,
    mode: Arm,
    skill: str,
    init: JsonObject | None = None,
    description: str = "",
    plugin: Plugin | None = None,
    *,
    cli: type[AgentExecutor],
) -> str | None:
    """The init event must list the skill in the with-skill arm; the baseline must see nothing of it.
    ``cli``: the agent CLI's executor class (its skill-loading calls, its built-in skills)."""
    if plugin is not None:
        return plugin_contamination(session, mode, plugin, init, cli)
    if mode == Arm.BASELINE and init:
        leak = baseline_leak(init, skill, description, cli.builtin_skills)
        if leak:
            return leak
    listed = session.skills_listed
    if mode == Arm.WITH_SKILL and listed is not None and skill not in listed:
        return f"the with-skill session's init event does not list {skill!r}"
    if mode == Arm.BASELINE and listed is not None and skill in listed and skill not in cli.builtin_skills:
        return f"the baseline session's init event lists {skill!r}"
    if mode == Arm.BASELINE and session.skill_invoked:
        return f"the baseline session invoked {skill!r}"
    return None


def init_event(raw: list[JsonObject]) -> JsonObject | None:
    return next((e for e in raw if e.get("type") == "system" and e.get("subtype") == "init"), None)


def write_outputs(
    s: Session, session: AgentSession, skill: str, contaminated: str | None, raw: list[JsonObject]
) -> None:
    results = [e for e in raw if e.get("type") == "result"]
    atomic_write_json(s.outputs / "response.json", results[-1] if results else {"error": session.error})
    atomic_write_json(s.outputs / "transcript.json", raw)
    if (calls := s.home / STAND_INS / CALLS).is_file():  # what the MCP stand-ins were asked, to grade
        shutil.copyfile(calls, s.outputs / MOCK_CALLS)
    if (kept := s.home / STAND_INS / RECORDED).is_file():  # --mocks record: what real servers answered
        shutil.copyfile(kept, s.outputs / RECORD_LOG)
    if session.conversation:  # who said what: the CLI's stream has the agent's side only
        atomic_write_json(
            s.outputs / "conversation.json", [u.model_dump(mode="json") for u in session.conversation]
        )
    meta = {
        **session.meta.model_dump(mode="json", exclude_unset=True),
        "skill_name": skill,
        "mode": s.mode,
        "status": session.status,
        "ok": session.ok,
        "error": session.error,
        "exit_code": session.exit_code,
        "wall_ms": round(session.duration_ms),
        "skills_listed": list(session.skills_listed) if session.skills_listed is not None else None,
        "skill_invoked": session.skill_invoked,
        "contaminated": contaminated,
    }
    atomic_write_json(s.outputs / "meta.json", meta)
