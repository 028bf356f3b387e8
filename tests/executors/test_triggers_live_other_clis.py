"""Trigger mode with the real ``codex``, ``gemini``, ``copilot`` and ``opencode`` binaries against a
scripted model on 127.0.0.1.

The skill is installed where each CLI discovers skills and not forced. The scripted model decides
from what the CLI actually sent: it uses the skill only when the request lists the skill's
description, so a session fires only if the CLI really listed the installed skill. Codex has no
skill tool: a trigger is reading the skill's SKILL.md through a command. Gemini calls
``activate_skill``, Copilot and OpenCode ``skill``. Prose naming the skill is never a trigger."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from executors.base import ExecutorSettings
from executors.schema import AgentRequest, AgentSession, InstalledSkill, ListingState
from executors.support import CODEX_SUPPORT
from graders.triggers import SessionTriggers, TriggerStatus, detect
from tests.agents import agent_request, need
from tests.fakes.provider import FakeProvider

NAME = "greeting-files"
DESCRIPTION = "Writes greeting files. Use when asked for a greeting."
SKILL = f"---\nname: {NAME}\ndescription: {DESCRIPTION}\n---\n# Greetings\nWrite greeting.txt.\n"
FIRE = "Please write me a greeting file"
PROSE = "Which skill would write a greeting file?"


def request(root: Path, tag: str, cli: str, model: str, prompt: str) -> AgentRequest:
    source = root / "src"
    source.mkdir(exist_ok=True)
    (source / "SKILL.md").write_text(SKILL)
    skills = (InstalledSkill(name=NAME, path=str(source)),)
    return agent_request(root / tag, cli, model, prompt, skills=skills, force_skill=False)


def codex_model(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Reads the skill's SKILL.md (found through the listing Codex sent) when asked for a greeting
    file and the skill is listed; names it in prose when asked which skill would do it."""
    text = json.dumps(body)
    outputs = [
        i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    listed = DESCRIPTION in text
    if not outputs and listed and FIRE in text:
        command = f"cat .agents/skills/{NAME}/SKILL.md"
        return [
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "call_1",
                "arguments": json.dumps({"cmd": command}),
            }
        ]
    answer = f"The {NAME} skill would." if PROSE in text else "Done."
    return [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}]


