"""The betting confidence sequence: coverage at every wave, power, equivalence, input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tasks.schema import AGENTIC_SCALE, SAMPLE_SCALE
from tasks.stats.sequential import (
    ConfidenceSequence,
    bounds_for,
    confidence_paths,
    decide,
    decide_paths,
    plug_in_bets,
    record,
)

# A skewed discrete distribution of paired differences on the 1-5 scale with an exact mean.
VALUES = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
WEIGHTS = np.array([0.05, 0.15, 0.40, 0.25, 0.10, 0.05])
TRUE_MEAN = float(VALUES @ WEIGHTS)  # 0.4


def draws(seed: int, runs: int, cases: int) -> np.ndarray:
    return np.random.default_rng(seed).choice(VALUES, p=WEIGHTS, size=(runs, cases))


def covered_at_every_wave(lower: np.ndarray, upper: np.ndarray, mean: float) -> float:
    return float(np.mean(((lower <= mean) & (mean <= upper)).all(axis=1)))


def test_bounds_of_the_scales() -> None:
    assert bounds_for(SAMPLE_SCALE) == (-4.0, 4.0)
    assert bounds_for(AGENTIC_SCALE) == (-100.0, 100.0)


def test_covers_the_true_mean_at_every_wave() -> None:
    d = draws(1, 300, 200)
    lower, upper, n = confidence_paths(d, -4, 4, wave=20)
    assert list(n) == list(range(20, 201, 20))
    assert covered_at_every_wave(lower, upper, TRUE_MEAN) >= 0.93
    # the same criterion rejects the naive t-interval recomputed after every wave on the same data
    ends = n
    mean = np.cumsum(d, axis=1)[:, ends - 1] / ends
    sd = np.array([[d[r, :t].std(ddof=1) for t in ends] for r in range(d.shape[0])])
    half = stats.t.ppf(0.975, ends - 1) * sd / np.sqrt(ends)
    assert covered_at_every_wave(mean - half, mean + half, TRUE_MEAN) < 0.93


def test_covers_on_the_agentic_scale_with_horizon_bets() -> None:
    rng = np.random.default_rng(2)
    true = 7.5
    d = np.clip(rng.normal(true, 20, size=(300, 150)), -100, 100)
    true = float(np.clip(rng.normal(true, 20, size=2_000_000), -100, 100).mean())  # clipping moves it
    lower, upper, _ = confidence_paths(d, -100, 100, wave=25, horizon=150)
    assert covered_at_every_wave(lower, upper, true) >= 0.93


def test_intervals_nest_and_shrink() -> None:
    lower, upper, _ = confidence_paths(draws(3, 50, 120), -4, 4, wave=10)
    assert (np.diff(lower, axis=1) >= 0).all() and (np.diff(upper, axis=1) <= 0).all()
    assert (upper[:, -1] - lower[:, -1] < upper[:, 0] - lower[:, 0]).all()


def test_update_wave_by_wave_equals_the_vectorised_paths() -> None:
    d = draws(4, 1, 95)[0]
    lower, upper, n = confidence_paths(d[None, :], -4, 4, wave=20)
    cs = ConfidenceSequence.for_scale(SAMPLE_SCALE)
    for w, end in enumerate(n):
        before = cs
        cs = cs.update(d[w * 20 : end])
        assert before.n == (0 if w == 0 else n[w - 1])  # the old state is untouched
        assert cs.n == end and cs.waves == w + 1
        assert (cs.lower, cs.upper) == pytest.approx((lower[0, w], upper[0, w]), abs=1e-12)
    assert cs.mean == pytest.approx(d.mean())
    assert cs.update([]) is cs


def brute_force_interval(d: np.ndarray, lo: float, hi: float, alpha: float, c: float) -> tuple[float, float]:
    """The paper's definition written out as plain loops over a grid of candidate means."""
    x = (d - lo) / (hi - lo)
    mu_prev, var_prev, total, ss = 0.5, 0.25, 0.0, 0.0
    bets = []
    for t, xt in enumerate(x, start=1):
        bets.append(math.sqrt(2 * math.log(2 / alpha) / (var_prev * t * math.log(1 + t))))
        total += xt
        mu = (0.5 + total) / (t + 1)
        ss += (xt - mu) ** 2
        var_prev = (0.25 + ss) / (t + 1)
        mu_prev = mu
    del mu_prev
    kept = []
    for m in np.linspace(0, 1, 20001):
        up = down = 1.0
        ok = True
        for xt, b in zip(x, bets, strict=True):
            up *= 1 + min(b, c / m if m > 0 else math.inf) * (xt - m)
            down *= 1 - min(b, c / (1 - m) if m < 1 else math.inf) * (xt - m)
            if max(up, down) / 2 >= 1 / alpha:
                ok = False
                break
        if ok:
            kept.append(m)
    return lo + (hi - lo) * min(kept), lo + (hi - lo) * max(kept)


def test_matches_the_definition_on_a_grid() -> None:
    d = np.array([1.0, 2.0, 0.0, 1.0, 3.0, 1.0, 2.0, 1.0, 0.0, 2.0, 1.0, 2.0])
    cs = ConfidenceSequence.start(-4, 4, alpha=0.05).update(d)
    low, high = brute_force_interval(d, -4, 4, 0.05, 0.5)
    step = 8 / 20000
    assert cs.lower == pytest.approx(low, abs=step) and cs.upper == pytest.approx(high, abs=step)
    assert cs.lower <= low + 1e-9 and cs.upper >= high - 1e-9  # the conservative side of the bracket


