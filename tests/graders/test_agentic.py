"""Agentic graders: task markdown, deterministic checks in a sandbox, the four-criterion grade, behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.schema import AgentEvent, AgentSession
from graders.agent_task import parse_task
from graders.behavior import analyze
from graders.checks import run_checks
from graders.criteria import grade, parse_criteria
from graders.judge import JudgeParseError

TASK = """# Task: add function
difficulty: easy
category: python
type: positive

## Prompt
Create calc.py with a function add(a, b).

## Expected Outcome
calc.py defines add returning a + b.

## Verification Checks
- file_exists: calc.py
- file_contains: def add in calc.py
- file_contains: return
- syntax_valid: python
- runs_without_error: python3 -c "import calc; assert calc.add(2, 3) == 5"

## Grading Rubric
- Correctness: add works
- Completeness: only add is needed
- Quality: clear code

## Tags
python, basics
"""


def test_parse_task() -> None:
    t = parse_task(TASK, "task-01-easy")
    assert (t.name, t.difficulty, t.type, t.category) == ("add function", "easy", "positive", "python")
    assert [c.kind for c in t.checks] == [
        "file_exists",
        "file_contains",
        "file_contains",
        "syntax_valid",
        "runs_without_error",
    ]
    assert t.checks[1].target == "def add" and t.checks[1].file == "calc.py" and t.checks[2].file is None
    assert t.tags == ("python", "basics") and not t.negative_control


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("# Task: add function", "# Add function"), "title:"),
        (("difficulty: easy", "difficulty: trivial"), "difficulty: must be one of"),
        (("type: positive", "type: maybe"), "type: must be one of"),
        (("## Expected Outcome", "## Outcome"), "expected outcome: section"),
        (
            ("- file_exists: calc.py", "- file_exist: calc.py"),
            "verification checks[0]: unknown check 'file_exist'",
        ),
    ],
)
def test_malformed_tasks(change: tuple[str, str], expected: str) -> None:
    with pytest.raises(ValueError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        parse_task(TASK.replace(*change), "t")


def test_checks_in_a_sandbox(tmp_path: Path) -> None:
    task = parse_task(TASK, "t")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    result = run_checks(task, tmp_path)
    assert result.all_passed and result.file_contains == {"def add": True, "return": True}
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    broken = run_checks(task, tmp_path)
    assert not broken.all_passed and broken.runs_without_error is False and broken.syntax_valid is True
    (tmp_path / "calc.py").write_text("def add(a, b:\n")
    assert run_checks(task, tmp_path).syntax_valid is False


def test_a_checker_that_cannot_decide_is_a_grading_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graders import checks
    from graders.schema import GradingError
    from tasks.agent import check_sandbox

    task = parse_task(TASK, "t")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")

    def hung(*_args: object) -> tuple[bool, str]:
        raise GradingError("calc.py: the python syntax check timed out after 1s")

    monkeypatch.setattr(checks, "_syntax", hung)
    result = run_checks(task, tmp_path)
    undecided = next(d for d in result.details if d.check == "syntax_valid: python")
    assert undecided.passed is None and undecided.error and "timed out" in (result.grading_error or "")
    assert result.all_passed  # the other checks decided, and passed
    # the sandbox itself failing: no check ran, a grading error rather than a failed session
    monkeypatch.setenv("SKILLAB_BWRAP", "skillab-no-such-bwrap")
    failed = check_sandbox.fn(task, str(tmp_path), "t", "bubblewrap")
    assert failed.details == [] and "bubblewrap is not available" in (failed.grading_error or "")


def test_other_languages(tmp_path: Path) -> None:
    t = parse_task(
        TASK.replace(
            "- syntax_valid: python",
            "- syntax_valid: json\n- syntax_valid: shell\n- syntax_valid: yaml\n- syntax_valid: javascript",
        ),
        "t",
    )
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "a.json").write_text('{"a": 1}')
    (tmp_path / "a.sh").write_text("echo hi\n")
    (tmp_path / "a.yaml").write_text("a: [1, 2]\n")
    (tmp_path / "a.js").write_text("const x = 1;\n")
    assert run_checks(t, tmp_path).all_passed
    (tmp_path / "a.sh").write_text("if then fi\n")
    (tmp_path / "a.json").write_text("{a: 1}")
    out = run_checks(t, tmp_path)
    failed = {d.check for d in out.details if d.passed is False}
    assert failed == {"syntax_valid: json", "syntax_valid: shell"}


def test_grade_weights_and_cap() -> None:
    criteria = parse_criteria(
        'Here: {"correctness": {"score": 90, "justification": "ok"}, "completeness": '
        '{"score": 80, "justification": "x"}, "quality": {"score": 70, "justification": "y"}, '
        '"efficiency": {"score": 120, "justification": "z"}, "summary": "good"}'
    )
    assert criteria.efficiency is not None and criteria.efficiency.score == 100
    g = grade(criteria, checks_passed=True)
    assert g.weighted_total == pytest.approx(0.4 * 90 + 0.25 * 80 + 0.2 * 70 + 0.15 * 100)
    capped = grade(criteria, checks_passed=False)
    assert capped.correctness is not None
    assert capped.correctness.score == 50 and "capped" in capped.correctness.justification
    assert capped.weighted_total == pytest.approx(0.4 * 50 + 0.25 * 80 + 0.2 * 70 + 0.15 * 100)
    with pytest.raises(JudgeParseError):
        parse_criteria('{"correctness": {"score": 90}}')


def use(tool: str, tid: str, **inp: object) -> AgentEvent:
    return AgentEvent(kind="tool_use", tool=tool, tool_id=tid, input=dict(inp))


def res(tool: str, tid: str, error: bool = False, code: int | None = None) -> AgentEvent:
    return AgentEvent(kind="tool_result", tool=tool, tool_id=tid, is_error=error, exit_code=code)


def test_behaviour_thrashing_errors_recovery() -> None:
    events = (
        use("Bash", "1", command="pytest"),
        res("Bash", "1", code=1),
        use("Bash", "2", command="pytest"),
        res("Bash", "2", error=True),
        use("Bash", "3", command="pytest"),
        res("Bash", "3"),
        use("Read", "4", file_path="x.py"),
        res("Read", "4", error=True),
        use("Write", "5", file_path="y.py"),
        res("Write", "5"),
    )
    session = AgentSession(
        ok=True,
        status="success",
        events=events,
        skill_invoked=True,
        meta={"num_turns": 6, "permission_denials": [{"tool": "WebFetch"}]},
    )
    b = analyze(session)
    assert b.tool_calls == {"Bash": 3, "Read": 1, "Write": 1} and b.total_tool_calls == 5
    assert b.thrashing_detected and b.longest_repeat == 3
    assert b.errors_encountered == 3 and b.errors_recovered == 2  # the Read on x.py never recovered
    assert b.permission_denials == 1 and b.skill_invoked and not b.max_turns_hit and b.turns == 6
