"""Sample-mode scores, exactly as the seed defines them (see STATISTICS.md)."""

from __future__ import annotations

from collections.abc import Sequence

from graders.schema import AssertionResult, Grade, JudgeResult, JudgeStatus

SCALE_MIN = 1.0  # an errored execution scores the scale's minimum in comparisons


def assertion_score(results: Sequence[AssertionResult]) -> float | None:
    """1 + 4 * passed weight / total weight; None when there are no assertions (or no weight)."""
    total = sum(r.assertion.weight for r in results)
    if not results or total <= 0:
        return None
    passed = sum(r.assertion.weight for r in results if r.passed)
    return 1 + 4 * passed / total


def composite(assertions: float | None, judge: JudgeResult, judged: bool) -> float | None:
    """Mean of the layers present; 0 when neither; None when the judge layer is UNGRADED."""
    if judge.status == JudgeStatus.UNGRADED:
        return None
    layers = [s for s in (assertions, judge.score if judged else None) if s is not None]
    if not layers:
        return 0.0
    return sum(layers) / len(layers)


def make_grade(results: Sequence[AssertionResult], judge: JudgeResult, judged: bool) -> Grade:
    """The run's grade; an assertion that could not decide leaves the run without a score (fail
    closed: its pass or fail would be a guess either way)."""
    errors = [f"{r.assertion.type}: {r.message.removeprefix('grading error: ')}" for r in results if r.error]
    score = None if errors else assertion_score(results)
    return Grade(
        assertions=tuple(results),
        assertion_score=score,
        judge=judge,
        composite=None if errors else composite(score, judge, judged),
        scored=bool(errors) or score is not None or (judged and judge.status != JudgeStatus.SKIPPED),
        grading_error="; ".join(errors) or None,
    )
