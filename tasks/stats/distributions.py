"""The few null distributions the report uses, on ``scipy.special``: Student's t, the fair coin's
binomial and Wilcoxon's signed-rank statistic.

Each answers what ``scipy.stats`` answers (``t.ppf``, ``2 * t.sf(|t|)``, ``ttest_ind(equal_var=False)``,
``binomtest(k, n, 0.5)``, ``wilcoxon(d)`` with its defaults; tests/tasks/test_distributions.py
holds them to it) without importing ``scipy.stats``: that import builds every distribution scipy
has and costs 0.5 s of CPU, a tenth of a 100-sample command on these machines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

Floats = Sequence[float] | np.ndarray

WILCOXON_EXACT_MAX = 50  # scipy's "auto": the exact null up to 50 differences, the normal one beyond
WILCOXON_ENUMERATE_MAX = 13  # with ties or zeros, every sign flip is enumerated up to 2**13 of them


def t_ppf(q: float, df: float) -> float:
    """The q-quantile of Student's t with ``df`` degrees of freedom."""
    return float(special.stdtrit(df, q))


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    return 2 * float(special.stdtr(df, -abs(t)))


def welch_t(b: Floats, a: Floats) -> tuple[float, float]:
    """Welch's t statistic of mean(b) - mean(a) and its two-sided p (unequal variances)."""
    x, y = np.asarray(b, float), np.asarray(a, float)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se2 = vx + vy
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float((x.mean() - y.mean()) / np.sqrt(se2))
        df = float(se2**2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)))
    return t, t_two_sided_p(t, df)


def fair_coin_p(k: int, n: int) -> float:
    """Two-sided exact binomial test of k successes in n against p = 1/2: the null is symmetric, so
    the outcomes as unlikely as k are k's tail and its mirror."""
    if n == 0 or 2 * k == n:
        return 1.0
    return min(1.0, 2 * float(special.bdtr(min(k, n - k), n, 0.5)))


def wilcoxon_p(diffs: Floats) -> float:
    """Two-sided p of Wilcoxon's signed-rank test (zero differences dropped, average ranks for
    ties). As scipy's default: the exact null for up to 50 differences without ties or zeros, all
    sign flips enumerated for up to 13 with them, else the normal approximation corrected for
    ties, without continuity correction. NaN when every difference is zero."""
    d = np.asarray(diffs, float)
    nonzero = d[d != 0]
    count = len(nonzero)
    if count == 0:
        return math.nan
    _, group, sizes = np.unique(np.abs(nonzero), return_inverse=True, return_counts=True)
    ranks = (np.cumsum(sizes) - (sizes - 1) / 2)[group]
    r_plus = float(ranks[nonzero > 0].sum())
    clean = count == len(d) and bool((sizes == 1).all())
    if len(d) <= WILCOXON_EXACT_MAX and (clean or len(d) <= WILCOXON_ENUMERATE_MAX):
        return _signed_rank_exact(ranks, r_plus)
    mean = count * (count + 1) / 4
    ties = float((sizes.astype(float) ** 3 - sizes).sum())
    se = math.sqrt((count * (count + 1) * (2 * count + 1) - ties / 2) / 24)
    return math.erfc(abs(r_plus - mean) / se / math.sqrt(2)) if se > 0 else math.nan


def _signed_rank_exact(ranks: np.ndarray, r_plus: float) -> float:
    """2 x the smaller tail of the sum of ranks under every sign assignment, each equally likely.
    Ranks are whole or half numbers, so the sums are counted on doubled ranks, exactly."""
    doubled = np.rint(2 * ranks).astype(int)
    ways = np.zeros(int(doubled.sum()) + 1)
    ways[0] = 1.0
    for r in doubled:
        ways[r:] = ways[r:] + ways[: len(ways) - r]  # the right side is built before it is stored
    total = ways.sum()
    observed = round(2 * r_plus)
    below, above = ways[: observed + 1].sum() / total, ways[observed:].sum() / total
    return float(min(1.0, 2 * min(below, above)))