def test_bets_are_predictable() -> None:
    x = np.random.default_rng(5).uniform(size=(1, 30))
    changed = x.copy()
    changed[0, 10:] = 1 - changed[0, 10:]
    a, b = plug_in_bets(x, 0.05), plug_in_bets(changed, 0.05)
    assert np.array_equal(a[0, :11], b[0, :11])  # bet 11 uses cases 1..10 only
    assert not np.array_equal(a[0, 11:], b[0, 11:])


def test_a_large_effect_is_found_early_both_ways() -> None:
    rng = np.random.default_rng(6)
    for sign, label in ((1, "BETTER"), (-1, "WORSE")):
        d = np.clip(np.rint(rng.normal(sign * 1.0, 1.0, size=200)), -4, 4)
        cs = ConfidenceSequence.for_scale(SAMPLE_SCALE)
        decision = None
        while decision is None and cs.n < 200:
            cs = cs.update(d[cs.n : cs.n + 20])
            decision = decide(cs, SAMPLE_SCALE.margin)
        assert decision == label and cs.n <= 60


def test_no_difference_is_not_called_a_difference() -> None:
    d = np.clip(np.rint(np.random.default_rng(7).normal(0, 1, size=(300, 200))), -4, 4)
    lower, upper, _ = confidence_paths(d, -4, 4, wave=20)
    labels = decide_paths(lower, upper, 0.0)
    assert np.mean((labels == "BETTER").any(axis=1) | (labels == "WORSE").any(axis=1)) <= 0.05


def test_equivalence_is_reachable() -> None:
    rng = np.random.default_rng(8)
    d = rng.choice([-0.5, 0.0, 0.5], p=[0.25, 0.5, 0.25], size=1200)
    cs = ConfidenceSequence.for_scale(SAMPLE_SCALE)
    decision = None
    while decision is None and cs.n < len(d):
        cs = cs.update(d[cs.n : cs.n + 50])
        decision = decide(cs, 0.25)
    assert decision == "EQUIVALENT"
    assert -0.25 <= cs.lower <= cs.upper <= 0.25


def test_decide_reads_the_interval_against_the_margin() -> None:
    base = ConfidenceSequence.start(-4, 4)
    assert decide(base, 0.1) is None  # nothing seen yet

    def seen(lower: float, upper: float) -> ConfidenceSequence:
        return ConfidenceSequence(lower, upper, n=10, waves=1, lo=-4, hi=4)

    assert decide(seen(0.2, 0.9), 0.1) == "BETTER"
    assert decide(seen(-0.9, -0.2), 0.1) == "WORSE"
    assert decide(seen(-0.05, 0.1), 0.1) == "EQUIVALENT"
    assert decide(seen(0.05, 0.9), 0.1) is None
    with pytest.raises(ValueError, match="margin"):
        decide(base, -1)


def test_inputs_are_checked() -> None:
    cs = ConfidenceSequence.for_scale(SAMPLE_SCALE).update([0.0, 1.0])
    with pytest.raises(ValueError, match=r"case 4 is 4\.5: must be a number within \[-4, 4\]"):
        cs.update([1.0, 4.5])
    with pytest.raises(ValueError, match="case 3 is nan"):
        cs.update([math.nan])
    with pytest.raises(ValueError, match="case 2 of run 2"):
        confidence_paths(np.array([[0.0, 0.0], [0.0, -101.0]]), -100, 100, wave=1)
    with pytest.raises(ValueError, match="bounds"):
        ConfidenceSequence.start(4, -4)
    with pytest.raises(ValueError, match="alpha"):
        ConfidenceSequence.start(-4, 4, alpha=1.5)
    with pytest.raises(ValueError, match="wave"):
        confidence_paths(np.zeros((1, 4)), -4, 4, wave=0)
    with pytest.raises(ValueError, match="runs x cases"):
        confidence_paths(np.zeros(4), -4, 4, wave=2)


def test_record_says_what_decided() -> None:
    rng = np.random.default_rng(9)
    strong = ConfidenceSequence.for_scale(SAMPLE_SCALE).update(
        np.clip(np.rint(rng.normal(1.5, 1, 40)), -4, 4)
    )
    rec = record(strong, 0.1, wave_size=20, cases_available=200, calls=(80, 400))
    assert rec.decision == "BETTER" and rec.stopped_early and rec.final_look is None
    assert rec.cases_used == 40 and rec.waves == 1 and rec.bounds == (-4.0, 4.0) and rec.alpha == 0.05
    weak = ConfidenceSequence.for_scale(SAMPLE_SCALE).update(np.zeros(20))
    done = record(
        weak, 0.1, wave_size=20, cases_available=20, calls=(40, 40), final_look="fixed-N verdict on all cases"
    )
    assert done.decision is None and not done.stopped_early
    assert done.final_look == "fixed-N verdict on all cases"
    # the report's part as computed: its JSON names are the report's
    dumped = done.model_dump()
    assert {"procedure", "reference", "alpha", "waves", "casesUsed", "callsFixedN"} <= set(dumped)
    assert dumped["callsUsed"] == 40 and "cases_used" not in dumped
