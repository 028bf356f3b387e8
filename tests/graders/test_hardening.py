"""Graders under a time budget, and numbers that cannot be gamed or turned into NaN."""

from __future__ import annotations

import math

import pytest

from executors.schema import RunResult, Usage
from graders.criteria import parse_criteria
from graders.judge import JudgeParseError, parse_reply, parse_winner
from graders.registry import parse, run_assertion
from graders.schema import Observation


def test_a_catastrophic_regex_is_a_grading_error_within_its_budget() -> None:
    # the pattern: the engine answers it at once (no hang), and correctly
    quick = run_assertion(
        parse(dict(type="regex", pattern="^(a+)+$"), "."), Observation(output="a" * 200 + "!")
    )
    assert not quick.passed and "no match" in quick.message
    # one it cannot optimise: backtracking stops at the time budget, as a grading error
    slow = run_assertion(parse(dict(type="regex", pattern="(a|aa)+b"), "."), Observation(output="a" * 60))
    assert not slow.passed and slow.error and "timed out after 1s" in slow.message
    inside = parse(
        dict(type="assert-set", mode="any", children=[dict(type="regex", pattern="(a|aa)+b")]), "."
    )
    assert run_assertion(inside, Observation(output="a" * 60)).error


def test_the_judges_own_object_wins_over_a_quoted_one() -> None:
    reply = 'The rubric says e.g. {"score": 5}. My grade: {"score": 1, "reason": "wrong city"}'
    assert parse_reply(reply) == (1.0, "wrong city")
    assert parse_winner('e.g. {"winner": "1"} ... {"winner": "2", "reason": "clearer"}') == "2"


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity"])
def test_a_score_that_is_not_finite_is_no_score(raw: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_reply(f'{{"score": {raw}, "reason": "x"}}')
    criteria = ", ".join(
        f'"{k}": {{"score": {raw}}}' for k in ("correctness", "completeness", "quality", "efficiency")
    )
    with pytest.raises(JudgeParseError):
        parse_criteria("{" + criteria + "}")


def test_weights_and_thresholds_must_be_finite() -> None:
    with pytest.raises(ValueError):
        parse(dict(type="contains", value="x", weight=math.nan), ".")
    with pytest.raises(ValueError):
        parse(dict(type="semantic_similarity", reference="x", threshold=math.inf), ".")


def test_negative_tokens_and_costs_from_a_server_are_clamped(capsys: pytest.CaptureFixture[str]) -> None:
    usage = Usage(input_tokens=-5000, output_tokens=10)
    result = RunResult(ok=True, usage=usage, cost_usd=-40000.0)
    assert usage.input_tokens == 0 and result.cost_usd == 0.0
    assert "counted as 0" in capsys.readouterr().err
