"""Claude Code plugin eval suites: parsing every grader kind, bad input, grading recorded sessions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from executors.errors import InputError
from graders import plugin_grading as grading
from graders.grades import GraderResult
from graders.plugin_eval import (
    BaselineGrader,
    FileExistsGrader,
    FileSource,
    LlmGrader,
    RegexGrader,
    ToolOrderGrader,
    ToolUsedGrader,
    front_matter,
    js_regex,
    merge_case,
    parse_case,
)
from graders.plugin_grading import RunEvidence, grade_deterministic, graders_for_arm

DATA = Path(__file__).parents[1] / "data" / "plugin_eval"


def events(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def passed(verdicts: dict[str, GraderResult | None]) -> tuple[set[str], set[str]]:
    """The graders that passed, and those that failed (a grader that gave no verdict in neither)."""
    given = {name: v.passed for name, v in verdicts.items() if v}
    return {n for n, ok in given.items() if ok is True}, {n for n, ok in given.items() if ok is False}


def case_of(graders: list[dict[str, Any]], **execution: Any) -> Any:
    data = {"schema_version": "1.0", "name": "c", "execution": {"prompt": "do it", **execution}}
    return parse_case(data | {"graders": graders}, "evals/c/case.yaml")


def test_case_yaml_every_grader_kind_with_the_official_defaults() -> None:
    case = case_of(
        [
            {"type": "regex", "name": "r", "pattern": "hi"},
            {"type": "regex", "name": "rf", "pattern": "x", "target": {"source": "file", "path": "a.txt"}},
            {
                "type": "tool_order",
                "name": "o",
                "before": "Read",
                "after": {"tool": "Write", "input_match": "py"},
            },
            {"type": "tool_used", "name": "u", "tool": "Skill"},
            {"type": "file_exists", "name": "f", "path": "**/*.py"},
            {"type": "llm", "name": "l", "criteria": "is polite", "focus": "trace"},
            {"type": "baseline", "name": "b", "baseline_file": "ref.jsonl", "criteria": "as good"},
        ],
        max_turns=5,
        allowed_tools=["Write"],
        env={"A": 1},
    )
    r, rf, o, u, f, llm, b = case.graders
    assert isinstance(r, RegexGrader) and (r.target, r.match, r.flags, r.weight) == (
        "last_message",
        "contains",
        "",
        1,
    )
    assert isinstance(rf, RegexGrader) and rf.target == FileSource(source="file", path="a.txt")
    assert isinstance(o, ToolOrderGrader) and o.before.tool == "Read" and o.after.input_match == "py"
    assert isinstance(u, ToolUsedGrader) and u.min is None and u.max is None and u.arm is None
    assert isinstance(f, FileExistsGrader) and f.exists is True
    assert isinstance(llm, LlmGrader) and llm.focus == "trace"
    assert isinstance(b, BaselineGrader) and b.baseline_file == "ref.jsonl"
    assert (case.max_turns, case.timeout_seconds, case.runs, case.allowed_tools) == (5, 300, 3, ("Write",))
    assert case.env == (("A", "1"),)


def test_prompt_md_and_grader_files_merge_as_the_official_runner() -> None:
    prompt = (
        "evals/greet/prompt.md",
        "---\nmax_turns: 4\nallowed_tools: [Read, Skill]\nruns: 2\n---\n\nGreet me.\n",
    )
    graders = [
        ("evals/greet/graders/marker.md", "---\ntype: regex\nflags: i\n---\nhello-marker\n"),
        ("evals/greet/graders/polite.md", "---\ntype: llm\nweight: 2\n---\nThe reply is polite.\n"),
        ("evals/greet/graders/notes.md", "Just notes, no front matter: skipped.\n"),
    ]
    data = merge_case(None, prompt, graders, "greet")
    case = parse_case(data, "evals/greet/prompt.md")
    assert (case.name, case.prompt, case.max_turns, case.runs) == ("greet", "Greet me.", 4, 2)
    marker, polite = case.graders
    assert isinstance(marker, RegexGrader) and (marker.name, marker.pattern, marker.flags) == (
        "marker",
        "hello-marker",
        "i",
    )
    assert isinstance(polite, LlmGrader) and (polite.criteria, polite.weight) == ("The reply is polite.", 2)


def test_case_yaml_graders_and_md_graders_add_up() -> None:
    base = {
        "schema_version": "1.0",
        "execution": {"prompt": "p"},
        "graders": [{"type": "tool_used", "name": "t", "tool": "Bash"}],
    }
    data = merge_case(base, None, [("g/x.md", "---\ntype: file_exists\npath: out.txt\n---\n")], "folder")
    assert [g.name for g in parse_case(data, "case.yaml").graders] == ["t", "x"]


@pytest.mark.parametrize(
    ("graders", "expected"),
    [
        (
            [{"type": "regexp", "name": "a", "pattern": "x"}],
            "graders[0] (a): type: unknown grader kind 'regexp' (did you mean 'regex'?)",
        ),
        ([{"type": "tool_use", "name": "a", "tool": "X"}], "did you mean 'tool_used'?"),
        ([{"name": "a", "pattern": "x"}], "graders[0] (a): type: required"),
        ([{"type": "regex", "name": "a"}], "graders[0].pattern: required field missing"),
        ([{"type": "regex", "name": "a", "pattern": "x", "match": "some"}], "graders[0].match:"),
        (
            [{"type": "tool_used", "name": "a", "tool": "X", "inputs_match": 1}],
            "graders[0].inputs_match: unknown field (did you mean 'input_match'?)",
        ),
        ([], "graders: at least one grader is required"),
        (
            [{"type": "regex", "name": "a", "pattern": "x"}, {"type": "regex", "name": "a", "pattern": "y"}],
            "duplicate grader name 'a'",
        ),
    ],
)
def test_bad_graders_name_the_file_and_the_field(graders: list[dict[str, Any]], expected: str) -> None:
    with pytest.raises(InputError) as err:
        case_of(graders)
    assert len(err.value.lines) == 1
    assert err.value.lines[0].startswith("evals/c/case.yaml: ") and expected in err.value.lines[0]


def test_bad_front_matter_and_case_fields() -> None:
    with pytest.raises(InputError, match=r"^g/a.md: type: required in the front matter"):
        merge_case(None, ("p.md", "x"), [("g/a.md", "---\nweight: 1\n---\nbody\n")], "c")
    with pytest.raises(InputError, match=r"^p.md: front matter: unterminated"):
        front_matter("---\nmax_turns: 3\nno end\n", "p.md")
    with pytest.raises(InputError, match=r"^p.md: front matter: invalid YAML"):
        front_matter("---\nmax_turns: [3\n---\nbody\n", "p.md")
    with pytest.raises(InputError, match=r"^p.md: front matter: must be a mapping"):
        front_matter("---\n- a\n---\nbody\n", "p.md")
    with pytest.raises(
        InputError, match=r"^p.md: max_turn: unknown front matter key \(did you mean 'max_turns'\?\)"
    ):
        merge_case(None, ("p.md", "---\nmax_turn: 3\n---\nhi\n"), [], "c")
    with pytest.raises(InputError, match=r"case.yaml: schema_version: required"):
        parse_case(
            {"execution": {"prompt": "p"}, "graders": [{"type": "llm", "name": "l", "criteria": "c"}]},
            "case.yaml",
        )
    with pytest.raises(InputError, match=r"newer than this reader"):
        parse_case({"schema_version": "2.0", "graders": []}, "case.yaml")
    with pytest.raises(InputError, match=r"execution.prompt: required"):
        case_of([{"type": "llm", "name": "l", "criteria": "c"}], prompt=" ")
    with pytest.raises(InputError, match=r"execution.max_turns: Input should be less than or equal to 200"):
        case_of([{"type": "llm", "name": "l", "criteria": "c"}], max_turns=500)


def test_regex_targets_on_a_recorded_session() -> None:
    run = RunEvidence(
        events("claude-skill.jsonl"),
        created_files=["greeting.txt"],
        read_file=lambda p: b"hello from demo-skill\n" if p == "greeting.txt" else None,
    )
    case = case_of(
        [
            {"type": "regex", "name": "reply", "pattern": "skill applied", "flags": "i"},
            {"type": "regex", "name": "case", "pattern": "skill applied"},
            {"type": "regex", "name": "trace", "target": "trace", "pattern": '"name":"Bash"'},
            {
                "type": "regex",
                "name": "files",
                "target": "files",
                "pattern": r"^greeting\.txt$",
                "flags": "m",
            },
            {
                "type": "regex",
                "name": "file",
                "target": {"source": "file", "path": "greeting.txt"},
                "pattern": "demo-skill",
            },
            {
                "type": "regex",
                "name": "gone",
                "target": {"source": "file", "path": "nope.txt"},
                "pattern": "x",
                "match": "not_contains",
            },
            {"type": "regex", "name": "absent", "pattern": "error", "match": "not_contains"},
            {
                "type": "regex",
                "name": "count",
                "target": "trace",
                "pattern": "greeting\\.txt",
                "match": "count:4",
            },
        ]
    )
    verdicts = {g.name: grade_deterministic(g, run) for g in case.graders}
    # "gone": a {source: file} target must exist, whatever the match mode
    assert passed(verdicts) == ({"reply", "trace", "files", "file", "absent"}, {"case", "gone", "count"})
    assert verdicts["count"] is not None and verdicts["count"].explanation.startswith("found ")
    assert run.last_message() == "Skill applied; greeting.txt created."


def test_tool_graders_on_a_recorded_session() -> None:
    run = RunEvidence(events("claude-skill.jsonl"))
    case = case_of(
        [
            {"type": "tool_used", "name": "skill", "tool": "Skill"},
            {
                "type": "tool_used",
                "name": "skill-input",
                "tool": "Skill",
                "input_match": '"skill":"demo-skill"',
            },
            {"type": "tool_used", "name": "no-write", "tool": "Write", "min": 0, "max": 0, "arm": "both"},
            {"type": "tool_used", "name": "write", "tool": "Write"},
            {"type": "tool_used", "name": "bash-twice", "tool": "Bash", "min": 2},
            {"type": "tool_order", "name": "order", "before": "Skill", "after": "Bash"},
            {"type": "tool_order", "name": "reversed", "before": "Bash", "after": "Skill"},
            {"type": "tool_order", "name": "never", "before": "Read", "after": "Bash"},
        ]
    )
    got = {g.name: grade_deterministic(g, run) for g in case.graders}
    assert passed(got) == (
        {"skill", "skill-input", "no-write", "order"},
        {"write", "bash-twice", "reversed", "never"},
    )
    assert got["write"] is not None and got["write"].explanation == "Write called 0x (expected 1..∞)"
    assert got["never"] is not None and got["never"].explanation == '"before" tool Read never called'


def test_file_exists_reads_the_created_files_only() -> None:
    run = RunEvidence(events("claude-stream.jsonl"), created_files=["hello.py", "pkg/sub/mod.py"])
    case = case_of(
        [
            {"type": "file_exists", "name": "top", "path": "*.py"},
            {"type": "file_exists", "name": "deep", "path": "**/mod.py"},
            {"type": "file_exists", "name": "one-level", "path": "pkg/*.py"},
            {"type": "file_exists", "name": "not-there", "path": "README.md", "exists": False},
            {"type": "file_exists", "name": "there", "path": "hello.py", "exists": False},
        ]
    )
    assert [grade_deterministic(g, run).passed for g in case.graders] == [True, True, False, True, False]  # type: ignore[union-attr]


def test_skill_indicator_is_reported_but_never_scored() -> None:
    case = case_of(
        [
            {"type": "tool_used", "name": "fired", "tool": "Skill"},
            {"type": "tool_used", "name": "counted", "tool": "Skill", "arm": "both"},
            {"type": "regex", "name": "marker", "pattern": "MARK"},
            {"type": "regex", "name": "only", "pattern": "x", "arm": "with-only"},
        ]
    )
    with_arm = [(g.name, w) for g, w in graders_for_arm(case, with_plugin=True)]
    assert with_arm == [("fired", True), ("counted", False), ("marker", False), ("only", True)]
    assert [g.name for g, _ in graders_for_arm(case, with_plugin=False)] == ["counted", "marker"]
    run = RunEvidence(events("claude-skill.jsonl"))
    results = [grade_deterministic(g, run, w) for g, w in graders_for_arm(case, True)]
    assert (
        grading.run_score([r for r in results if r]) == 0.5
    )  # counted passes, marker fails; indicators left out
    lone = case_of([{"type": "tool_used", "name": "fired", "tool": "Skill"}])
    assert graders_for_arm(lone, with_plugin=False) == [(lone.graders[0], False)]  # every grader an indicator


def test_weights_and_js_regex_and_globs() -> None:
    results = [
        GraderResult(name="a", type="regex", passed=True, weight=3, explanation=""),
        GraderResult(name="b", type="regex", passed=False, weight=1, explanation=""),
        GraderResult(name="c", type="tool_used", passed=False, weight=5, explanation="", with_only=True),
    ]
    assert grading.run_score(results) == 0.75 and grading.run_score([]) == 0.0
    assert js_regex(r"(?<word>ab)\k<word>").search("xxabab") is not None
    assert js_regex(r"(?<![\s\S])x", "m").search("x") is not None
    assert js_regex("A.B", "is").search("a\nb") is not None
    assert grading.glob_regex("src/**/*.ts").match("src/a/b/c.ts") and grading.glob_regex(
        "src/**/*.ts"
    ).match("src/c.ts")
    assert not grading.glob_regex("*.ts").match("src/c.ts") and grading.glob_regex("a?.md").match("ab.md")


def test_bad_regex_fails_the_grader_not_the_run() -> None:
    case = case_of([{"type": "regex", "name": "bad", "pattern": "(unclosed"}])
    result = grade_deterministic(case.graders[0], RunEvidence([]))
    assert result is not None and not result.passed and "invalid regular expression" in result.explanation


def test_llm_grader_prompt_and_majority_of_three() -> None:
    case = case_of([{"type": "llm", "name": "polite", "criteria": "Says thanks."}])
    grader = case.graders[0]
    assert isinstance(grader, LlmGrader)
    run = RunEvidence(events("claude-stream.jsonl"))
    prompt = grading.judge_prompt(grader, run)
    assert prompt is not None and "Says thanks." in prompt and "Created hello.py, which prints hi." in prompt
    assert prompt.endswith("Respond with exactly one word: PASS or FAIL.")
    assert [grading.parse_vote(a) for a in ("PASS", '{"verdict": "FAIL"}', "maybe", "PASS or FAIL")] == [
        True,
        False,
        None,
        None,
    ]
    assert grading.judged_result(grader, [True, True, False]).passed
    assert not grading.judged_result(grader, [True, None, False]).passed
    assert grading.judged_result(grader, [True, None, False]).explanation == "1/3 judge votes PASS"
    # no readable vote at all (every call failed or answered neither): a grading error, not a FAIL
    undecided = grading.judged_result(grader, [None, None, None])
    assert not undecided.passed and undecided.error and "no readable judge vote of 3" in undecided.explanation
    from flows.modes.agentic.plugin_eval import finish, summarize

    checks, grade = finish(case, summarize([], [grader.name]), {grader.name: [None, None, None]}, True)
    assert grade.status == "ungraded" and grade.weighted_total is None and "polite" in (grade.error or "")
    assert checks.details[0].error is True
    assert finish(case, summarize([], [grader.name]), {grader.name: [False] * 3}, True)[1].weighted_total == 0
    missing = case_of(
        [{"type": "llm", "name": "f", "criteria": "c", "focus": {"source": "file", "path": "x"}}]
    )
    assert grading.judge_prompt(missing.graders[0], run) is None  # type: ignore[arg-type]


def test_suite_loading_and_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flows.cli.main import main
    from flows.inputs.suites.plugin_eval import is_plugin_suite, load_plugin_tasks, suite_skill

    root = tmp_path / "plug"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(
        '{"name": "plug", "experimental": {"evals": "quality"}}'
    )
    (root / "skills" / "hello").mkdir(parents=True)
    (root / "skills" / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: d\n---\nbody\n")
    case = root / "quality" / "group" / "greet"
    (case / "graders").mkdir(parents=True)
    (case / "prompt.md").write_text("Say hi.\n")
    (case / "graders" / "hi.md").write_text("---\ntype: regex\n---\nhi\n")
    (root / "quality" / "results" / "old").mkdir(parents=True)  # the official runner's own output
    assert is_plugin_suite(root) and is_plugin_suite(root / "quality") and not is_plugin_suite(tmp_path)
    tasks, digest = load_plugin_tasks(root)
    assert [(t.task_id, t.prompt) for t in tasks] == [("greet", "Say hi.")] and len(digest) == 64
    assert tasks[0].plugin_case is not None and tasks[0].case_dir == str(case.resolve())
    assert suite_skill(root) == root.resolve()  # a manifest: the whole plugin, as the official runner
    bare = tmp_path / "bare"  # no manifest: its one skill
    (bare / "skills" / "hello").mkdir(parents=True)
    (bare / "skills" / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: d\n---\nbody\n")
    (bare / "evals" / "greet").mkdir(parents=True)
    (bare / "evals" / "greet" / "prompt.md").write_text("Say hi.\n")
    assert suite_skill(bare) == (bare / "skills" / "hello").resolve()
    (case / "graders" / "hi.md").write_text("---\ntype: regexx\n---\nhi\n")
    assert main(["skill", "run", "--suite", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"skillab: error: {case / 'prompt.md'}: graders[0] (hi): type: unknown grader kind 'regexx' (did you mean 'regex'?)"
    ]
    (case / "graders" / "hi.md").write_text("---\ntype: regex\n---\nhi\n")
    assert main(["skill", "run", "--suite", str(root), "--runner", "codex"]) == 2
    assert "--runner: a plugin eval suite runs on claude" in capsys.readouterr().err


def replay_plugin(tmp_path: Path, context: str) -> Path:
    root = tmp_path / "plug"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text('{"name": "plug"}')
    (root / "skills" / "hello").mkdir(parents=True)
    (root / "skills" / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: d\n---\nbody\n")
    case = root / "evals" / "resume"
    case.mkdir(parents=True)
    (case / "case.yaml").write_text(
        f'schema_version: "1.0"\nname: resume\ncontext:\n{context}execution:\n  prompt: Go on.\n'
        "graders:\n  - {type: regex, name: done, pattern: done}\n"
    )
    return root


def test_add_dirs_outside_the_case_and_unsupported_fields_are_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main

    root = replay_plugin(tmp_path, "  add_dirs: [../shared]\n")
    assert main(["skill", "run", "--suite", str(root)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "context.add_dirs: '../shared': must name a folder inside the case folder" in line
    root = replay_plugin(tmp_path / "b", "")
    case = root / "evals" / "resume" / "case.yaml"
    case.write_text(case.read_text() + "plugins: [another]\n")
    # --ablate-sections without --ablate stops the command after the inputs are read, before any session.
    assert main(["skill", "run", "--suite", str(root), "--ablate-sections", "X"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plugins: not supported by skillab" in err[0] and "--skip-unsupported" in err[0]


def test_a_replay_case_needs_its_history_and_runs_with_the_plugin_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main
    from flows.inputs.suites.plugin_eval import load_plugin_tasks
    from flows.modes.agentic.plan import plan_sessions
    from flows.modes.agentic.plugin_eval import plugin_request
    from tests.flows.engine.test_plugin_eval_runs import base_request

    root = replay_plugin(tmp_path, "  history_file: past.jsonl\n")
    label = root / "evals" / "resume" / "case.yaml"
    assert main(["skill", "run", "--suite", str(root)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"skillab: error: {label}: context.history_file: 'past.jsonl': no such file in the case folder"
    ]
    (root / "evals" / "outside.jsonl").write_text("{}\n")
    (label).write_text(label.read_text().replace("past.jsonl", "../outside.jsonl"))
    assert main(["skill", "run", "--suite", str(root)]) == 2
    assert (
        "context.history_file: '../outside.jsonl': must be a file inside the case folder"
        in capsys.readouterr().err
    )
    (label).write_text(label.read_text().replace("../outside.jsonl", "past.jsonl"))
    (root / "evals" / "resume" / "past.jsonl").write_text('{"type": "user"}\n')
    assert main(["skill", "run", "--suite", str(root), "--ablate-sections", "X"]) == 2
    err = capsys.readouterr().err
    assert "resume: continue a recorded session (history_file) and run with the plugin only" in err
    assert "not supported here" not in err
    tasks, digest = load_plugin_tasks(root)
    (root / "evals" / "resume" / "past.jsonl").write_text('{"type": "user", "x": 1}\n')
    assert load_plugin_tasks(root)[1] != digest  # the history is part of the suite
    sessions = plan_sessions(tasks, tmp_path / "r", 2, tmp_path / "iso")
    assert [s.mode for s in sessions] == ["with-skill", "with-skill"]  # no baseline arm
    case = tasks[0].plugin_case
    assert case is not None and case.history_file == "past.jsonl"
    request = plugin_request(base_request(tmp_path), case, "hello", tasks[0].case_dir)
    assert request.resume == str(root.resolve() / "evals" / "resume" / "past.jsonl")
    label.write_text(label.read_text().replace("  prompt: Go on.\n", "  max_turns: 2\n"))
    assert main(["skill", "run", "--suite", str(root)]) == 2
    assert (
        "execution.prompt: required (with context.history_file, the resumed session needs a next turn)"
        in (capsys.readouterr().err)
    )
    label.write_text(label.read_text().replace("  max_turns: 2\n", "  prompt: Go on.\n"))
    for value, why in (
        ("''", "at least 1 character"),
        ("/etc/hostname", "must be a file inside the case folder"),
    ):
        label.write_text(re.sub(r"history_file: .*", f"history_file: {value}", label.read_text()))
        assert main(["skill", "run", "--suite", str(root)]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "context.history_file" in lines[0] and why in lines[0], lines
    (root / "evals" / "resume" / "adir").mkdir()
    label.write_text(re.sub(r"history_file: .*", "history_file: adir", label.read_text()))
    assert main(["skill", "run", "--suite", str(root)]) == 2
    assert "'adir': must be a file inside the case folder" in capsys.readouterr().err


def test_what_will_fail_or_is_not_run_is_said_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main

    root = replay_plugin(tmp_path, "  scaffold_script: s.sh\n")
    label = root / "evals" / "resume" / "case.yaml"
    graders = (
        "graders:\n  - {type: regex, name: bad, pattern: 'PAP(('}\n"
        "  - {type: regex, name: mocked, target: mock_calls, pattern: x}\n"
    )
    label.write_text(label.read_text().split("graders:")[0] + graders)
    (root / "evals" / "resume" / "mocks" / "github").mkdir(parents=True)  # a mocks folder with no mock
    # unsupported parts refuse the case (one line) unless --skip-unsupported; the regex is a warning
    assert main(["skill", "run", "--suite", str(root), "--ablate-sections", "X"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": mock_calls: not supported by skillab" in err[0]
    assert main(["skill", "run", "--suite", str(root), "--skip-unsupported", "--ablate-sections", "X"]) == 2
    text = capsys.readouterr().err
    assert (
        "graders[0] (bad): pattern: invalid regular expression (" in text and "the grader will fail" in text
    )
    assert "resume: mock_calls: not supported by skillab; the case runs without it" in text
    label.write_text(label.read_text().replace("execution:\n", "execution:\n  plugins: [x]\n"))
    assert main(["skill", "run", "--suite", str(root)]) == 2
    assert (
        "execution.plugins: unknown field (a top-level field of the case: plugins:, not under execution:)"
        in (capsys.readouterr().err)
    )


def test_each_case_runs_its_own_runs_unless_runs_is_given(tmp_path: Path) -> None:
    from flows.inputs.suites.plugin_eval import load_plugin_tasks
    from flows.modes.agentic.plan import plan_sessions

    root = tmp_path / "plug"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text('{"name": "plug"}')
    for name, runs in (("a", "runs: 2\n"), ("b", "")):  # b: the official default, 3
        (root / "evals" / name).mkdir(parents=True)
        (root / "evals" / name / "case.yaml").write_text(
            f'schema_version: "1.0"\nname: {name}\n{runs}execution:\n  prompt: Go.\n'
            "graders:\n  - {type: regex, name: g, pattern: x}\n"
        )
    tasks, _ = load_plugin_tasks(root)
    own = plan_sessions(tasks, tmp_path / "r", 1, tmp_path / "iso", case_runs=True)
    counts = {t.task_id: sum(1 for s in own if s.task.task_id == t.task_id) for t in tasks}
    assert counts == {"a": 2 * 2, "b": 3 * 2}  # x 2 arms
    assert all("run-" in str(s.outputs) for s in own)
    given = plan_sessions(tasks, tmp_path / "r", 1, tmp_path / "iso", case_runs=False)
    assert len(given) == 2 * 2 and not any("run-" in str(s.outputs) for s in given)


def test_a_refused_grader_file_is_named_with_how_to_mend_it() -> None:
    """Not pydantic's words, not prompt.md plus an index: the grader's own file, the field, the fix."""
    graders = [
        ("evals/c/graders/empty.md", "---\ntype: llm\n---\n"),
        ("evals/c/graders/judge.md", "---\ntype: llm\nfocus: everything\nmodel: haiku\n---\nIs it good?\n"),
    ]
    with pytest.raises(InputError) as err:
        parse_case(merge_case(None, ("evals/c/prompt.md", "Do it."), graders, "c"), "evals/c/prompt.md")
    assert err.value.lines == [
        "evals/c/graders/empty.md: criteria: required field missing (write the criteria as the grader "
        "file's body, or as criteria: in its front matter)",
        "evals/c/graders/judge.md: focus: 'everything' is not a target: one of trace, last_message, files, "
        "mock_calls, or {file: <path in the session's folder>}",
        "evals/c/graders/judge.md: model: unknown field; its grader type takes name, weight, arm, criteria, focus",
    ]


def test_a_case_forbidding_one_skill_while_another_must_fire_is_positive() -> None:
    def skill_grader(name: str, **limits: Any) -> dict[str, Any]:
        return {"type": "tool_used", "name": name, "tool": "Skill", **limits}

    both = case_of([skill_grader("mine", min=1), skill_grader("not-other", input_match="other", max=0)])
    assert both.expects_skill is True
    assert case_of([skill_grader("none-fires", max=0)]).expects_skill is False
    assert case_of([skill_grader("not-other", input_match="other", max=0)]).expects_skill is None
