"""Agreement figures against hand-computed values (and the krippendorff package where installed)."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.agreement import agreement, krippendorff_alpha_ordinal


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
    out = agreement({"a": [1, 2, 3, 4], "b": [2, 2, 4, 5], "c": [5, 4, None, 1]})
    ab = next(p for p in out["pairs"] if p["judges"] == ["a", "b"])
    assert ab["n"] == 4 and ab["meanAbsDiff"] == pytest.approx(0.75)
    assert ab["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 4], [2, 2, 4, 5])[0, 1])
    ac = next(p for p in out["pairs"] if p["judges"] == ["a", "c"])
    assert ac["n"] == 3 and ac["meanAbsDiff"] == pytest.approx((4 + 2 + 3) / 3)
    assert ac["pearson"] == pytest.approx(np.corrcoef([1, 2, 4], [5, 4, 1])[0, 1])
