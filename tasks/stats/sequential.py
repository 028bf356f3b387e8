"""Anytime-valid comparison of two variants, wave by wave: a betting confidence sequence.

A benchmark run in waves (a wave = a batch of new cases) may look at its result after every wave
and stop as soon as the answer is clear. A t-interval recomputed after every wave does not allow
that: each look is another chance to be fooled, and an A/A comparison "finds" a difference far
more often than 5% of the time. A *confidence sequence* (CS) is a sequence of intervals that covers
the true mean at every time at once with probability 1 - alpha, so it may be watched continuously
and the run stopped whenever it excludes the margin.

The CS here is the hedged betting CS of Waudby-Smith & Ramdas (2023), "Estimating means of bounded
random variables by betting" (JRSS-B 86(1)), for a mean of observations bounded in [lo, hi]:

* The paired per-case differences d_i (treatment minus control, runs averaged) lie in
  [lo, hi] = [min - max, max - min] of the scale: [-4, 4] on 1-5, [-100, 100] on 0-100. They are
  rescaled to x_i in [0, 1].
* For a candidate mean m, two gamblers bet that the mean is above m (capital
  K+_t(m) = prod(1 + l_i (x_i - m))) and below m (K-_t(m) = prod(1 - l_i (x_i - m))). Under the
  true mean both capitals are nonnegative martingales, so by Ville's inequality the hedged capital
  max(K+/2, K-/2) reaches 1/alpha at *any* time with probability at most alpha.
* The CS at time t is the set of m whose hedged capital has stayed below 1/alpha at every case so
  far. K+ is nonincreasing and K- nondecreasing in m, so the set is an interval whose two ends are
  found by bisection (vectorised over many runs with numpy, for the simulations).
* The bets l_i are predictable plug-ins: they use only the cases before i. The default ("anytime")
  is the paper's l_t = sqrt(2 log(2/alpha) / (var_{t-1} t log(1 + t))); with a known largest
  number of cases N ("horizon"), l_t = sqrt(2 log(2/alpha) / (var_{t-1} N)), which is tightest
  around N. Both are truncated to c/m (resp. c/(1-m)), c = 1/2, which keeps every factor above
  1 - c > 0. Any predictable bet keeps the guarantee; the choice only moves the width.

Assumption (document it wherever a verdict is shown): the cases are i.i.d. draws from a population
of cases, the same assumption the fixed-N paired t-test makes, and the CS covers that population's
mean difference. The flow draws the order of cases with a seeded shuffle before the first wave and
feeds differences to the CS in that order (never in completion order, which can depend on the
outcome), so the order carries no information: a file that lists easy cases first cannot bias the
early looks. What the CS does not cover is a finite, fixed case set treated as the whole
population (that would need the without-replacement variant of the paper), nor drift over time
(a model endpoint that changes between waves).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from tasks.schema import Scale
from tasks.stats.figures import Sequential

Decision = Literal["BETTER", "WORSE", "EQUIVALENT"]

METHOD = "hedged betting confidence sequence"
REFERENCE = "Waudby-Smith & Ramdas (2023), Estimating means of bounded random variables by betting"
DEFAULT_ALPHA = 0.05
DEFAULT_TRUNCATION = 0.5
BISECTION_STEPS = 26  # 2^-26 of the range (1.2e-7 on -4..4): far below any margin


def bounds_for(scale: Scale) -> tuple[float, float]:
    """Range of a paired difference on ``scale``: [-4, 4] on 1-5, [-100, 100] on 0-100."""
    width = scale.maximum - scale.minimum
    return -width, width


# ---------------------------------------------------------------- the vectorised core


def plug_in_bets(x: np.ndarray, alpha: float, horizon: int | None = None) -> np.ndarray:
    """Predictable bets for observations ``x`` (runs x cases from the first, rescaled to [0, 1]).

    Bet t uses cases 1..t-1 only: the running variance estimate of the paper (prior mean 1/2,
    prior variance 1/4).
    """
    runs, n = x.shape
    t = np.arange(1, n + 1, dtype=float)  # 1-based case index
    mu = (0.5 + np.cumsum(x, axis=1)) / (t + 1)  # mu_t, uses x_1..x_t
    var = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1)  # sigma^2_t
    var_before = np.concatenate([np.full((runs, 1), 0.25), var[:, :-1]], axis=1)  # sigma^2_{t-1}
    var_before = np.maximum(var_before, 1e-12)
    scale = horizon if horizon is not None else t * np.log1p(t)
    return np.sqrt(2 * math.log(2 / alpha) / (var_before * scale))


def _sup_log_capital(x: np.ndarray, bets: np.ndarray, m: np.ndarray, side: int, c: float) -> np.ndarray:
    """max over s <= t of log K_s(m) for each run: side +1 bets above m, side -1 below."""
    mm = m[:, None]
    if side > 0:
        with np.errstate(divide="ignore"):
            cap = np.where(mm > 0, c / np.maximum(mm, 1e-300), np.inf)
        factor = 1 + np.minimum(bets, cap) * (x - mm)
    else:
        with np.errstate(divide="ignore"):
            cap = np.where(mm < 1, c / np.maximum(1 - mm, 1e-300), np.inf)
        factor = 1 - np.minimum(bets, cap) * (x - mm)
    log_k = np.cumsum(np.log(factor), axis=1)
    return np.maximum(log_k.max(axis=1), 0.0)  # capital starts at 1 (log 0) before any case


def interval_ends(x: np.ndarray, bets: np.ndarray, alpha: float, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends (on [0, 1]) of the CS after all columns of ``x``, for each run.

    Each end is bracketed by bisection and the conservative side of the bracket is returned, so
    the reported interval always contains the exact one.
    """
    runs = x.shape[0]
    threshold = math.log(2 / alpha)  # hedged with weights 1/2: K/2 >= 1/alpha
    if x.shape[1] == 0:
        return np.zeros(runs), np.ones(runs)
    # lower end: the smallest m the "above m" gambler has not beaten; m = 1 is never beaten
    rejected, accepted = np.zeros(runs), np.ones(runs)
    at_zero = _sup_log_capital(x, bets, rejected, +1, c) < threshold
    for _ in range(BISECTION_STEPS):
        mid = (rejected + accepted) / 2
        ok = _sup_log_capital(x, bets, mid, +1, c) < threshold
        accepted = np.where(ok, mid, accepted)
        rejected = np.where(ok, rejected, mid)
    lower = np.where(at_zero, 0.0, rejected)
    # upper end: the largest m the "below m" gambler has not beaten; m = 0 is never beaten
    accepted, rejected = np.zeros(runs), np.ones(runs)
    at_one = _sup_log_capital(x, bets, rejected, -1, c) < threshold
    for _ in range(BISECTION_STEPS):
        mid = (rejected + accepted) / 2
        ok = _sup_log_capital(x, bets, mid, -1, c) < threshold
        accepted = np.where(ok, mid, accepted)
        rejected = np.where(ok, rejected, mid)
    upper = np.where(at_one, 1.0, rejected)
    return lower, upper


