"""The agent CLIs' streams parsed into one event model, on real captured outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.agent import read_events
from executors.claude_code import parse_claude
from executors.codex_cli import parse_codex
from executors.copilot_cli import parse_copilot
from executors.gemini_cli import parse_gemini
from executors.opencode import parse_opencode
from executors.schema import AgentSession

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "agent-cli"
COPILOT = Path(__file__).resolve().parents[1] / "fixtures" / "agent-cli" / "copilot-1.0.102"
OPENCODE = Path(__file__).resolve().parents[1] / "fixtures" / "agent-cli" / "opencode-1.18.33"


def events(name: str) -> list[dict]:
    path = FIXTURES / name
    if not path.exists():
        pytest.fail(f"missing shared fixture {path}")
    return read_events(path)


def test_claude_stream_write_then_answer() -> None:
    s = parse_claude(events("claude-stream.jsonl"))
    assert s.ok and s.status == "success" and s.final_text == "Created hello.py, which prints hi."
    uses = [e for e in s.events if e.kind == "tool_use"]
    assert [u.tool for u in uses] == ["Write"] and (uses[0].input or {})["file_path"].endswith("hello.py")
    results = [e for e in s.events if e.kind == "tool_result"]
    assert results[0].tool == "Write" and not results[0].is_error
    assert (
        s.meta.num_turns == 2
        and (s.meta.total_cost_usd or 0) > 0
        and (s.meta.usage or {})["input_tokens"] == 58604
    )
    assert s.skills_listed is not None and not s.skill_invoked


def test_claude_skill_call_is_detected() -> None:
    s = parse_claude(events("claude-skill.jsonl"), "demo-skill")
    assert s.ok and s.skill_invoked and "demo-skill" in (s.skills_listed or ())
    assert parse_claude(events("claude-skill.jsonl"), "other-skill").skill_invoked is False


def test_claude_max_turns_and_api_error() -> None:
    m = parse_claude(events("claude-maxturns.jsonl"))
    assert not m.ok and m.status == "max_turns"
    a = parse_claude(events("claude-apierr.jsonl"))
    assert (
        not a.ok
        and a.status == "api_error"
        and a.meta.api_error_status == 400
        and "too long" in (a.error or "")
    )


def test_claude_killed_process_has_no_result() -> None:
    lines = events("claude-stream.jsonl")[:-1]
    s = parse_claude(lines)
    assert not s.ok and s.status == "crashed"


def test_codex_stream() -> None:
    s = parse_codex(events("codex.jsonl"))
    assert (
        s.ok
        and s.final_text == "Created hello.py, which prints hi."
        and (s.meta.usage or {})["input_tokens"] == 29223
    )
    assert [e.tool for e in s.events if e.kind == "tool_use"] == ["file_change", "shell"]
    err = parse_codex(events("codexerr.jsonl"))
    assert not err.ok and err.status == "api_error" and "invalid request" in (err.error or "")


def test_codex_skill_and_failed_command() -> None:
    s = parse_codex(events("codexskill.jsonl"), "demo-agents-skill")
    assert s.skill_invoked
    failing = [e for e in s.events if e.kind == "tool_result" and e.is_error]
    assert failing and failing[0].exit_code == 3


def test_gemini_stream_skill_and_errors() -> None:
    s = parse_gemini(events("gemini-stream.jsonl"))
    assert (
        s.ok
        and s.final_text == "Created hello.py, which prints hi."
        and (s.meta.usage or {})["input_tokens"] == 23828
    )
    k = parse_gemini(events("gemskill.jsonl"), "demo-skill")
    assert k.ok and k.skill_invoked
    e = parse_gemini(events("gemerr.jsonl"))
    assert not e.ok and e.status == "api_error"
    assert [x.is_error for x in e.events if x.kind == "tool_result"] == [True]


def copilot(scenario: str, skill: str | None = None) -> AgentSession:
    """A captured Copilot CLI 1.0.102 session: its stdout stream and its own event log."""
    return parse_copilot(
        read_events(COPILOT / f"{scenario}.stdout.jsonl"),
        skill,
        read_events(COPILOT / f"{scenario}.events.jsonl"),
    )


def test_copilot_skill_call_then_work() -> None:
    s = copilot("skill", "proj-github-skill")
    assert s.ok and s.status == "success" and s.final_text == "Wrote PINEAPPLE to skill-proof.txt."
    assert s.skill_invoked and s.meta.skills_invoked == ["proj-github-skill"]
    assert [e.tool for e in s.events if e.kind == "tool_use"] == ["skill", "create", "bash"]
    results = [e for e in s.events if e.kind == "tool_result"]
    assert [r.tool for r in results] == ["skill", "create", "bash"] and not any(r.is_error for r in results)
    assert "PINEAPPLE" in results[2].text
    assert s.skills_listed is not None and {"proj-github-skill", "github-pr-media"} <= set(s.skills_listed)
    assert s.meta.cli_version == "1.0.102" and (s.meta.usage or {})["input_tokens"] > 0
    assert copilot("skill", "another-skill").skill_invoked is False


def test_copilot_failures() -> None:
    plain = copilot("noskill")
    assert plain.ok and not plain.skill_invoked and plain.meta.skills_invoked == []
    for scenario, status in (("err500", 500), ("err429", 429), ("err400", 400)):
        failed = copilot(scenario)
        assert not failed.ok and failed.status == "api_error", scenario
        assert failed.meta.api_error_status == status and failed.error
    # a tool the CLI refused, or a skill it could not find, fails the call, not the session
    for scenario in ("perm-none", "badskill"):
        s = copilot(scenario)
        assert s.ok and [e.is_error for e in s.events if e.kind == "tool_result"] == [True], scenario
    died = parse_copilot(read_events(COPILOT / "skill.stdout.jsonl")[:5])
    assert not died.ok and died.status == "crashed"


def opencode(scenario: str, skill: str | None = None) -> AgentSession:
    """A captured OpenCode 1.18.33 session (``run --format json``)."""
    return parse_opencode(read_events(OPENCODE / f"{scenario}.jsonl"), skill)


def test_opencode_skill_call_then_work() -> None:
    s = opencode("skill", "greeting-style")
    assert s.ok and s.final_text == "Done: wrote hello.txt using the greeting-style skill."
    assert s.skill_invoked and s.meta.skills_invoked == ["greeting-style"] and s.meta.num_turns == 3
    assert [e.tool for e in s.events if e.kind == "tool_use"] == ["skill", "bash"]
    loaded = next(e for e in s.events if e.kind == "tool_result" and e.tool == "skill")
    assert "<skill_content" in loaded.text and not loaded.is_error
    assert s.meta.usage == {
        "input_tokens": 3000,
        "output_tokens": 60,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert opencode("skill", "another-skill").skill_invoked is False
    assert not opencode("noskill").skill_invoked


def test_opencode_failures() -> None:
    for scenario, status in (("error500", 500), ("error429", 429), ("error400", 400)):
        failed = opencode(scenario)
        assert not failed.ok and failed.status == "api_error" and failed.meta.api_error_status == status
    assert opencode("noserver").status == "api_error"  # nothing listening: no status, still the API's
    # a rejected permission stops the loop at that tool call: no final answer, not a success
    asked = opencode("permask")
    assert not asked.ok and asked.status == "error" and "without a final answer" in (asked.error or "")
    assert [e.is_error for e in asked.events if e.kind == "tool_result"][-1] is True
    # an unknown tool is the CLI's "invalid" call; the session recovers
    bad = opencode("badtool")
    assert bad.ok and [e.tool for e in bad.events if e.kind == "tool_use"] == ["invalid"]
    # killed mid-loop (the step limit only asks the model to stop): the last step called a tool
    loop = opencode("stepsloop")
    assert not loop.ok and (loop.meta.num_turns or 0) > 10
