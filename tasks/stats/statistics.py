"""Every figure of STATISTICS.md, computed in code (numpy; the tests' nulls in tasks/stats/distributions.py).
Pure functions, no Prefect.

The case is the unit of analysis: repeats of a case are averaged before any paired comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tasks.schema import VerdictLabel
from tasks.stats.distributions import Floats, fair_coin_p, t_ppf, t_two_sided_p, welch_t, wilcoxon_p
from tasks.stats.figures import McNemar, Paired, Verdict, Welch

ALPHA = 0.05
POWER = 0.8
BOOTSTRAP_DRAWS = 2000
TIE_TOLERANCE = 1e-9


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def pearson_r(x: Floats, y: Floats) -> float:
    """Pearson's r of two series that both vary (kept within [-1, 1] against rounding)."""
    return float(np.clip(np.corrcoef(x, y)[0, 1], -1.0, 1.0))


@dataclass(frozen=True)
class Interval:
    mean: float | None
    sd: float | None
    low: float | None
    high: float | None
    n: int


def t_interval(
    values: Floats, confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> Interval:
    """Mean, sample sd and the t-interval of the mean; no interval below two values. With ``bounds``
    (the scale's), the interval is cut to them: a mean of scores cannot leave the scale, and with
    two cases a raw t-interval on 0-100 reads [-19.6, 183.6]."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Interval(None, None, None, None, 0)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, None, None, None, 1)
    sd = float(x.std(ddof=1))
    half = t_ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Interval(mean, sd, low, high, n)


def welch(a: Floats, b: Floats) -> Welch:
    """Welch's t-test (unequal variances), as the seed asks: significant at p < 0.05."""
    if len(a) < 2 or len(b) < 2:
        return Welch(t=None, p=None, significant=False, note="needs at least 2 values per side")
    if np.var(a) == 0 and np.var(b) == 0:
        # scipy answers p = 0 (or NaN) here; with no spread on either side the test is undefined
        return Welch(t=None, p=None, significant=False, note="undefined: both groups have zero variance")
    t, p_value = welch_t(b, a)
    p = _finite(p_value)
    return Welch(t=_finite(t), p=p, significant=p is not None and p < ALPHA)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k runs drawn from n passes."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all k runs drawn from n pass."""
    return math.comb(c, k) / math.comb(n, k)


def pass_curves(counts: Sequence[tuple[int, int]]) -> tuple[dict[int, float], dict[int, float]]:
    """(pass@k, pass^k) averaged over cases, for every k up to the smallest n of runs."""
    ks = range(1, min((n for n, _ in counts), default=0) + 1)
    return (
        {k: float(np.mean([pass_at_k(n, c, k) for n, c in counts])) for k in ks},
        {k: float(np.mean([pass_hat_k(n, c, k) for n, c in counts])) for k in ks},
    )


def mcnemar_exact(a_pass: Sequence[bool], b_pass: Sequence[bool]) -> McNemar:
    """Exact McNemar test on the discordant pairs of paired pass/fail outcomes."""
    b_only = sum(1 for x, y in zip(a_pass, b_pass, strict=True) if y and not x)
    a_only = sum(1 for x, y in zip(a_pass, b_pass, strict=True) if x and not y)
    n = a_only + b_only
    p = fair_coin_p(b_only, n)
    return McNemar(b_only=b_only, a_only=a_only, p=p, significant=p < ALPHA)


def sign_test(diffs: Floats) -> float:
    pos = sum(1 for d in diffs if d > TIE_TOLERANCE)
    neg = sum(1 for d in diffs if d < -TIE_TOLERANCE)
    return fair_coin_p(pos, pos + neg)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (None stays None and does not count as a comparison)."""
    indexed = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(indexed)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def cluster_se(diffs: np.ndarray, clusters: Sequence[str]) -> tuple[float, int]:
    """Cluster-robust (CR1) standard error of the mean difference, and the number of clusters."""
    n = len(diffs)
    resid = diffs - diffs.mean()
    groups: dict[str, float] = {}
    for r, label in zip(resid, clusters, strict=True):
        groups[label] = groups.get(label, 0.0) + float(r)
    g = len(groups)
    if g < 2:
        return float("nan"), g
    meat = sum(v * v for v in groups.values())
    return math.sqrt(g / (g - 1) * meat) / n, g


def bootstrap_interval(
    diffs: np.ndarray, seed: int, clusters: Sequence[str] | None = None, draws: int = BOOTSTRAP_DRAWS
) -> tuple[float | None, float | None]:
    """Seeded percentile bootstrap of the mean difference, resampling cases (or whole clusters)."""
    if len(diffs) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    if clusters is None:
        idx = rng.integers(0, len(diffs), size=(draws, len(diffs)))
        means = diffs[idx].mean(axis=1)
    else:
        labels = sorted(set(clusters))
        members = [np.flatnonzero(np.asarray(clusters) == lab) for lab in labels]
        picks = rng.integers(0, len(labels), size=(draws, len(labels)))
        means = np.array([np.concatenate([diffs[members[j]] for j in row]).mean() for row in picks])
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def t_quantiles(df: int) -> float:
    return t_ppf(1 - ALPHA / 2, df) + t_ppf(POWER, df)


def minimum_detectable_effect(sd: float, n: int) -> float | None:
    """Smallest true mean difference a paired t-test finds with 80% power at alpha 0.05."""
    if n < 2:
        return None
    return t_quantiles(n - 1) * sd / math.sqrt(n)


def cases_needed(sd: float, effect: float, limit: int = 100_000) -> int | None:
    """Cases a paired t-test needs to detect ``effect`` with 80% power at alpha 0.05."""
    if effect <= 0:
        return None
    if sd == 0:
        return 6  # all differences equal: the exact sign test needs 6 to reach p < 0.05
    n = 2
    while n <= limit:
        if t_quantiles(n - 1) * sd / math.sqrt(n) <= effect:
            return n
        n = n + 1 if n < 200 else int(n * 1.1)
    return None


def paired(diffs: Floats, *, seed: int, clusters: Sequence[str] | None = None) -> Paired:
    """The primary comparison: statistics of per-case differences d_i = mean(B) - mean(A)."""
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    unchanged = int((np.abs(d) <= TIE_TOLERANCE).sum())
    mean = float(d.mean()) if n else None
    # Below two cases there is no spread: only the counts, the mean and the sign test.
    sd: float | None = None
    se: float | None = None
    df: float | None = None
    low: float | None = None
    high: float | None = None
    t: float | None = None
    p_ttest: float | None = None
    p_wilcoxon: float | None = None
    d_z: float | None = None
    boot: tuple[float | None, float | None] = (None, None)
    groups = list(clusters) if clusters is not None else []
    use_clusters = n >= 2 and 2 <= len(set(groups)) < n
    g: int | None = None
    if mean is not None and n >= 2:
        sd = float(d.std(ddof=1))
        if use_clusters:
            se, g = cluster_se(d, groups)
            df = float(g - 1)
        else:
            se, df = sd / math.sqrt(n), float(n - 1)
        low = high = mean
        if se > 0:
            half = t_ppf(1 - ALPHA / 2, df) * se
            low, high = mean - half, mean + half
            t, d_z = mean / se, mean / sd
            p_ttest = t_two_sided_p(t, df)
        p_wilcoxon = _finite(wilcoxon_p(d)) if unchanged < n else 1.0
        boot = bootstrap_interval(d, seed, groups if use_clusters else None)
    return Paired(
        n=n,
        improved=int((d > TIE_TOLERANCE).sum()),
        regressed=int((d < -TIE_TOLERANCE).sum()),
        unchanged=unchanged,
        mean=mean,
        sd=sd,
        se=se,
        ci_low=low,
        ci_high=high,
        df=df,
        bootstrap_low=boot[0],
        bootstrap_high=boot[1],
        t=t,
        p_ttest=p_ttest,
        p_wilcoxon=p_wilcoxon,
        p_sign=sign_test(d) if n else None,
        d_z=d_z,
        se_method="cluster-robust (CR1)" if use_clusters else "classical",
        clusters=g,
    )


def band(delta_points: float) -> str:
    """The seed's verdict band from the mean delta on the 0-100 scale (bands inclusive at ±10, ±3 inward)."""
    if delta_points >= 10:
        return "USE"
    if delta_points > 3:
        return "LIKELY USE"
    if delta_points >= -3:
        return "NEUTRAL"
    if delta_points > -10:
        return "LIKELY DON'T USE"
    return "DON'T USE"


@dataclass(frozen=True)
class VerdictInputs:
    comparison: Paired
    margin: float
    min_effect: float
    p_value: float | None  # the (Holm-adjusted) p of this comparison
    points_per_unit: float  # 25 on the 1-5 scale (a 4-point range), 1 on 0-100
    error_rates: tuple[float, float]  # (control, treatment): errored or ungraded share
    max_error_rate: float
    #: False where the comparison was computed on the improvement of a lower-is-better figure (a
    #: false-fire rate): the reason then quotes the figure's own difference, treatment minus control.
    higher_is_better: bool = True


#: Paired cases below which no verdict is settled: the exact sign test, which assumes nothing about
#: the spread, cannot reach p < 0.05 with fewer, and a t-test on so few rests on a normality that
#: cannot be checked. One rule for every spread, zero included.
MIN_SETTLED_CASES = 6


@dataclass(frozen=True)
class _Words:
    """A comparison in the words of the column beside it: the difference is treatment minus control
    as shown; for a lower-is-better figure the statistics were computed on its negative."""

    mean: float
    low: float | None
    high: float | None
    margin: float
    up: bool

    def ci(self) -> str:
        if self.low is None or self.high is None or f"{self.low:+.3g}" == f"{self.high:+.3g}":
            return f"mean difference {self.mean:+.3g}"  # a zero-width interval says nothing
        return f"mean difference {self.mean:+.3g}, 95% CI [{self.low:+.3g}, {self.high:+.3g}]"

    def better_side(self) -> str:
        return f"above +{self.margin:g}" if self.up else f"below -{self.margin:g}, where lower is better"

    def worse_side(self) -> str:
        return f"below -{self.margin:g}" if self.up else f"above +{self.margin:g}, where lower is better"


def _words(v: VerdictInputs, mean: float, low: float | None, high: float | None) -> _Words:
    if v.higher_is_better:
        return _Words(mean, low, high, v.margin, True)
    return _Words(-mean, None if high is None else -high, None if low is None else -low, v.margin, False)


#: A verdict's label and the sentence that gives its reason.
Labelled = tuple[VerdictLabel, str]


def _error_capped(v: VerdictInputs, clearly_worse: bool, ci_text: str) -> Labelled:
    """Too many failures in one variant: no improvement can be claimed; a clear loss still shows."""
    worst = max(v.error_rates)
    if clearly_worse:
        return VerdictLabel.WORSE, f"worse even counting failures: {ci_text}."
    return VerdictLabel.INCONCLUSIVE, (
        f"{worst:.0%} of runs errored or were ungraded in one variant (limit "
        f"{v.max_error_rate:.0%}); no improvement can be claimed ({ci_text})."
    )


def _mde(c: Paired, sd: float, n: int) -> float | None:
    """The smallest true difference the paired test finds with 80% power at alpha 0.05 (from the
    cluster-robust SE when used)."""
    if c.se_method != "classical" and c.se:
        return t_quantiles(int(c.df)) * c.se if c.df and c.df > 0 else None
    return minimum_detectable_effect(sd, n) if c.df else None


def better_power(
    mde: float | None, sd: float, margin: float, min_effect: float
) -> tuple[float | None, int | None]:
    """(the smallest effect that reads BETTER with 80% power, the cases a BETTER verdict needs at
    ``min_effect``): a BETTER verdict needs the whole interval above the margin, so the power is
    against ``effect - margin``, not against 0. No number of cases when the margin is the effect."""
    smallest = None if mde is None else mde + margin
    return smallest, cases_for_better(sd, min_effect, margin)


def cases_for_better(sd: float, effect: float, margin: float) -> int | None:
    """Cases for a BETTER verdict at a true ``effect`` with 80% power: the interval must clear
    ``margin``, and no verdict settles below :data:`MIN_SETTLED_CASES` cases."""
    if effect <= margin:
        return None
    needed = cases_needed(sd, effect - margin)
    return None if needed is None else max(needed, MIN_SETTLED_CASES)


def _degenerate(v: VerdictInputs, n: int, w: _Words, p_sign: float | None) -> Labelled:
    """Every difference equal: there is no interval, the exact sign test decides."""
    p_text = "no test" if p_sign is None else f"exact sign test p={p_sign:.3g}"
    every = f"all {n} differences equal {w.mean:+.3g} (no spread, so no interval; {p_text})"
    significant = p_sign is not None and p_sign < ALPHA
    above = w.mean > w.margin if w.up else w.mean < -w.margin
    below = w.mean < -w.margin if w.up else w.mean > w.margin
    if significant and above:
        return VerdictLabel.BETTER, f"{every}, {w.better_side()}."
    if significant and below:
        return VerdictLabel.WORSE, f"{every}, {w.worse_side()}."
    if abs(w.mean) <= w.margin:
        return VerdictLabel.EQUIVALENT, f"{every}, within ±{w.margin:g}."
    return VerdictLabel.INCONCLUSIVE, f"{every}."


def _label(v: VerdictInputs, power: tuple[float | None, int | None]) -> Labelled:
    """The label and its reason; ``power``: (the smallest effect that reads BETTER, the cases a
    BETTER verdict needs)."""
    c = v.comparison
    n, mean, sd = c.n, c.mean, c.sd or 0.0
    if n < 2 or mean is None:
        return (
            VerdictLabel.INSUFFICIENT_DATA,
            f"{n} paired case(s): at least 2 cases with results in both variants are needed.",
        )
    degenerate = sd <= TIE_TOLERANCE * max(1.0, abs(mean))  # equal differences, up to rounding
    p = c.p_sign if degenerate else v.p_value
    significant = p is not None and p < ALPHA
    low, high = c.ci_low, c.ci_high
    w = _words(v, mean, low, high)
    ci_text = w.ci()
    if max(v.error_rates) > v.max_error_rate:
        return _error_capped(v, significant and high is not None and high < -v.margin, ci_text)
    if n < MIN_SETTLED_CASES:
        return VerdictLabel.UNDERPOWERED, (
            f"{n} paired cases: fewer than {MIN_SETTLED_CASES} settle no verdict (the exact sign test "
            f"cannot reach p < 0.05 below {MIN_SETTLED_CASES}) ({ci_text})."
        )
    if degenerate or low is None or high is None:
        return _degenerate(v, n, w, p)
    return _interval_verdict(v, power, w, p, low, high)


def _interval_verdict(
    v: VerdictInputs,
    power: tuple[float | None, int | None],
    w: _Words,
    p: float | None,
    low: float,
    high: float,
) -> Labelled:
    """The verdict of data with a spread, from the t-interval and its p."""
    mean = v.comparison.mean or 0.0
    significant = p is not None and p < ALPHA
    ci_text = w.ci()
    p_text = "p unknown" if p is None else f"p={p:.3g}"
    if low > v.margin and significant:
        return VerdictLabel.BETTER, f"the whole interval lies {w.better_side()} ({p_text}): {ci_text}."
    if high < -v.margin and significant:
        return VerdictLabel.WORSE, f"the whole interval lies {w.worse_side()} ({p_text}): {ci_text}."
    if low >= -v.margin and high <= v.margin:
        return VerdictLabel.EQUIVALENT, f"the whole interval lies within ±{v.margin:g} ({p_text}): {ci_text}."
    if significant:  # the interval excludes 0 but reaches into the margin
        better = mean > 0  # the statistics are on the improvement
        shown_up = better == v.higher_is_better  # the interval as shown lies above 0
        side = "better" if better else "worse"
        edge = f"below the margin +{v.margin:g}" if shown_up else f"above the margin -{v.margin:g}"
        return (
            VerdictLabel.INCONCLUSIVE,
            f"{side} than the control ({p_text}) but the interval reaches {edge}: {ci_text}.",
        )
    smallest, needed = power
    if smallest is not None and smallest > v.min_effect:
        more = (
            f"about {needed} cases would be needed for a BETTER verdict at {v.min_effect:g}"
            if needed
            else f"no number of cases reads BETTER at {v.min_effect:g} with a margin of {v.margin:g}"
        )
        return VerdictLabel.UNDERPOWERED, (
            f"not significant ({p_text}) and the smallest effect that could read BETTER here is "
            f"{smallest:.3g} > {v.min_effect:g}; {more} ({ci_text})."
        )
    return (
        VerdictLabel.INCONCLUSIVE,
        f"not significant ({p_text}) and the interval crosses the margin ±{v.margin:g}: {ci_text}.",
    )


#: The seed's band read as advice only where the interval settles the question.
SETTLED = {VerdictLabel.BETTER, VerdictLabel.WORSE}


def verdict(v: VerdictInputs) -> Verdict:
    """BETTER / WORSE / EQUIVALENT / INCONCLUSIVE / UNDERPOWERED / INSUFFICIENT DATA, with a reason.

    The seed's band (USE .. DON'T USE, from the mean delta alone) is shown only beside BETTER or
    WORSE: elsewhere the delta may be noise (on A/A runs most bands read USE or DON'T USE), so it is
    withheld and ``band_note`` says why."""
    c = v.comparison
    power: tuple[float | None, int | None] = (None, None)
    if c.n >= 2 and c.mean is not None:
        sd = c.sd or 0.0
        power = better_power(_mde(c, sd, c.n), sd, v.margin, v.min_effect)
    label, reason = _label(v, power)
    delta = c.mean * v.points_per_unit if c.mean is not None else None
    shown = delta is not None and label in SETTLED
    return Verdict(
        label=label,
        reason=reason,
        margin=v.margin,
        min_effect=v.min_effect,
        mde=power[0],
        cases_needed=power[1],
        band=band(delta) if shown and delta is not None else None,
        delta_points=delta,
        band_note=(
            f"no band: the verdict is {label}, so the mean delta alone is no advice"
            if delta is not None and not shown
            else None
        ),
    )