def gemini_model(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Calls activate_skill when asked for a greeting file and the skill is listed; prose otherwise."""
    text = json.dumps(body)
    done = any("functionResponse" in p for c in body["contents"] for p in c.get("parts", []))
    if not done and DESCRIPTION in text and FIRE in text:
        return [{"functionCall": {"name": "activate_skill", "args": {"name": NAME}}}]
    return [{"text": f"The {NAME} skill would." if PROSE in text else "Done."}]


def run_pair(
    executor: type[Any],
    script: tuple[str, Any],
    root: Path,
    cli: str,
    model: str,
    installs: str,
    path: str = "",
) -> tuple[AgentSession, AgentSession, str]:
    """Against a server scripted by ``script`` (its attribute, the model): a session asked for a
    greeting file, one asked which skill would write it, and all they sent; the skill installed
    where the CLI discovers it (``installs``/skills in the sandbox)."""
    need(executor.binary)
    with FakeProvider() as server:
        setattr(server, *script)
        agent = executor(ExecutorSettings(base_url=server.url + path))
        fire = asyncio.run(agent.session(request(root, "fire", cli, model, FIRE)))
        prose = asyncio.run(agent.session(request(root, "prose", cli, model, PROSE)))
        sent = json.dumps([c.body for c in server.calls])
    assert (root / "fire" / "sb" / installs / "skills" / NAME / "SKILL.md").is_file()
    return fire, prose, sent


def fired_once(fire: AgentSession, prose: AgentSession) -> SessionTriggers:
    """The asked session triggered the skill and nothing else; the one that named it did not."""
    found, none = detect(fire, [NAME]), detect(prose, [NAME])
    assert fire.ok and found.status == TriggerStatus.OK and found.fired == (NAME,), fire.events
    assert prose.ok and NAME in prose.final_text and none.fired == ()
    return found


def test_codex_reading_the_skill_is_a_trigger_naming_it_is_not(tmp_path: Path) -> None:
    from executors.codex_cli import CodexExecutor

    fire, prose, sent = run_pair(
        CodexExecutor, ("responses_agent", codex_model), tmp_path, "codex", "gpt-5.5", ".agents", "/v1"
    )
    assert DESCRIPTION in sent and f"${NAME}" not in sent  # listed, never forced
    found = fired_once(fire, prose)
    # what the model saw, read from the request by the forwarder (keyed by Codex's session-id header)
    assert fire.listing is not None and fire.listing.state(NAME) == ListingState.FULL
    # its budget as the CLI's rule has it: 2% of the model's window (executors/support.py)
    assert found.listing == fire.listing and fire.listing.budget == CODEX_SUPPORT.listing.budget(None)


def test_gemini_activate_skill_is_a_trigger_naming_it_is_not(tmp_path: Path) -> None:
    from executors.gemini_cli import GeminiCliExecutor

    fire, prose, sent = run_pair(
        GeminiCliExecutor, ("gemini_agent", gemini_model), tmp_path, "gemini-cli", "gemini-2.5-pro", ".gemini"
    )
    assert DESCRIPTION in sent and "MUST first call the activate_skill" not in sent
    fired_once(fire, prose)
    # what the model saw: no session header, so known by the working folder its request names
    assert fire.listing is not None and fire.listing.state(NAME) == ListingState.FULL
    assert prose.listing is not None and fire.listing.budget is None  # Gemini CLI lists every description


def copilot_model(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Calls the skill tool when asked for a greeting file and the skill is listed; prose otherwise."""
    text = json.dumps(body)
    done = any(
        isinstance(b, dict) and b.get("type") == "tool_result"
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    )
    if not done and DESCRIPTION in text and FIRE in text:
        return [{"type": "tool_use", "name": "skill", "input": {"skill": NAME}}]
    return [{"type": "text", "text": f"The {NAME} skill would." if PROSE in text else "Done."}]


def test_copilot_skill_tool_is_a_trigger_naming_it_is_not(tmp_path: Path) -> None:
    from executors.copilot_cli import CopilotCliExecutor

    fire, prose, sent = run_pair(
        CopilotCliExecutor, ("agent", copilot_model), tmp_path, "copilot", "claude-sonnet-4-5", ".agents"
    )
    assert DESCRIPTION in sent and "MUST first call the skill tool" not in sent
    assert not (tmp_path / "fire" / "home" / ".copilot" / "copilot-instructions.md").exists()
    found = fired_once(fire, prose)
    assert detect(prose, [NAME]).status == TriggerStatus.OK
    assert found.listed is not None and NAME in found.listed
    assert fire.listing is not None and fire.listing.state(NAME) == ListingState.FULL  # its XML, by folder
    assert fire.listing.budget == 15_000


def opencode_model(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Calls the skill tool when asked for a greeting file and the skill is listed; prose otherwise."""
    text = json.dumps(body)
    done = any(m["role"] == "tool" for m in body["messages"])
    if not done and DESCRIPTION in text and FIRE in text:
        return [{"tool": "skill", "arguments": {"name": NAME}}]
    return [{"text": f"The {NAME} skill would." if PROSE in text else "Done."}]


def test_opencode_skill_tool_is_a_trigger_naming_it_is_not(tmp_path: Path) -> None:
    from executors.opencode import OpenCodeExecutor

    fire, prose, sent = run_pair(
        OpenCodeExecutor, ("chat_agent", opencode_model), tmp_path, "opencode", "gpt-4.1", ".opencode", "/v1"
    )
    assert DESCRIPTION in sent and "MUST first call the skill tool" not in sent
    fired_once(fire, prose)
    assert detect(prose, [NAME]).status == TriggerStatus.OK
    assert fire.listing is not None and fire.listing.state(NAME) == ListingState.FULL  # its x-session-id
