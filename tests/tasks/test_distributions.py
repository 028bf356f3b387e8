"""tasks/stats/distributions.py answers what scipy.stats answers, over many drawn inputs (ties, zeros, every
size across each of Wilcoxon's three methods)."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats

from tasks.stats import distributions as dist


def close(ours: float, theirs: float) -> bool:
    return (math.isnan(ours) and math.isnan(theirs)) or math.isclose(
        ours, theirs, rel_tol=1e-9, abs_tol=1e-15
    )


def test_t_quantiles_and_tails() -> None:
    for df in (1, 2, 3, 7.5, 29, 120, 1e6):
        for q in (0.025, 0.5, 0.8, 0.975):
            assert close(dist.t_ppf(q, df), float(stats.t.ppf(q, df)))
        for x in (-3.0, 0.0, 0.4, 2.1, 8.0):
            assert close(dist.t_two_sided_p(x, df), float(2 * stats.t.sf(abs(x), df)))


def test_welch_matches_ttest_ind() -> None:
    rng = np.random.default_rng(1)
    for _ in range(300):
        a = rng.normal(0, rng.uniform(0.1, 3), size=rng.integers(2, 40)).round(rng.integers(0, 3))
        b = rng.normal(0.5, rng.uniform(0.1, 3), size=rng.integers(2, 40)).round(rng.integers(0, 3))
        if np.var(a) == 0 and np.var(b) == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # near-identical values: scipy warns, the value is what counts
            res = stats.ttest_ind(b, a, equal_var=False)
        t, p = dist.welch_t(b, a)
        assert close(t, float(res.statistic)) and close(p, float(res.pvalue)), (a, b)


def test_fair_coin_matches_binomtest() -> None:
    for n in range(1, 100):
        for k in range(n + 1):
            assert close(dist.fair_coin_p(k, n), float(stats.binomtest(k, n, 0.5).pvalue)), (k, n)
    assert dist.fair_coin_p(0, 0) == 1.0


def drawn_differences(rng: np.random.Generator, n: int) -> np.ndarray:
    """Case differences as a run makes them: often on a coarse grid (ties), sometimes with zeros."""
    kind = rng.integers(0, 3)
    if kind == 0:
        return rng.normal(0.3, 1, size=n)  # no ties, no zeros
    if kind == 1:
        return rng.integers(-4, 5, size=n).astype(float)  # ties and zeros
    return rng.normal(0.2, 1, size=n).round(1)  # some ties, the odd zero


@pytest.mark.parametrize(
    ("sizes", "draws"),
    [(range(1, 14), 4), (range(14, 51), 12), (range(51, 90), 12)],  # scipy enumerates slowly: fewer draws
    ids=["enumerated", "exact", "normal"],
)
def test_wilcoxon_matches_scipy(sizes: range, draws: int) -> None:
    rng = np.random.default_rng(sizes.start)
    checked = 0
    for n in sizes:
        for _ in range(draws):
            d = drawn_differences(rng, n)
            if not d.any():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scipy warns on small samples; the value is what counts
                theirs = float(stats.wilcoxon(d, zero_method="wilcox").pvalue)
            assert close(dist.wilcoxon_p(d), theirs), (d.tolist(), dist.wilcoxon_p(d), theirs)
            checked += 1
    assert checked > (draws - 1) * len(sizes)


def test_wilcoxon_all_zero_is_undefined() -> None:
    assert math.isnan(dist.wilcoxon_p([0.0, 0.0, 0.0]))


def test_report_modules_leave_scipy_stats_unimported() -> None:
    """The point of the module: a command's report path never pays for scipy.stats."""
    code = (
        "import sys, flows.modes.sample.report, flows.report.console, flows.report.gates; "
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
