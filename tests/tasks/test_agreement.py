"""Agreement figures against hand-computed values (and the krippendorff package where installed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel
from scipy import stats

from tasks.stats.agreement import agreement, krippendorff_alpha_ordinal, rater_agreement, star


def test_alpha_hand_worked_two_categories() -> None:
    # Units (1,1), (2,2), (1,2): o11=2, o22=2, o12=o21=1; n1=n2=3, n=6; ordinal delta^2(1,2)=(6-3)^2=9.
    # D_o = 18, D_e = 2*3*3*9/5 = 32.4 -> alpha = 1 - 18/32.4 = 4/9.
    assert krippendorff_alpha_ordinal([[1, 1], [2, 2], [1, 2]]) == pytest.approx(4 / 9)


def test_alpha_perfect_and_undefined() -> None:
    assert krippendorff_alpha_ordinal([[1, 1], [3, 3], [5, 5]]) == pytest.approx(1.0)
    assert krippendorff_alpha_ordinal([[4, 4], [4, 4]]) is None  # no variation
    assert krippendorff_alpha_ordinal([[1, None], [2, None]]) is None  # nothing pairable


def test_alpha_matches_the_reference_package() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 30)
    data = np.clip(truth + rng.integers(-1, 2, (3, 30)), 1, 5).astype(float)
    data[0, 3] = np.nan
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    units = [[None if np.isnan(v) else float(v) for v in col] for col in data.T]
    assert krippendorff_alpha_ordinal(units) == pytest.approx(ref)


def test_pairwise_mad_and_pearson() -> None:
    out = as_json(agreement({"a": [1, 2, 3, 4], "b": [2, 2, 4, 5], "c": [5, 4, None, 1]}))
    ab = next(p for p in out["pairs"] if p["judges"] == ["a", "b"])
    assert ab["n"] == 4 and ab["meanAbsDiff"] == pytest.approx(0.75)
    assert ab["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 4], [2, 2, 4, 5])[0, 1])
    ac = next(p for p in out["pairs"] if p["judges"] == ["a", "c"])
    assert ac["n"] == 3 and ac["meanAbsDiff"] == pytest.approx((4 + 2 + 3) / 3)
    assert ac["pearson"] == pytest.approx(np.corrcoef([1, 2, 4], [5, 4, 1])[0, 1])


def test_alpha_matches_krippendorffs_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 observers x 12 units
    # example with missing values: ordinal alpha = 0.815 as published.
    n = None
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3]
    c = [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]
    assert round(krippendorff_alpha_ordinal([list(u) for u in zip(a, b, c, d, strict=True)]) or 0, 3) == 0.815


def test_two_rater_alpha_is_the_general_alpha() -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        human = rng.integers(1, 6, 15)
        judge = np.clip(human + rng.integers(-2, 3, 15), 1, 5)
        items = [(f"i{k}", float(h), float(j)) for k, (h, j) in enumerate(zip(human, judge, strict=True))]
        general = krippendorff_alpha_ordinal([[h, j] for _, h, j in items])
        assert as_json(rater_agreement(items, seed=0, draws=10))["krippendorffAlphaOrdinal"] == pytest.approx(
            general
        )


def test_rater_agreement_figures_and_disagreements() -> None:
    human = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    judge = [1, 2, 5, 4, 5, 1, 2, 1, 4, 4.4]  # i2 +2, i7 -2, i9 -0.6 (rounds to 4: not a star apart)
    items = [(f"i{k}", float(h), float(j)) for k, (h, j) in enumerate(zip(human, judge, strict=True))]
    out = as_json(rater_agreement(items, seed=3))
    expected = krippendorff_alpha_ordinal([[h, star(j)] for h, j in zip(human, judge, strict=True)])
    assert out["krippendorffAlphaOrdinal"] == pytest.approx(expected)
    assert [d["item"] for d in out["disagreements"]] == ["i2", "i7"]
    assert [d["diff"] for d in out["disagreements"]] == [2.0, -2.0]
    assert out["confusion"][2][4] == 1 and out["confusion"][2][0] == 1 and out["confusion"][4][3] == 1
    assert sum(map(sum, out["confusion"])) == 10
    assert out["spearman"] == pytest.approx(stats.spearmanr(human, judge).statistic)
    low, high = out["alphaCI95"]
    assert low is not None and high is not None and low <= expected <= high <= 1
    assert as_json(rater_agreement(items, seed=3)) == out  # seeded


def test_rater_agreement_perfect_and_tiny() -> None:
    perfect = as_json(rater_agreement([("a", 1, 1), ("b", 3, 3), ("c", 5, 5)], seed=0))
    assert perfect["krippendorffAlphaOrdinal"] == 1.0 and perfect["disagreements"] == []
    one = as_json(rater_agreement([("a", 2, 4)], seed=0))
    assert one["krippendorffAlphaOrdinal"] is None and one["alphaCI95"] == [None, None]
    assert star(2.5) == 3 and star(0.2) == 1 and star(7) == 5


def as_json(figures: BaseModel) -> dict[str, Any]:
    """The figures as the report writes them."""
    return figures.model_dump(mode="json", by_alias=True)
