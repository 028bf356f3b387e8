from __future__ import annotations

import pytest

from graders.registry import parse
from graders.schema import AssertionResult, JudgeResult
from graders.scoring import assertion_score, composite, make_grade


def results(*passed_weights: tuple[bool, float]) -> list[AssertionResult]:
    return [
        AssertionResult(assertion=parse(dict(type="contains", value="x", weight=w), "."), passed=p)
        for p, w in passed_weights
    ]


def test_seed_example_two_of_three() -> None:
    assert assertion_score(results((True, 1), (True, 1), (False, 1))) == pytest.approx(1 + 4 * 2 / 3)


def test_weights() -> None:
    assert assertion_score(results((True, 1), (False, 0.5))) == pytest.approx(1 + 4 * (1 / 1.5))
    assert assertion_score([]) is None


def test_composite_rules() -> None:
    graded = JudgeResult(status="graded", score=4.0)
    assert composite(3.0, graded, judged=True) == 3.5  # both: their mean
    assert composite(3.0, JudgeResult(), judged=False) == 3.0  # assertions only
    assert composite(None, graded, judged=True) == 4.0  # judge only
    assert composite(None, JudgeResult(), judged=False) == 0.0  # neither
    assert composite(3.0, JudgeResult(status="ungraded"), judged=True) is None  # never a silent 0


def test_dimensions_mean_is_the_llm_score() -> None:
    grade = make_grade(results((True, 1)), JudgeResult(status="graded", score=(5 + 3) / 2), judged=True)
    assert grade.composite == pytest.approx((5 + 4) / 2)
