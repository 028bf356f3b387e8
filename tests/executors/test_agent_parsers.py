"""The three CLIs' streams parsed into one event model, on real captured outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.agent import read_events
from executors.claude_code import parse_claude
from executors.codex_cli import parse_codex
from executors.gemini_cli import parse_gemini

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "agent-cli"


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
        s.meta["num_turns"] == 2 and s.meta["total_cost_usd"] > 0 and s.meta["usage"]["input_tokens"] == 58604
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
        and a.meta["api_error_status"] == 400
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
        and s.meta["usage"]["input_tokens"] == 29223
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
        and s.meta["usage"]["input_tokens"] == 23828
    )
    k = parse_gemini(events("gemskill.jsonl"), "demo-skill")
    assert k.ok and k.skill_invoked
    e = parse_gemini(events("gemerr.jsonl"))
    assert not e.ok and e.status == "api_error"
    assert [x.is_error for x in e.events if x.kind == "tool_result"] == [True]
