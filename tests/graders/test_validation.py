"""Graders tried on a case's reference answer and on the mutants derived from it, with no model call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flows.modes.agentic.plan import check_folders
from graders.registry import parse
from graders.schema import Sample
from graders.validation import validate_samples, violation, without_broken
from tests.graders.test_agentic import TASK as AGENTIC_TASK


def sample(reference: str | None, *assertions: dict[str, Any], folder: Path = Path(".")) -> Sample:
    return Sample(
        sample_id="s",
        prompt="What is the capital of France?",
        reference_output=reference,
        assertions=tuple(parse(a, str(folder)) for a in assertions),
        source_dir=str(folder),
    )


def statuses(s: Sample) -> list[tuple[str, str]]:
    return [(f.grader, f.status) for f in validate_samples([s])]


def test_sound_graders_pass_the_reference_and_fail_their_violation() -> None:
    s = sample(
        "Paris is the capital.",
        {"type": "contains", "value": "paris"},
        {"type": "not_contains", "value": "London"},
        {"type": "regex", "pattern": r"\bcapital\b"},
        {"type": "contains_all", "values": ["Paris", "capital"]},
        {"type": "word_count_max", "value": 6},
        {"type": "word_count_min", "value": 2},
        {"type": "min_length", "value": 5},
        {"type": "max_length", "value": 40},
        {"type": "starts_with", "value": "Paris"},
        {"type": "contains", "value": "Rome", "not": True},
    )
    assert {status for _, status in statuses(s)} == {"ok"}


def test_a_regex_that_can_never_match_is_broken() -> None:
    findings = validate_samples([sample("Paris", {"type": "regex", "pattern": "x^"})])
    assert [f.status for f in findings] == ["broken"]
    assert findings[0].grader == "s#1 (regex)" and "fails the reference answer" in findings[0].reason


def test_a_grader_that_cannot_fail_is_broken() -> None:
    # matches the empty string, so it matches whatever is left once its matches are removed
    findings = validate_samples([sample("Paris", {"type": "regex", "pattern": "P*"})])
    assert [f.status for f in findings] == ["broken"] and "cannot fail" in findings[0].reason
    assert violation(parse({"type": "contains", "value": "par"}, "."), "Paris, PARIS") == "is, IS"


def test_a_custom_check_is_tried_confined_and_one_that_raises_is_broken(tmp_path: Path) -> None:
    (tmp_path / "any.py").write_text("def check(output, ctx):\n    return True\n")
    (tmp_path / "boom.py").write_text("def check(output, ctx):\n    raise ValueError('bad check')\n")
    s = sample(
        "Paris", {"type": "custom", "fn": "any.py"}, {"type": "custom", "fn": "boom.py"}, folder=tmp_path
    )
    found = validate_samples([s])
    assert [f.status for f in found] == ["untested", "broken"]
    assert "bad check" in found[1].reason and "could not decide" in found[1].reason


def test_broken_graders_are_taken_out_and_cases_without_reference_are_not_tried() -> None:
    broken = sample("Paris", {"type": "contains", "value": "Paris"}, {"type": "regex", "pattern": "x^"})
    bare = sample(None, {"type": "regex", "pattern": "x^"})
    findings = validate_samples([broken, bare])
    assert [f.grader for f in findings] == ["s#1 (contains)", "s#2 (regex)"]
    kept = without_broken([broken], findings)
    assert [a.type for a in kept[0].assertions] == ["contains"]


@pytest.mark.parametrize("judged", [{"type": "faithfulness"}, {"type": "answer_relevancy"}])
def test_judged_criteria_need_a_model_and_are_not_tried(judged: dict[str, Any]) -> None:
    assert validate_samples([sample("Paris", judged)]) == []


def test_a_reference_that_yaml_made_a_number_is_asked_for_in_quotes() -> None:
    with pytest.raises(ValueError, match=r"write the answer in quotes: the file gave a float \(1.5\)"):
        Sample.model_validate({"sample_id": "s", "prompt": "p", "reference_output": 1.5})


#: The agentic tests' task, with two checks no correct solution can settle.
TASK = AGENTIC_TASK.replace(
    '5"\n', '5"\n- runs_without_error: true\n- file_contains: def multiply in calc.py\n'
)


def test_a_task_s_checks_on_its_reference_solution_and_its_untouched_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main

    suite = tmp_path / "suite"
    (suite / "references" / "task-01").mkdir(parents=True)
    (suite / "task-01.md").write_text(TASK)
    (suite / "task-02.md").write_text(TASK.replace("add function", "no reference"))
    (suite / "references" / "task-01" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (suite / "references" / "task-01" / "leak").symlink_to("/etc/hostname")
    code = main(["skill", "validate", "--tasks", str(suite)])
    out = capsys.readouterr()
    # a link that leaves the reference folder is refused before anything runs
    assert code == 2 and "leak" in out.err and "reference solution" in out.err
    (suite / "references" / "task-01" / "leak").unlink()
    assert main(["skill", "validate", "--tasks", str(suite)]) == 1
    lines = capsys.readouterr().out.splitlines()
    sound = "passes the reference solution, fails the untouched start"
    assert lines[:7] == [
        f"ok       task-01#1 (file_exists: calc.py): {sound}",
        f"ok       task-01#2 (file_contains: def add in calc.py): {sound}",
        f"ok       task-01#3 (file_contains: return): {sound}",
        f"ok       task-01#4 (syntax_valid: python): {sound}",
        f'ok       task-01#5 (runs_without_error: python3 -c "import calc; assert calc.add(2, 3) == 5"): {sound}',
        "broken   task-01#6 (runs_without_error: true): passes the untouched start: it is decided before the agent acts",
        "broken   task-01#7 (file_contains: def multiply in calc.py): fails the reference solution: 'def multiply' "
        "not found in calc.py",
    ]
    assert lines[7] == "validate: 7 graders tried on 1 reference solution(s): 5 ok, 0 untested, 2 broken"
    (suite / "references" / "task-02").write_text("not a folder")
    assert main(["skill", "validate", "--tasks", str(suite)]) == 2
    assert "task task-02" in capsys.readouterr().err
    (suite / "references" / "task-02").unlink()
    assert lines[8] == "validate: 1 case(s) have no reference solution, their graders were not tried: task-02"


def test_broken_checks_are_taken_out_of_the_task(tmp_path: Path) -> None:
    from graders.agent_task import parse_task
    from graders.task_validation import tasks_without_broken, validate_tasks

    (tmp_path / "references" / "task-01").mkdir(parents=True)
    (tmp_path / "references" / "task-01" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    task = parse_task(TASK, "task-01")
    findings = validate_tasks([task], tmp_path, "bubblewrap", check_folders)
    (kept,) = tasks_without_broken([task], findings)
    assert [c.label for c in kept.checks] == [c.label for c in task.checks[:5]]


def test_checks_see_on_the_reference_the_paths_a_session_works_in(tmp_path: Path) -> None:
    """The attack: a check that reads its own folder's name passed on the reference ("reference")
    and failed every real session. Now the reference lies where the with-skill session works (and
    the start where the baseline works), below a run root of the same shape."""
    from flows.modes.agentic.plan import plan_sessions
    from graders.agent_task import parse_task
    from graders.task_validation import validate_tasks

    (tmp_path / "references" / "task-02").mkdir(parents=True)
    (tmp_path / "references" / "task-02" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    checks = (
        '- runs_without_error: test "$(basename "$PWD")" != reference && test -f calc.py\n'
        '- runs_without_error: test "$(basename "$(dirname "$PWD")")" = task-02 && test -f calc.py\n'
        '- runs_without_error: test "$(basename "$PWD")" = reference\n'
    )
    text = (
        TASK.split("## Verification Checks")[0]
        + "## Verification Checks\n"
        + checks
        + "\n## Grading Rubric\n- ok\n"
    )
    first, second = parse_task(TASK, "task-01"), parse_task(text, "task-02")
    findings = validate_tasks([first, second], tmp_path, "bubblewrap", check_folders)
    assert [(f.status, f.index) for f in findings if f.case == "task-02"] == [
        ("ok", 1),
        ("ok", 2),
        ("broken", 3),
    ]
    # and those are the paths a run gives the sessions of the second task
    (with_skill, baseline) = [
        s for s in plan_sessions([first, second], tmp_path / "r", 1, tmp_path / "x") if s.index == 2
    ]
    ref, start = check_folders(tmp_path / "x", 2)
    assert (with_skill.sandbox, baseline.sandbox) == (ref, start)


def test_a_plugin_case_s_file_graders_on_its_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main
    from tests.graders.test_plugin_eval import replay_plugin

    root = replay_plugin(tmp_path, "")  # its case "resume" has no reference
    case = root / "evals" / "greet"
    (case / "reference" / "out").mkdir(parents=True)
    (case / "reference" / "out" / "hello.txt").write_text("hello, world\n")
    (case / "case.yaml").write_text(
        'schema_version: "1.0"\nname: greet\nexecution:\n  prompt: Write out/hello.txt.\ngraders:\n'
        "  - {type: file_exists, name: made, path: 'out/*.txt'}\n"
        "  - {type: regex, name: says, target: {source: file, path: out/hello.txt}, pattern: hello}\n"
        "  - {type: file_exists, name: nothing, path: 'nothing.md', exists: false}\n"
        "  - {type: regex, name: done, pattern: done}\n"
        "  - {type: file_exists, name: always, path: '*'}\n"
    )
    assert main(["skill", "validate", "--tasks", str(root)]) == 1
    out = capsys.readouterr().out
    assert "ok       greet#1 (file_exists: made)" in out and "ok       greet#2 (regex: says)" in out
    assert "untested greet#3 (file_exists: nothing): asserts an absence" in out
    assert "untested greet#4 (regex: done): reads the session's transcript" in out
    # a glob that cannot match a file in a folder
    assert "broken   greet#5 (file_exists: always): fails the reference solution: * missing" in out
    assert "validate: 1 case(s) have no reference solution, their graders were not tried: resume" in out


def test_what_a_hostile_samples_file_cannot_do(tmp_path: Path) -> None:
    """Mutants stay small, a schema's pattern has the regex budget, a prefix is never faked, a check
    that raises on an empty output is untested (not ok), and a fifo is no samples file."""
    import os
    import time

    from flows.inputs.samples import load_samples

    huge = sample(
        "Paris", {"type": "max_length", "value": 2_000_000_000}, {"type": "word_count_max", "value": 3e8}
    )
    assert [f.status for f in validate_samples([huge])] == ["untested", "untested"]  # no mutant of 2 GB
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}
    started = time.monotonic()
    slow = sample('{"s": "' + "a" * 58 + '!"}', {"type": "json_schema", "schema": schema})
    (finding,) = validate_samples([slow])
    assert finding.status == "broken" and "timed out" in finding.reason
    assert time.monotonic() - started < 30
    prefixed = sample(
        "x-ray vision", {"type": "starts_with", "value": "x"}, {"type": "ends_with", "value": "n"}
    )
    assert [f.status for f in validate_samples([prefixed])] == ["ok", "ok"]
    (tmp_path / "empty.py").write_text(
        "def check(output, ctx):\n    if not output:\n        raise ValueError\n    return True\n"
    )
    (raises,) = validate_samples([sample("Paris", {"type": "custom", "fn": "empty.py"}, folder=tmp_path)])
    assert raises.status == "untested" and "could not decide on an empty output" in raises.reason
    os.mkfifo(tmp_path / "samples.yaml")
    with pytest.raises(ValueError, match="not a regular file"):
        load_samples(tmp_path / "samples.yaml")
