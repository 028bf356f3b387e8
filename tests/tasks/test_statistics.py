"""Every figure against scipy on generated data and against hand-worked small cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats

from tasks.stats import statistics as st
from tasks.stats.figures import Verdict


def test_t_interval_matches_scipy() -> None:
    x = np.random.default_rng(1).normal(3, 1, 12)
    ci = st.t_interval(x)
    low, high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert ci.mean == pytest.approx(x.mean()) and ci.sd == pytest.approx(x.std(ddof=1))
    assert (ci.low, ci.high) == pytest.approx((low, high))


def test_t_interval_small_n() -> None:
    assert st.t_interval([]).n == 0
    one = st.t_interval([4.0])
    assert one.mean == 4.0 and one.low is None and one.sd is None
    two = st.t_interval([1.0, 3.0])  # hand: mean 2, sd sqrt(2), half = 12.706 * sqrt(2)/sqrt(2)
    assert two.low == pytest.approx(2 - 12.7062, abs=1e-3) and two.high == pytest.approx(
        2 + 12.7062, abs=1e-3
    )


def test_welch_matches_scipy() -> None:
    a, b = [3.0, 3.5, 4.0, 3.2], [4.1, 4.6, 4.4]
    res = stats.ttest_ind(b, a, equal_var=False)
    w = st.welch(a, b)
    assert w.t == pytest.approx(res.statistic) and w.p == pytest.approx(res.pvalue)
    assert st.welch([1.0], [2.0, 3.0]).p is None


def test_pass_at_k_hand_worked() -> None:
    # n=5 runs, c=2 passes: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass^2 = C(2,2)/C(5,2) = 1/10
    assert st.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert st.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert st.pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert st.pass_at_k(3, 0, 3) == 0.0 and st.pass_at_k(3, 1, 3) == 1.0  # k = n: the seed's yes/no form
    assert st.pass_hat_k(3, 3, 3) == 1.0 and st.pass_hat_k(3, 2, 3) == 0.0
    pass_at, pass_hat = st.pass_curves([(3, 1), (3, 3)])
    assert pass_at[1] == pytest.approx((1 / 3 + 1) / 2)
    assert pass_hat[3] == pytest.approx(0.5)


def test_paired_matches_scipy() -> None:
    rng = np.random.default_rng(7)
    d = rng.normal(0.4, 1, 20)
    p = st.paired(d, seed=3)
    ref = stats.ttest_1samp(d, 0)
    assert p.p_ttest == pytest.approx(ref.pvalue)
    assert p.t == pytest.approx(ref.statistic)
    assert p.p_wilcoxon == pytest.approx(stats.wilcoxon(d).pvalue)
    assert p.d_z == pytest.approx(d.mean() / d.std(ddof=1))
    low, high = stats.t.interval(0.95, 19, loc=d.mean(), scale=stats.sem(d))
    assert (p.ci_low, p.ci_high) == pytest.approx((low, high))
    assert p.bootstrap_low < d.mean() < p.bootstrap_high
    assert st.paired(d, seed=3).bootstrap_low == p.bootstrap_low  # seeded: reproducible


def test_paired_ties_and_counts() -> None:
    p = st.paired([1.0, 0.0, -0.5, 0.0, 2.0], seed=0)
    assert (p.improved, p.regressed, p.unchanged) == (2, 1, 2)


def test_paired_all_equal_differences() -> None:
    p = st.paired([0.5, 0.5, 0.5], seed=0)
    assert p.sd == 0 and p.p_ttest is None and p.ci_low == p.ci_high == 0.5
    assert p.p_sign == pytest.approx(0.25)
    zero = st.paired([0.0, 0.0], seed=0)
    assert zero.p_wilcoxon == 1.0


def test_paired_n1_n2() -> None:
    one = st.paired([1.0], seed=0)
    assert one.n == 1 and one.mean == 1.0 and one.ci_low is None
    two = st.paired([1.0, 2.0], seed=0)
    assert two.ci_low == pytest.approx(1.5 - 12.7062 * 0.5, abs=1e-3)


def test_cluster_robust_se_hand_worked() -> None:
    d = np.array([1.0, 3.0, 2.0, 6.0])
    # residuals -2, 0, -1, 3; cluster sums a: -2, b: 2 -> meat 8; se = sqrt(2/1 * 8)/4 = 1
    se, g = st.cluster_se(d, ["a", "a", "b", "b"])
    assert (se, g) == (pytest.approx(1.0), 2)
    p = st.paired(d, seed=0, clusters=["a", "a", "b", "b"])
    assert p.se_method.startswith("cluster") and p.df == 1


def test_mcnemar_exact() -> None:
    a = [True, False, False, False, True, False]
    b = [True, True, True, True, False, True]
    m = st.mcnemar_exact(a, b)
    assert (m.b_only, m.a_only) == (4, 1)
    assert m.p == pytest.approx(stats.binomtest(4, 5, 0.5).pvalue)
    assert st.mcnemar_exact([True], [True]).p == 1.0


def test_holm_hand_worked() -> None:
    # p sorted 0.01, 0.02, 0.04 with m=3: 0.03, 0.04, 0.04 (monotone)
    assert st.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert st.holm([None, 0.2]) == [None, 0.2]


def test_power_figures() -> None:
    mde = st.minimum_detectable_effect(1.0, 20)
    assert mde is not None
    # with n=20, the paired t-test has 80% power at the MDE: check with the noncentral t
    ncp = mde / (1.0 / math.sqrt(20))
    crit = stats.t.ppf(0.975, 19)
    power = 1 - stats.nct.cdf(crit, 19, ncp)
    assert power == pytest.approx(0.8, abs=0.02)
    n = st.cases_needed(1.0, 0.5)
    assert n is not None
    assert (
        (st.minimum_detectable_effect(1.0, n) or 0) <= 0.5 < (st.minimum_detectable_effect(1.0, n - 1) or 0)
    )


def verdict(diffs: list[float], margin: float = 0.1, rates=(0.0, 0.0)) -> Verdict:
    c = st.paired(diffs, seed=0)
    return st.verdict(st.VerdictInputs(c, margin, 0.3, c.p_ttest, 25.0, rates, 0.1))


def test_verdicts() -> None:
    assert verdict([1.0]).label == "INSUFFICIENT DATA"
    assert verdict([1.0, 1.2, 0.9, 1.1, 1.3, 0.8, 1.0, 1.2]).label == "BETTER"
    assert verdict([-1.0, -1.2, -0.9, -1.1, -1.3, -0.8, -1.0, -1.2]).label == "WORSE"
    eq = verdict([0.01, -0.02, 0.0, 0.02, -0.01, 0.01, 0.0, -0.01, 0.02, -0.02])
    assert eq.label == "EQUIVALENT"
    assert verdict([1.5, -1.0, 0.5]).label == "UNDERPOWERED"
    assert verdict([0.5, 0.5, 0.5]).label == "UNDERPOWERED"  # all equal, too few for any test
    capped = verdict([1.0, 1.2, 0.9, 1.1, 1.3, 0.8, 1.0, 1.2], rates=(0.0, 0.25))
    assert capped.label == "INCONCLUSIVE" and "errored or were ungraded" in capped.reason


def test_bands() -> None:
    assert [st.band(x) for x in (12, 10, 5, 3, 0, -3, -5, -10, -12)] == [
        "USE",
        "USE",
        "LIKELY USE",
        "NEUTRAL",
        "NEUTRAL",
        "NEUTRAL",
        "LIKELY DON'T USE",
        "DON'T USE",
        "DON'T USE",
    ]


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.floats(1, 5), hs.floats(1, 5)), min_size=2, max_size=15))
def test_relabelling_flips_signs_and_keeps_p(pairs: list[tuple[float, float]]) -> None:
    d = [b - a for a, b in pairs]
    fwd, back = st.paired(d, seed=1), st.paired([-x for x in d], seed=1)
    assert back.mean is not None and fwd.mean is not None
    assert back.mean == pytest.approx(-fwd.mean, abs=1e-9)
    assert (back.improved, back.regressed) == (fwd.regressed, fwd.improved)
    for key in ("p_ttest", "p_wilcoxon", "p_sign"):
        if getattr(fwd, key) is None:
            assert getattr(back, key) is None
        else:
            assert getattr(back, key) == pytest.approx(getattr(fwd, key), rel=1e-6, abs=1e-9)
    if fwd.ci_low is not None and fwd.ci_high is not None:
        assert back.ci_low == pytest.approx(-fwd.ci_high, abs=1e-9)
