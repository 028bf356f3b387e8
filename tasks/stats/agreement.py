"""Agreement between judges of an ensemble: mean absolute difference, Pearson r, Krippendorff's alpha.

Pure functions. Alpha is computed from the coincidence matrix with the ordinal distance metric
(Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"); missing judgements are allowed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from tasks.stats.figures import Disagreement, JudgeAgreement, JudgePair, RaterAgreement
from tasks.stats.statistics import pearson_r


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


def agreement(scores: dict[str, list[float | None]]) -> JudgeAgreement:
    """Per judge pair: MAD and Pearson on the outputs both scored; alpha over all judges."""
    judges = sorted(scores)
    pairs = []
    for a, b in itertools.combinations(judges, 2):
        both = [(x, y) for x, y in zip(scores[a], scores[b], strict=True) if x is not None and y is not None]
        xs, ys = np.array([p[0] for p in both]), np.array([p[1] for p in both])
        r: float | None = None
        if len(both) >= 3 and xs.std() > 0 and ys.std() > 0:
            r = pearson_r(xs, ys)
        pairs.append(
            JudgePair(
                judges=[a, b],
                n=len(both),
                mean_abs_diff=float(np.abs(xs - ys).mean()) if both else None,
                pearson=r if r is None or math.isfinite(r) else None,
            )
        )
    units = [list(row) for row in zip(*(scores[j] for j in judges), strict=True)]
    return JudgeAgreement(
        judges=judges, pairs=pairs, krippendorff_alpha_ordinal=krippendorff_alpha_ordinal(units)
    )


# ---------------------------------------------------------------- a judge against human scores

#: Human ratings are 1-5 stars; judge scores are rounded onto the same five categories.
STARS = (1, 2, 3, 4, 5)
AGREEMENT_DRAWS = 1000
DISAGREEMENTS_SHOWN = 10


def star(value: float) -> int:
    """A score on 1-5 as a whole star (half up), clipped to the scale."""
    return min(5, max(1, math.floor(value + 0.5)))


def _alpha_two_raters(human: np.ndarray, judge: np.ndarray) -> float | None:
    """Ordinal alpha of two complete raters on star indices 0-4 (vectorised; the same figure as
    ``krippendorff_alpha_ordinal`` on the pairs, which a test checks)."""
    o = np.zeros((5, 5))
    np.add.at(o, (human, judge), 1.0)
    o = o + o.T
    n_c = o.sum(axis=1)
    n = n_c.sum()
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    idx = np.arange(5)
    lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
    delta = (cum[hi + 1] - cum[lo] - (n_c[lo] + n_c[hi]) / 2) ** 2
    expected = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    if expected == 0:
        return None
    return float(1 - (o * delta).sum() / expected)


def rater_agreement(
    items: Sequence[tuple[str, float, float]], *, seed: int, draws: int = AGREEMENT_DRAWS
) -> RaterAgreement:
    """A judge against human (or gold) scores on the same items, each ``(item, human, judge)``.

    Krippendorff's ordinal alpha on whole stars with a seeded percentile bootstrap over items,
    Spearman's rho on the raw scores, the 5x5 confusion (rows: human 1-5, columns: judge 1-5), the
    mean absolute difference, and the items where the two differ by a star or more, largest first."""
    human = np.array([star(h) - 1 for _, h, _ in items], dtype=int)
    judge = np.array([star(j) - 1 for _, _, j in items], dtype=int)
    n = len(items)
    confusion = np.zeros((5, 5), dtype=int)
    np.add.at(confusion, (human, judge), 1)
    alpha = _alpha_two_raters(human, judge) if n >= 2 else None
    low = high = None
    if alpha is not None:
        rng = np.random.default_rng(seed)
        boot = [_alpha_two_raters(human[i], judge[i]) for i in rng.integers(0, n, size=(draws, n))]
        defined = [b for b in boot if b is not None]
        if defined:
            low, high = float(np.percentile(defined, 2.5)), float(np.percentile(defined, 97.5))
    raw_h = np.array([h for _, h, _ in items], dtype=float)
    raw_j = np.array([j for _, _, j in items], dtype=float)
    rho = p = None
    if n >= 3 and raw_h.std() > 0 and raw_j.std() > 0:
        from scipy import stats  # human ratings only: a run's report path never imports scipy.stats

        res = stats.spearmanr(raw_h, raw_j)
        rho, p = float(res.statistic), float(res.pvalue)
    gaps = sorted(
        ((item, h, j) for item, h, j in items if abs(j - h) >= 1),
        key=lambda t: (-abs(t[2] - t[1]), t[0]),
    )
    return RaterAgreement(
        n=n,
        krippendorff_alpha_ordinal=alpha,
        alpha_ci95=[low, high],
        spearman=rho,
        spearman_p=p,
        mean_abs_diff=float(np.abs(raw_h - raw_j).mean()) if n else None,
        confusion=confusion.tolist(),
        disagreements=[
            Disagreement(item=item, human=h, judge=j, diff=j - h) for item, h, j in gaps[:DISAGREEMENTS_SHOWN]
        ],
        seed=seed,
        draws=draws,
    )
