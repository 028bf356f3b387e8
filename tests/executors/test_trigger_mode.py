"""Trigger mode's executor option (install, never force) and the scripted Claude skill model, without
running a CLI: the commands each executor builds, and what the script reads from a request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.codex_cli import CodexExecutor
from executors.copilot_cli import CopilotCliExecutor
from executors.gemini_cli import GeminiCliExecutor
from executors.opencode import OpenCodeExecutor
from executors.schema import AgentRequest, InstalledSkill
from tests.executors.test_sandbox import ENDPOINT
from tests.fakes.provider import SkillScript, coin, session_id, skill_listing, user_query

SKILL = "---\nname: {name}\ndescription: {description}\n---\n# {name}\nBody.\n"


def make_skill(root: Path, name: str, description: str = "Does things. Use for things.") -> Path:
    folder = root / "src" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL.format(name=name, description=description))
    return folder


def request(tmp_path: Path, cli: str, *, skill: bool = True, **extra: Any) -> AgentRequest:
    return AgentRequest(
        cli=cli,
        model="m",
        prompt="Summarise data.csv",
        sandbox=str(tmp_path / cli / "sb"),
        home=str(tmp_path / cli / "home"),
        skill_name="csv-insights" if skill else None,
        skill_dir=str(make_skill(tmp_path / cli, "csv-insights")) if skill else None,
        raw_stream=str(tmp_path / cli / "out" / "raw.jsonl"),
        **extra,
    )


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_claude_default_still_forces_and_trigger_mode_does_not(tmp_path: Path) -> None:
    ex = ClaudeCodeExecutor(ExecutorSettings(base_url="http://127.0.0.1:9"))
    forced, _ = ex.prepare(request(tmp_path / "a", "claude"), ENDPOINT)
    assert "MUST first call the Skill tool" in (flag(forced, "--append-system-prompt") or "")
    assert flag(forced, "--allowedTools") == "Skill(csv-insights),Read,Edit,Bash,Grep,Glob,Write"
    baseline, _ = ex.prepare(request(tmp_path / "b", "claude", skill=False), ENDPOINT)
    assert flag(baseline, "--disallowedTools") == "Skill"
    free, _ = ex.prepare(request(tmp_path / "c", "claude", force_skill=False), ENDPOINT)
    assert "--append-system-prompt" not in free and "--disallowedTools" not in free
    assert flag(free, "--allowedTools") == "Skill,Read,Edit,Bash,Grep,Glob,Write"
    assert (tmp_path / "c" / "claude" / "sb" / ".claude" / "skills" / "csv-insights" / "SKILL.md").is_file()
    # No skill under test (a false-fire control): the Skill tool stays, built-in skills stay listed.
    control, _ = ex.prepare(request(tmp_path / "d", "claude", skill=False, force_skill=False), ENDPOINT)
    assert "--disallowedTools" not in control
    assert flag(control, "--allowedTools") == "Skill,Read,Edit,Bash,Grep,Glob,Write"
    # The system prompt of sample mode is still appended, without any instruction to load a skill.
    system, _ = ex.prepare(request(tmp_path / "e", "claude", force_skill=False, system="Be brief."), ENDPOINT)
    assert flag(system, "--append-system-prompt") == "Be brief."


def test_several_skills_install_under_their_names(tmp_path: Path) -> None:
    extra = (
        InstalledSkill(name="pdf-forms", path=str(make_skill(tmp_path, "pdf-forms"))),
        InstalledSkill(name="sql-tuning", path=str(make_skill(tmp_path, "sql-tuning"))),
    )
    for cli, ex, where in (
        ("claude", ClaudeCodeExecutor(), ".claude/skills"),
        ("codex", CodexExecutor(), ".agents/skills"),
        ("gemini-cli", GeminiCliExecutor(), ".gemini/skills"),
        ("copilot", CopilotCliExecutor(), ".agents/skills"),
        ("opencode", OpenCodeExecutor(), ".opencode/skills"),
    ):
        req = request(tmp_path, cli, force_skill=False, skills=extra)
        ex.prepare(req, ENDPOINT)
        names = sorted(p.parent.name for p in (Path(req.sandbox) / where).glob("*/SKILL.md"))
        assert names == ["csv-insights", "pdf-forms", "sql-tuning"], cli


def test_codex_gemini_copilot_and_opencode_in_trigger_mode(tmp_path: Path) -> None:
    codex = CodexExecutor(ExecutorSettings(base_url="http://127.0.0.1:9/v1"))
    forced, _ = codex.prepare(request(tmp_path / "a", "codex"), ENDPOINT)
    assert forced[-1] == "$csv-insights Summarise data.csv"
    free, _ = codex.prepare(request(tmp_path / "b", "codex", force_skill=False), ENDPOINT)
    assert free[-1] == "Summarise data.csv"
    # Not forced, so not counted as invoked unless the session reads SKILL.md.
    events: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.completed", "usage": {}},
    ]
    assert not codex.parse(events, request(tmp_path / "c", "codex", force_skill=False)).skill_invoked
    assert codex.parse(events, request(tmp_path / "d", "codex")).skill_invoked
    gemini = GeminiCliExecutor()
    gemini.prepare(request(tmp_path / "e", "gemini-cli"), ENDPOINT)
    assert "activate_skill" in (tmp_path / "e" / "gemini-cli" / "sb" / "GEMINI.md").read_text()
    gemini.prepare(request(tmp_path / "f", "gemini-cli", force_skill=False), ENDPOINT)
    assert not (tmp_path / "f" / "gemini-cli" / "sb" / "GEMINI.md").exists()
    assert (
        tmp_path / "f" / "gemini-cli" / "sb" / ".gemini" / "skills" / "csv-insights" / "SKILL.md"
    ).is_file()
    copilot = CopilotCliExecutor()
    copilot.prepare(request(tmp_path / "g", "copilot", system="Be brief."), ENDPOINT)
    told = (tmp_path / "g" / "copilot" / "home" / ".copilot" / "copilot-instructions.md").read_text()
    assert 'skill tool with skill="csv-insights"' in told and told.endswith("Be brief.")
    copilot.prepare(request(tmp_path / "h", "copilot", force_skill=False), ENDPOINT)
    assert not (tmp_path / "h" / "copilot" / "home" / ".copilot" / "copilot-instructions.md").exists()
    opencode = OpenCodeExecutor()
    opencode.prepare(request(tmp_path / "i", "opencode"), ENDPOINT)
    rules = tmp_path / "i" / "opencode" / "home" / ".config" / "opencode" / "AGENTS.md"
    assert 'skill tool with name "csv-insights"' in rules.read_text()
    opencode.prepare(request(tmp_path / "j", "opencode", force_skill=False), ENDPOINT)
    assert not (tmp_path / "j" / "opencode" / "home" / ".config" / "opencode" / "AGENTS.md").exists()


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b"])
def test_installed_skill_names_are_plain_folders(name: str) -> None:
    with pytest.raises(ValidationError):
        InstalledSkill(name=name, path="/x")


LISTING = (
    "Available agent types ...\n\nThe following skills are available for use with the Skill tool:\n\n"
    "- csv-insights: Summarises CSV files. Use when: a CSV is named.\n"
    "- deep-research: Deep research harness - fan-out web searches.\n"
    "  continued on a second line\n"
    "- init: Initialize a new CLAUDE.md file"
)


def body(query: str = "Summarise data.csv", sid: str = "s-1", results: int = 0) -> dict[str, Any]:
    user = [
        {"type": "text", "text": "<system-reminder>\nToday is a day.\n</system-reminder>"},
        {"type": "text", "text": query},
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": user},
        {"role": "system", "content": LISTING},
    ]
    for i in range(results):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "X"}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}"}]})
    return {
        "system": [{"type": "text", "text": " - Primary working directory: /tmp/sb\n"}],
        "messages": messages,
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": sid})},
    }


def test_what_the_script_reads_from_a_request() -> None:
    b = body()
    assert skill_listing(b) == {
        "csv-insights": "Summarises CSV files. Use when: a CSV is named.",
        "deep-research": "Deep research harness - fan-out web searches. continued on a second line",
        "init": "Initialize a new CLAUDE.md file",
    }
    assert session_id(b) == "s-1" and session_id(b, {"x-claude-code-session-id": "h-2"}) == "h-2"
    assert user_query(b) == "Summarise data.csv"
    assert skill_listing({"messages": [{"role": "user", "content": "hi"}]}) == {}
    assert 0 <= coin(1, "a") < 1 and coin(1, "a") == coin(1, "a") != coin(2, "a")


def test_script_steps_and_modes() -> None:
    script = SkillScript("csv-insights", before=("Read", "Bash"))
    steps = [script(body(results=i), {}) for i in range(4)]
    assert [s[0].get("name") for s in steps[:3]] == ["Read", "Bash", "Skill"]
    assert steps[0][0]["input"] == {"file_path": "/tmp/sb/README.md"}
    assert steps[2][0]["input"] == {"skill": "csv-insights"} and steps[3][0]["type"] == "text"
    prose = SkillScript("csv-insights", mode="prose")
    (answer,) = prose(body(), {})
    assert answer["type"] == "text" and "csv-insights" in answer["text"]
    absent = SkillScript("pdf-forms")  # not listed: a model cannot call what it was not shown
    assert absent(body(), {})[0]["type"] == "text" and absent.decisions == {"s-1": False}
    boosted = SkillScript("csv-insights", p=0.0, boost=("a CSV is named", 1.0))
    assert boosted(body(), {})[0]["name"] == "Skill"
    assert SkillScript("csv-insights", p=0.0, boost=("not there", 1.0))(body(), {})[0]["type"] == "text"


def test_script_coin_rates_and_order_key() -> None:
    script = SkillScript("csv-insights", p=0.3, seed=4)
    for i in range(2000):
        script(body(sid=f"s{i}"), {})
    assert abs(sum(script.decisions.values()) / 2000 - 0.3) < 0.04
    first, second = (SkillScript("csv-insights", p=0.5, key="order", seed=9) for _ in range(2))
    for i in range(20):
        first(body(sid=f"a{i}"), {})
        second(body(sid=f"b{i}"), {})  # other session ids, the same number of firings
    assert list(first.decisions.values()) == list(second.decisions.values())
