"""Skill-firing detection over whole sessions: the real captured streams of the three CLIs, and
synthetic sessions for each way a trigger benchmark can silently measure nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from executors.agent import read_events
from executors.claude_code import parse_claude
from executors.codex_cli import parse_codex
from executors.gemini_cli import parse_gemini
from executors.schema import AgentEvent, AgentSession
from graders.triggers import (
    TriggerStatus,
    detect,
    firings,
    install_problem,
    matches,
    sandbox_problems,
    turns,
)

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "agent-cli"
LISTED = ("demo-skill", "deep-research", "debug")


def call(tool: str, tid: str, **data: Any) -> list[AgentEvent]:
    return [
        AgentEvent(kind="tool_use", tool=tool, tool_id=tid, input=data),
        AgentEvent(kind="tool_result", tool=tool, tool_id=tid, text="ok"),
    ]


def session(
    *events: AgentEvent,
    status: str = "success",
    listed: tuple[str, ...] | None = LISTED,
    final: str = "Done.",
) -> AgentSession:
    body = (AgentEvent(kind="init"), *events, AgentEvent(kind="text", text=final))
    return AgentSession(
        ok=status == "success",
        status=status,
        final_text=final,
        events=(*body, AgentEvent(kind="result", text=final, is_error=status != "success")),
        skills_listed=listed,
        error=None if status == "success" else "boom",
    )


def test_claude_fixture() -> None:
    s = parse_claude(read_events(FIXTURES / "claude-skill.jsonl"))
    found = detect(s, ["demo-skill"])
    assert found.status == TriggerStatus.OK and found.counted
    assert found.fired == ("demo-skill",) and found.first_turn("demo-skill") == 0
    assert found.firings[0].tool == "Skill" and found.firings[0].ok is True
    assert "demo-skill" in (found.listed or ())


def test_gemini_fixture() -> None:
    found = detect(parse_gemini(read_events(FIXTURES / "gemskill.jsonl")), ["demo-skill"])
    assert found.status == TriggerStatus.OK and found.fired == ("demo-skill",)
    assert found.firings[0].tool == "activate_skill" and found.listed is None  # Gemini shows no listing


def test_codex_fixture_reads_skill_md() -> None:
    found = detect(parse_codex(read_events(FIXTURES / "codexskill.jsonl")), ["demo-agents-skill"])
    assert found.status == TriggerStatus.OK and found.fired == ("demo-agents-skill",)
    assert found.first_turn("demo-agents-skill") == 0 and found.firings[0].tool == "shell"


def test_fixture_without_a_skill_call_and_errored_fixtures() -> None:
    plain = detect(parse_claude(read_events(FIXTURES / "claude-stream.jsonl")))
    assert plain.status == TriggerStatus.OK and plain.fired == ()
    for name, parse in (
        ("claude-apierr.jsonl", parse_claude),
        ("claude-maxturns.jsonl", parse_claude),
        ("codexerr.jsonl", parse_codex),
        ("gemerr.jsonl", parse_gemini),
    ):
        found = detect(parse(read_events(FIXTURES / name)))
        assert found.status == TriggerStatus.ERROR and not found.counted, name
        assert found.reason and found.session_status in found.reason


def test_skill_after_other_tool_calls_is_found_with_its_turn() -> None:
    # The model reads a file and runs a command first: a detector that stops at the first tool call
    # that is not Skill reports no firing here.
    s = session(
        AgentEvent(kind="text", text="Let me look around."),
        *call("Read", "t1", file_path="/x/README.md"),
        *call("Bash", "t2", command="ls"),
        *call("Skill", "t3", skill="demo-skill"),
    )
    found = detect(s, ["demo-skill"])
    assert found.fired == ("demo-skill",) and found.first_turn("demo-skill") == 2
    assert found.firings[0].event == 6


def test_prose_naming_the_skill_is_not_a_trigger() -> None:
    s = session(
        AgentEvent(kind="text", text='I should use the Skill tool with skill="demo-skill".'),
        *call("Read", "t1", file_path="/x/demo-skill/SKILL.md"),
        final="Use the demo-skill skill: Skill(demo-skill).",
    )
    assert detect(s, ["demo-skill"]).fired == ()


@pytest.mark.parametrize(
    ("data", "skill"),
    [
        ({"skill": "demo-skill", "args": "x"}, "demo-skill"),
        ({"command": "demo-skill"}, "demo-skill"),
        ({"name": "/demo-skill"}, "demo-skill"),
        ({"skill": "myplugin:demo-skill"}, "demo-skill"),
        ({"skill": "myplugin:tool"}, "myplugin:tool"),
        ({"skill": "tool"}, "myplugin:tool"),
    ],
)
def test_claude_skill_input_keys_and_plugin_forms(data: dict[str, Any], skill: str) -> None:
    found = detect(session(*call("Skill", "t", **data), listed=(skill, "other")), [skill])
    assert found.fired == (skill,)


def test_plugin_matching_rules() -> None:
    assert matches("p:x", "x") and matches("x", "p:x") and matches("/x", "x")
    assert not matches("p:x", "q:x") and not matches("x-y", "x") and not matches("", "x")
    # An exact listed name wins over a plugin-relaxed match.
    found = firings(call("Skill", "t", skill="p:x"), ["x", "p:x"])
    assert [f.skill for f in found] == ["p:x"]


def test_other_and_several_skills_fire_in_order() -> None:
    s = session(
        *call("Skill", "t1", skill="debug"),
        *call("Skill", "t2", skill="demo-skill"),
        *call("Skill", "t3", skill="debug"),
    )
    found = detect(s, ["demo-skill"])
    assert found.fired == ("debug", "demo-skill") and found.first_turns() == {"debug": 0, "demo-skill": 1}
    assert found.fired_skill("demo-skill") and not found.fired_skill("deep-research")


@pytest.mark.parametrize(
    ("command", "fired"),
    [
        ("/bin/bash -lc 'cat .agents/skills/demo/SKILL.md'", ("demo",)),
        ("sed -n 1,80p /home/u/.codex/skills/demo/SKILL.md", ("demo",)),
        ("cat ./.agents/skills/demo/SKILL.md .agents/skills/other/SKILL.md", ("demo", "other")),
        ("cat .agents/skills/demo-skill/SKILL.md", ("demo-skill",)),
        ("ls .agents/skills/", ()),
        ("grep -r csv .agents/skills", ()),
        ("cat .claude/skills/demo/SKILL.md", ()),
        ("cat notes/skills/demo/SKILL.md", ()),
    ],
)
def test_codex_reads(command: str, fired: tuple[str, ...]) -> None:
    found = detect(session(*call("shell", "c1", command=command), listed=None), ["demo"])
    assert found.fired == fired


def test_gemini_activate_skill_and_a_claude_read_is_not_one() -> None:
    gem = session(*call("activate_skill", "g1", name="demo-skill"), listed=None)
    assert detect(gem).fired == ("demo-skill",)
    claude_read = session(*call("Bash", "b1", command="cat .agents/skills/demo-skill/SKILL.md"))
    assert detect(claude_read).fired == ()  # on Claude only the Skill tool counts


@pytest.mark.parametrize(
    ("tool", "data", "fired"),
    [
        ("skill", {"skill": "demo"}, ("demo",)),  # Copilot CLI
        ("skill", {"name": "demo"}, ("demo",)),  # OpenCode
        ("view", {"path": "/tmp/x/sb/.agents/skills/demo/SKILL.md"}, ("demo",)),
        ("view", {"path": "/tmp/x/sb/.github/skills/demo/SKILL.md"}, ("demo",)),
        ("bash", {"command": "cat .agents/skills/demo/SKILL.md", "description": "read"}, ("demo",)),
        ("read", {"filePath": "/tmp/x/sb/.opencode/skills/demo/SKILL.md"}, ("demo",)),
        ("view", {"path": "/tmp/x/sb/notes/demo/SKILL.md"}, ()),
        ("view", {"path": "/tmp/x/sb/.agents/skills/demo/reference.md"}, ()),
        ("Read", {"file_path": "/tmp/x/sb/.opencode/skills/demo/SKILL.md"}, ()),  # Claude: only Skill
    ],
)
def test_copilot_and_opencode_skill_tool_and_skill_file_reads(
    tool: str, data: dict[str, Any], fired: tuple[str, ...]
) -> None:
    assert detect(session(*call(tool, "c1", **data), listed=None), ["demo"]).fired == fired


@pytest.mark.parametrize("status", ["api_error", "timeout", "crashed", "max_turns", "flood", "error"])
def test_a_failed_session_is_an_error_even_if_it_fired(status: str) -> None:
    fired = detect(session(*call("Skill", "t", skill="demo-skill"), status=status), ["demo-skill"])
    silent = detect(session(status=status), ["demo-skill"])
    for found in (fired, silent):
        assert found.status == TriggerStatus.ERROR and not found.counted and status in (found.reason or "")
    assert fired.fired == ("demo-skill",)  # still shown, never counted


def test_not_listed_under_its_name_is_a_setup_failure() -> None:
    # Installed under a generated name: the model sees "candidate-1", the benchmark asks about "demo-skill".
    s = session(*call("Skill", "t", skill="candidate-1"), listed=("candidate-1", "debug"))
    found = detect(s, ["demo-skill"])
    assert found.status == TriggerStatus.NOT_LISTED and found.missing == ("demo-skill",)
    assert not found.counted and "'demo-skill'" in (found.reason or "")
    near = detect(session(listed=("demo-skil", "debug")), ["demo-skill"])
    assert "listed: 'demo-skil'" in (near.reason or "")
    # A CLI without a listing (Codex, Gemini) cannot fail this check.
    assert detect(session(listed=None), ["demo-skill"]).status == TriggerStatus.OK


def test_turns_group_one_response_and_split_at_results() -> None:
    events = [
        AgentEvent(kind="init"),
        AgentEvent(kind="text", text="a"),
        AgentEvent(kind="tool_use", tool="Read", tool_id="1"),
        AgentEvent(kind="tool_use", tool="Bash", tool_id="2"),
        AgentEvent(kind="tool_result", tool_id="1"),
        AgentEvent(kind="tool_result", tool_id="2"),
        AgentEvent(kind="tool_use", tool="Skill", tool_id="3"),
        AgentEvent(kind="tool_result", tool_id="3"),
        AgentEvent(kind="text", text="done"),
        AgentEvent(kind="result"),
    ]
    assert turns(events) == [0, 0, 0, 0, 0, 0, 1, 1, 2, 2]


def skill_dir(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(text)
    return folder


def test_install_problems(tmp_path: Path) -> None:
    good = skill_dir(tmp_path, "csv", "---\nname: csv\ndescription: Reads CSV files.\n---\nbody\n")
    assert install_problem("csv", good) is None
    unnamed = skill_dir(tmp_path, "plain", "---\ndescription: Reads CSV files.\n---\nbody\n")
    assert install_problem("plain", unnamed) is None
    renamed = install_problem("candidate-1", good)
    assert renamed and "'csv' differs from the name it is installed and listed as ('candidate-1')" in renamed
    bare = skill_dir(tmp_path, "bare", "# no front matter\n")
    assert "no front matter" in (install_problem("bare", bare) or "")
    quiet = skill_dir(tmp_path, "quiet", "---\nname: quiet\n---\n")
    assert "description: missing or empty" in (install_problem("quiet", quiet) or "")
    command = tmp_path / "csv.md"
    command.write_text("---\ndescription: x\n---\n")
    assert "slash command, not a skill" in (install_problem("csv", command) or "")
    assert "no SKILL.md" in (install_problem("nothing", tmp_path / "nothing") or "")


def test_sandbox_problems(tmp_path: Path) -> None:
    clean = tmp_path / "runs" / "s1" / "sb"
    clean.mkdir(parents=True)
    assert sandbox_problems(clean, ["csv-insights"]) == []
    named = tmp_path / "runs" / "csv-insights-1" / "sb"
    named.mkdir(parents=True)
    assert [p.split(": ", 1)[1] for p in sandbox_problems(named, ["csv-insights"])] == [
        "the sandbox path contains the skill name 'csv-insights', which the model sees in its prompt"
    ]
    (tmp_path / "runs" / ".claude" / "skills").mkdir(parents=True)
    (problem,) = sandbox_problems(clean, ["csv-insights"])
    assert problem.startswith(str(tmp_path / "runs" / ".claude" / "skills"))