def _rescale(diffs: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (diffs - lo) / (hi - lo)


def confidence_paths(
    diffs: np.ndarray,
    lo: float,
    hi: float,
    *,
    wave: int,
    alpha: float = DEFAULT_ALPHA,
    c: float = DEFAULT_TRUNCATION,
    horizon: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CS after every wave for many runs at once (the simulations' entry point).

    ``diffs``: runs x cases, each row in the order its cases are fed. Returns (lower, upper, n):
    lower and upper are runs x waves on the scale of ``diffs``; n holds the cases seen after
    each wave (the last wave may be short).
    """
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 2:
        raise ValueError(f"diffs: expected runs x cases, got shape {d.shape}")
    _check_params(lo, hi, alpha, c, wave, horizon)
    _check_bounds(d, lo, hi)
    x = _rescale(d, lo, hi)
    bets = plug_in_bets(x, alpha, horizon)
    ends = [*range(wave, d.shape[1], wave), d.shape[1]]
    lowers, uppers = [], []
    run_low, run_high = np.zeros(d.shape[0]), np.ones(d.shape[0])
    for t in ends:
        low, high = interval_ends(x[:, :t], bets[:, :t], alpha, c)
        run_low, run_high = np.maximum(run_low, low), np.minimum(run_high, high)
        lowers.append(run_low.copy())
        uppers.append(run_high.copy())
    lower = lo + (hi - lo) * np.stack(lowers, axis=1)
    upper = lo + (hi - lo) * np.stack(uppers, axis=1)
    return lower, upper, np.array(ends)


def _check_params(lo: float, hi: float, alpha: float, c: float, wave: int, horizon: int | None) -> None:
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds: need finite lo < hi, got [{lo}, {hi}]")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: must be between 0 and 1, got {alpha}")
    if not 0 < c < 1:
        raise ValueError(f"truncation: must be between 0 and 1, got {c}")
    if wave < 1:
        raise ValueError(f"wave: must be at least 1 case, got {wave}")
    if horizon is not None and horizon < 1:
        raise ValueError(f"horizon: must be at least 1 case, got {horizon}")


def _check_bounds(d: np.ndarray, lo: float, hi: float, *, first_case: int = 1, runs: bool = True) -> None:
    flat = d.ravel()
    bad = np.flatnonzero(~np.isfinite(flat) | (flat < lo) | (flat > hi))
    if bad.size:
        i = int(bad[0])
        case = first_case + i % d.shape[-1]
        where = f"case {case}" + (f" of run {i // d.shape[-1] + 1}" if runs else "")
        raise ValueError(
            f"difference of {where} is {float(flat[i])!r}: must be a number within [{lo:g}, {hi:g}]"
        )


# ---------------------------------------------------------------- the wave-by-wave API


@dataclass(frozen=True)
class ConfidenceSequence:
    """The CS after the waves seen so far; ``update`` returns the next one (nothing mutates).

    Start with ``ConfidenceSequence.start(lo, hi)`` (or ``.for_scale(SAMPLE_SCALE)``), then
    ``cs = cs.update(wave_diffs)`` after every wave, feeding each wave's differences in the
    pre-drawn case order.
    """

    lower: float
    upper: float
    n: int
    waves: int
    lo: float
    hi: float
    alpha: float = DEFAULT_ALPHA
    truncation: float = DEFAULT_TRUNCATION
    horizon: int | None = None
    history: tuple[float, ...] = field(default=(), repr=False)

    @classmethod
    def start(
        cls,
        lo: float,
        hi: float,
        *,
        alpha: float = DEFAULT_ALPHA,
        truncation: float = DEFAULT_TRUNCATION,
        horizon: int | None = None,
    ) -> ConfidenceSequence:
        _check_params(lo, hi, alpha, truncation, 1, horizon)
        return cls(lo, hi, 0, 0, lo, hi, alpha, truncation, horizon)

    @classmethod
    def for_scale(
        cls, scale: Scale, *, alpha: float = DEFAULT_ALPHA, horizon: int | None = None
    ) -> ConfidenceSequence:
        lo, hi = bounds_for(scale)
        return cls.start(lo, hi, alpha=alpha, horizon=horizon)

    def update(self, diffs: Sequence[float] | np.ndarray) -> ConfidenceSequence:
        """The CS after one more wave of per-case differences (an empty wave changes nothing)."""
        new = np.asarray(diffs, dtype=float).reshape(-1)
        if new.size == 0:
            return self
        _check_bounds(new[None, :], self.lo, self.hi, first_case=self.n + 1, runs=False)
        history = self.history + tuple(float(v) for v in new)
        x = _rescale(np.asarray(history)[None, :], self.lo, self.hi)
        bets = plug_in_bets(x, self.alpha, self.horizon)
        low, high = interval_ends(x, bets, self.alpha, self.truncation)
        span = self.hi - self.lo
        lower = max(self.lower, self.lo + span * float(low[0]))
        upper = min(self.upper, self.lo + span * float(high[0]))
        if lower > upper:  # the data contradict every mean (probability <= alpha): a point
            lower = upper = (lower + upper) / 2
        return replace(self, lower=lower, upper=upper, n=len(history), waves=self.waves + 1, history=history)

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.history)) if self.history else None


def decide(cs: ConfidenceSequence, margin: float) -> Decision | None:
    """BETTER / WORSE / EQUIVALENT once the CS settles the question against ``margin``; None: go on."""
    if margin < 0:
        raise ValueError(f"margin: must be >= 0, got {margin}")
    if cs.n == 0:
        return None
    if cs.lower > margin:
        return "BETTER"
    if cs.upper < -margin:
        return "WORSE"
    if cs.lower >= -margin and cs.upper <= margin:
        return "EQUIVALENT"
    return None


def decide_paths(lower: np.ndarray, upper: np.ndarray, margin: float) -> np.ndarray:
    """``decide`` over runs x waves arrays: an array of "BETTER" / "WORSE" / "EQUIVALENT" / ""."""
    out = np.full(lower.shape, "", dtype=object)
    equivalent = (lower >= -margin) & (upper <= margin)
    out[equivalent] = "EQUIVALENT"
    out[upper < -margin] = "WORSE"
    out[lower > margin] = "BETTER"
    return out


# ---------------------------------------------------------------- what the report records


def record(
    cs: ConfidenceSequence,
    margin: float,
    *,
    wave_size: int,
    cases_available: int | None,
    calls: tuple[int, int],
    final_look: str | None = None,
) -> Sequential:
    """What produced a verdict at a sequential run's end (after the last wave it ran): enough for a
    reader to redo it, and to judge it. ``calls``: (executions made, those the fixed-N run makes)."""
    decision = decide(cs, margin)
    exhausted = cases_available is not None and cs.n >= cases_available
    bets = (
        f"predictable plug-in, anytime (t log(1+t)), truncation {cs.truncation:g}"
        if cs.horizon is None
        else f"predictable plug-in tuned for {cs.horizon} cases, truncation {cs.truncation:g}"
    )
    return Sequential(
        procedure=METHOD,
        reference=REFERENCE,
        alpha=cs.alpha,
        margin=margin,
        bounds=(cs.lo, cs.hi),
        bets=bets,
        wave_size=wave_size,
        waves=cs.waves,
        cases_used=cs.n,
        cases_available=cases_available,
        stopped_early=decision is not None and not exhausted,
        decision=decision,
        lower=cs.lower,
        upper=cs.upper,
        final_look=None if decision is not None else final_look,
        assumption="cases are i.i.d. draws from a population of cases, fed in a seeded random order",
        calls_used=calls[0],
        calls_fixed_n=calls[1],
    )
