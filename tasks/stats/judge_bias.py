"""Judge bias probes: position (pairwise flips), length (partial correlation), self-preference.

Pure functions on plain numbers; the report layer gathers them from a run and words the lines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tasks.stats import statistics as st
from tasks.stats.distributions import t_two_sided_p
from tasks.stats.figures import LengthFigures, PreferenceFigures

ALPHA = 0.05
RESIDUAL_FLOOR = 1e-9


def position_flips(votes: Sequence[tuple[str | None, str | None]]) -> tuple[int, int]:
    """(pairs judged in both orders, flips) from (treatment-first, control-first) winners ("1", "2",
    "tie"). A flip: the same position won in both orders, so the preference followed the position."""
    both = [(a, b) for a, b in votes if a is not None and b is not None]
    return len(both), sum(1 for a, b in both if a == b and a in {"1", "2"})


def _residuals(y: np.ndarray, z: np.ndarray | None) -> np.ndarray:
    design = np.ones((len(y), 1)) if z is None else np.column_stack([np.ones(len(y)), z])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return np.asarray(y - design @ coef)


def length_bias(
    judge: Sequence[float], length: Sequence[float], held: Sequence[float] | None
) -> LengthFigures:
    """The judge score's partial correlation with output length, ``held`` (the assertion score)
    fixed: Pearson on the residuals of both after regressing each on ``held``, with a t-test on n - 3
    degrees of freedom; with nothing to hold (no assertion score, or it never varies) the plain
    correlation on n - 2. Also the judge points per 1,000 characters, ``held`` fixed."""
    y, x = np.asarray(judge, float), np.asarray(length, float)
    z = None if held is None else np.asarray(held, float)
    if z is not None and np.ptp(z) == 0:
        z = None
    n = len(y)
    held_fixed = "assertion score" if z is not None else "nothing (no assertion score varies)"
    df = n - (3 if z is not None else 2)
    ry, rx = (_residuals(y, z), _residuals(x, z)) if n else (y, x)
    # residuals of an exact fit are rounding noise (1e-16), not variation to correlate
    if df < 1 or rx.std() < RESIDUAL_FLOOR or ry.std() < RESIDUAL_FLOOR:
        return LengthFigures(
            n=n, partial_r=None, p=None, points_per_1000_chars=None, controlled_for=held_fixed
        )
    r = st.pearson_r(ry, rx)
    t = r * math.sqrt(df / max(1e-300, 1 - r * r))
    return LengthFigures(
        n=n,
        partial_r=r,
        p=t_two_sided_p(t, df),
        points_per_1000_chars=float((rx @ ry) / (rx @ rx) * 1000),
        controlled_for=held_fixed,
    )


def self_preference(diffs: Sequence[float], seed: int) -> PreferenceFigures:
    """Same-vendor minus other-vendor judge score per case: mean, 95% t-interval and paired p."""
    p = st.paired(list(diffs), seed=seed)
    return PreferenceFigures(n=p.n, mean_diff=p.mean, ci_low=p.ci_low, ci_high=p.ci_high, p=p.p_ttest)
