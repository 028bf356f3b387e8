"""Agreement between judges of an ensemble: mean absolute difference, Pearson r, Krippendorff's alpha.

Pure functions. Alpha is computed from the coincidence matrix with the ordinal distance metric
(Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"); missing judgements are allowed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats


def krippendorff_alpha_ordinal(units: Sequence[Sequence[float | None]]) -> float | None:
    """Alpha over units (one row per judged output, one value per judge, None where missing)."""
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [u for u in pairable if len(u) >= 2]
    values = sorted({v for u in pairable for v in u})
    if len(values) < 2:
        return None  # no variation at all: alpha is undefined
    index = {v: i for i, v in enumerate(values)}
    k = len(values)
    o = np.zeros((k, k))
    for u in pairable:
        m = len(u)
        for a, b in itertools.permutations(range(m), 2):
            o[index[u[a]], index[u[b]]] += 1.0 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    delta = np.zeros((k, k))
    for c in range(k):
        for d in range(c, k):
            dist = (n_c[c : d + 1].sum() - (n_c[c] + n_c[d]) / 2) ** 2
            delta[c, d] = delta[d, c] = dist
    observed = (o * delta).sum()
    expected = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    if expected == 0:
        return None
    return float(1 - observed / expected)


def agreement(scores: dict[str, list[float | None]]) -> dict[str, Any]:
    """Per judge pair: MAD and Pearson on the outputs both scored; alpha over all judges."""
    judges = sorted(scores)
    pairs = []
    for a, b in itertools.combinations(judges, 2):
        both = [(x, y) for x, y in zip(scores[a], scores[b], strict=True) if x is not None and y is not None]
        xs, ys = np.array([p[0] for p in both]), np.array([p[1] for p in both])
        r: float | None = None
        if len(both) >= 3 and xs.std() > 0 and ys.std() > 0:
            r = float(stats.pearsonr(xs, ys).statistic)
        pairs.append(
            {
                "judges": [a, b],
                "n": len(both),
                "meanAbsDiff": float(np.abs(xs - ys).mean()) if both else None,
                "pearson": r if r is None or math.isfinite(r) else None,
            }
        )
    units = [list(row) for row in zip(*(scores[j] for j in judges), strict=True)]
    return {"judges": judges, "pairs": pairs, "krippendorffAlphaOrdinal": krippendorff_alpha_ordinal(units)}
