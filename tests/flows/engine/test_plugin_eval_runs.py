"""A plugin eval case's settings on the session request, its scaffold in the OS sandbox, and what
the graders see of the files (created ones only, as the official runner)."""

from __future__ import annotations

import json
from pathlib import Path

from executors.claude_code import ClaudeCodeExecutor
from executors.schema import AgentRequest
from flows.modes.agentic.plugin_eval import evidence, grade_plugin_run, plugin_request, prepare_sandbox
from graders.plugin_eval import READ_ONLY_TOOLS, PluginCase, merge_case, parse_case
from tests.agents import agent_request
from tests.executors.test_sandbox import ENDPOINT


def case(
    tmp_path: Path, front: str, graders: dict[str, str], scaffold: str | None = None
) -> tuple[PluginCase, Path]:
    folder = tmp_path / "evals" / "c"
    folder.mkdir(parents=True)
    yaml_case = None
    if scaffold is not None:
        (folder / "setup.sh").write_text(scaffold)
        yaml_case = {"schema_version": "1.0", "context": {"scaffold_script": "setup.sh"}}
    data = merge_case(
        yaml_case,
        ("prompt.md", f"---\n{front}\n---\nDo it.\n"),
        [(f"graders/{k}.md", v) for k, v in graders.items()],
        "c",
    )
    return parse_case(data, "prompt.md"), folder


def base_request(tmp_path: Path) -> AgentRequest:
    return agent_request(
        tmp_path, "claude", "sonnet", "Do it.", skill_name="hello", skill_dir=str(tmp_path / "skill")
    )


def test_case_settings_reach_the_claude_command_line(tmp_path: Path) -> None:
    front = (
        "max_turns: 7\ntimeout_seconds: 90\nmodel: opus\nallowed_tools: [Read, 'Bash(npm test:*)', Skill]\n"
        "disallowed_tools: [Agent]\nenv: {FEATURE: 'on'}\nappend_system_prompt: Be brief."
    )
    c, _ = case(tmp_path, front, {"g": "---\ntype: regex\n---\nx\n"})
    request = plugin_request(base_request(tmp_path), c)
    assert (request.model, request.max_turns, request.timeout_s, request.force_skill) == (
        "opus",
        7,
        90.0,
        False,
    )
    # the read-only set (its Agent withheld by the case) and the tools the case grants, as claude plugin eval
    offered = (*(t for t in READ_ONLY_TOOLS if t != "Agent"), "Bash")
    assert request.tools == offered and request.env == (("FEATURE", "on"),)
    (tmp_path / "skill").mkdir()
    (tmp_path / "skill" / "SKILL.md").write_text("---\nname: hello\ndescription: d\n---\n")
    argv, env = ClaudeCodeExecutor().prepare(
        request.model_copy(update={"env": (("FEATURE", "on"), ("HOME", "/x"))}), ENDPOINT
    )
    joined = " ".join(argv)
    assert f"--tools {','.join(offered)}" in joined and "--disallowedTools Agent" in joined
    assert "--append-system-prompt Be brief." in joined and "MUST first call the Skill tool" not in joined
    assert env["FEATURE"] == "on" and env["HOME"] == str(tmp_path / "home")  # a case cannot move HOME
    baseline = base_request(tmp_path).model_copy(update={"skill_name": None, "skill_dir": None})
    assert plugin_request(baseline, c, "hello").skill_name == "hello"  # named, not installed
    bare, _ = case(tmp_path / "b", "max_turns: 2", {"g": "---\ntype: regex\n---\nx\n"})
    assert plugin_request(base_request(tmp_path), bare).tools == READ_ONLY_TOOLS
    assert "--resume" not in joined


def test_a_recorded_session_is_resumed_from_a_copy(tmp_path: Path) -> None:
    history = tmp_path / "case" / "past.jsonl"
    history.parent.mkdir()
    history.write_text('{"type": "user"}\n')
    request = base_request(tmp_path).model_copy(
        update={"resume": str(history), "skill_name": None, "skill_dir": None}
    )
    argv, _ = ClaudeCodeExecutor().prepare(request, ENDPOINT)
    copy = Path(argv[argv.index("--resume") + 1])
    assert copy.is_relative_to(tmp_path / "home") and copy.read_text() == history.read_text()


def test_scaffold_runs_in_the_sandbox_and_its_files_are_not_created_ones(tmp_path: Path) -> None:
    graders = {
        "seeded": "---\ntype: regex\ntarget: {source: file, path: data/in.txt}\n---\nseed\n",
        "not-created": "---\ntype: file_exists\npath: data/in.txt\nexists: false\n---\n",
        "made": "---\ntype: file_exists\npath: out/*.md\n---\n",
        "listed": "---\ntype: regex\ntarget: files\nmatch: count:1\nflags: m\n---\n^\\S+$\n",
    }
    c, folder = case(tmp_path, "max_turns: 3", graders, scaffold="mkdir -p data && echo seed > data/in.txt\n")
    sandbox, outputs = tmp_path / "sb", tmp_path / "out"
    assert prepare_sandbox(c, str(folder), sandbox, outputs, "bubblewrap") is None
    assert (sandbox / "data" / "in.txt").read_text() == "seed\n"
    assert json.loads((outputs / "pre-existing-files.json").read_text()) == ["data/in.txt"]
    (sandbox / "out").mkdir()
    (sandbox / "out" / "report.md").write_text("# done\n")  # what the session wrote
    (sandbox / ".claude" / "skills" / "hello").mkdir(parents=True)
    (sandbox / ".claude" / "skills" / "hello" / "SKILL.md").write_text("installed, not created by the agent")
    (outputs / "raw_stream.jsonl").write_text("")
    run = evidence(sandbox, outputs)
    assert list(run.created_files) == ["out/report.md"]
    checks = grade_plugin_run(c, run, with_plugin=True)
    assert checks.plugin_eval is not None
    assert {g.name: g.passed for g in checks.plugin_eval.graders} == {
        "seeded": True,
        "not-created": True,
        "made": True,
        "listed": True,
    }
    assert checks.all_passed and checks.plugin_eval.score == 1.0


def test_a_failing_scaffold_is_a_failed_session_and_escapes_are_refused(tmp_path: Path) -> None:
    c, folder = case(
        tmp_path, "max_turns: 3", {"g": "---\ntype: regex\n---\nx\n"}, scaffold="echo broken >&2; exit 3\n"
    )
    error = prepare_sandbox(c, str(folder), tmp_path / "sb", tmp_path / "out", "bubblewrap")
    assert error is not None and error.startswith("scaffold_script setup.sh: exit 3") and "broken" in error
    outside = c.model_copy(update={"scaffold_script": "../../../etc/passwd"})
    error = prepare_sandbox(outside, str(folder), tmp_path / "sb2", tmp_path / "out2", "bubblewrap")
    assert error is not None and "no such file in the case folder" in error
