"""Claude Code's stream parsed the same way for both releases skillab has run: 2.1.197 (captured before,
copied from the shared fixtures) and 2.1.330 (``python -m tests.fakes.capture_claude``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.agent import read_events
from executors.claude_code import parse_claude
from executors.versions import CLAUDE_BUILTIN_SKILLS
from flows.report.build import agent_cli_meta
from graders.triggers import TriggerStatus, detect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent-cli"
VERSIONS = ("2.1.197", "2.1.330")
#: The skill each version's skill fixture installed.
SKILL = {"2.1.197": "demo-skill", "2.1.330": "calc-skill"}


def stream(version: str, name: str) -> list[dict]:
    return read_events(FIXTURES / version / f"claude-{name}.jsonl")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_tool_call_then_an_answer(version: str) -> None:
    s = parse_claude(stream(version, "stream"))
    assert s.ok and s.status == "success" and s.final_text
    uses = [e for e in s.events if e.kind == "tool_use"]
    results = [e for e in s.events if e.kind == "tool_result"]
    assert len(uses) == 1 and results[0].tool == uses[0].tool and not results[0].is_error
    assert (
        s.meta.cli_version == version and s.meta.num_turns == 2 and (s.meta.usage or {})["input_tokens"] > 0
    )
    assert not s.skill_invoked


@pytest.mark.parametrize("version", VERSIONS)
def test_the_skill_call_among_built_in_skills(version: str) -> None:
    name = SKILL[version]
    s = parse_claude(stream(version, "skill"), name)
    listed = set(s.skills_listed or ())
    assert s.ok and s.skill_invoked and name in listed
    assert listed - {name} <= CLAUDE_BUILTIN_SKILLS  # everything else listed is the CLI's own
    assert parse_claude(stream(version, "skill"), "other-skill").skill_invoked is False
    triggers = detect(s, [name])
    assert triggers.status == TriggerStatus.OK and triggers.fired == (name,)


@pytest.mark.parametrize("version", VERSIONS)
def test_turn_limit_and_api_error(version: str) -> None:
    m = parse_claude(stream(version, "maxturns"))
    assert not m.ok and m.status == "max_turns"
    a = parse_claude(stream(version, "apierr"))
    assert not a.ok and a.status == "api_error" and a.meta.api_error_status == 400
    assert "too long" in (a.error or "").lower()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_version_recorded_for_the_report(version: str) -> None:
    s = parse_claude(stream(version, "stream"))
    assert agent_cli_meta("claude", [None, s.meta.cli_version], "9.9.9") == {
        "agent_cli_version": f"claude {version}"
    }
    assert agent_cli_meta("codex", [None], "0.169.0") == {"agent_cli_version": "codex 0.169.0"}
    assert agent_cli_meta("codex", [], None) == {"agent_cli_version": None}


def test_2_1_330_lists_sixteen_built_in_skills_and_resolves_sonnet_anew() -> None:
    raw = stream("2.1.330", "stream")
    init = next(e for e in raw if e.get("subtype") == "init")
    assert set(init["skills"]) == CLAUDE_BUILTIN_SKILLS and len(init["skills"]) == 16
    assert init["model"] == "claude-sonnet-5-5"  # what --model sonnet became: skillab always passes --model
