"""Bias probe figures against textbook formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tasks.stats.judge_bias import length_bias, position_flips


def test_partial_correlation_matches_the_formula() -> None:
    rng = np.random.default_rng(4)
    z = rng.normal(size=40)
    x = z + rng.normal(size=40)
    y = 0.5 * z + 0.3 * x + rng.normal(size=40)
    r = np.corrcoef([x, y, z])
    expected = (r[0, 1] - r[0, 2] * r[1, 2]) / math.sqrt((1 - r[0, 2] ** 2) * (1 - r[1, 2] ** 2))
    out = length_bias(y.tolist(), x.tolist(), z.tolist())
    assert out.partial_r == pytest.approx(expected)
    t = expected * math.sqrt(37 / (1 - expected**2))
    assert out.p == pytest.approx(2 * stats.t.sf(abs(t), 37))
    slope = np.linalg.lstsq(np.column_stack([np.ones(40), x, z]), y, rcond=None)[0][1]
    assert out.points_per_1000_chars == pytest.approx(slope * 1000)


def test_nothing_held_is_the_plain_correlation() -> None:
    y, x = [1.0, 2, 2, 4, 5], [10.0, 30, 20, 50, 40]
    out = length_bias(y, x, [3.0] * 5)  # a constant assertion score holds nothing
    assert out.controlled_for.startswith("nothing") and out.partial_r == pytest.approx(
        stats.pearsonr(y, x)[0]
    )
    assert out.p == pytest.approx(stats.pearsonr(y, x)[1])


def test_position_flips() -> None:
    votes = [("1", "1"), ("2", "2"), ("1", "2"), ("tie", "tie"), (None, "1"), ("2", "1")]
    assert position_flips(votes) == (5, 2)


def test_a_judge_that_follows_the_assertion_score_leaves_nothing_to_correlate() -> None:
    assertion = [5.0, 3.0, 5.0, 3.0, 3.0, 5.0]
    judge = [5.0 if a == 5 else 2.0 for a in assertion]  # an exact function of the held score
    out = length_bias(judge, [7.0, 40.0, 6.0, 45.0, 38.0, 5.0], assertion)
    assert out.partial_r is None and out.p is None
