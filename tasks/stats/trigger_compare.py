"""Two trigger descriptions compared: each metric's difference per part (all, train, holdout) with
its interval and verdict, the overfitting warnings, and the decision whether a tuned description
is kept. The figures of one variant come from ``tasks/stats/trigger_stats.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from executors.schema import Frozen
from tasks.schema import VerdictLabel
from tasks.stats.figures import Paired, Verdict
from tasks.stats.statistics import VerdictInputs, paired, verdict
from tasks.stats.trigger_stats import (
    DEFAULT_MARGIN,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_EFFECT,
    PARTS,
    ListingShift,
    Trial,
    fire_rate,
    group_by_query,
)

# ---------------------------------------------------------------- description A/B


class MetricComparison(Frozen):
    """A paired comparison of one rate over the queries both variants have counted sessions for.

    ``difference`` is treatment minus control. The statistics and the verdict are computed on the
    improvement (the difference for recall, its negative for the false-fire rate), so BETTER always
    means the treatment's description is the better one."""

    metric: str  # "recall" | "false_fire"
    higher_is_better: bool
    queries: int
    control: float | None
    treatment: float | None
    difference: float | None
    comparison: Paired  # on the improvement
    verdict: Verdict


class PartComparison(Frozen):
    part: str  # "all" | "train" | "holdout"
    recall: MetricComparison
    false_fire: MetricComparison


class VariantComparison(Frozen):
    control: str
    treatment: str
    skill: str | None  # None: pooled over the candidates
    margin: float
    error_rates: tuple[float, float]  # (control, treatment): sessions that did not count
    parts: dict[str, PartComparison]
    overfit: bool
    warnings: tuple[str, ...]
    seed: int


def _rates(
    trials: Sequence[Trial], skills: Sequence[str], skill: str | None, should_fire: bool
) -> dict[str, float]:
    """Per query, the rate the metric averages: P(skill fired) on its should-fire or should-not
    queries; pooled (skill None): P(expected skill fired) / P(any candidate fired on an expect-none query)."""
    out = {}
    for qid, sessions in group_by_query(trials).items():
        expect = sessions[0].expect
        if skill is None:
            if should_fire != (expect is not None):
                continue
            rate = fire_rate(sessions, expect, skills)
        else:
            if should_fire != (expect == skill):
                continue
            rate = fire_rate(sessions, skill, skills)
        if rate is not None:
            out[qid] = rate
    return out


def _compare_metric(
    metric: str,
    control: Sequence[Trial],
    treatment: Sequence[Trial],
    skills: Sequence[str],
    skill: str | None,
    *,
    margin: float,
    min_effect: float,
    max_error_rate: float,
    error_rates: tuple[float, float],
    seed: int,
) -> MetricComparison:
    should_fire = metric == "recall"
    a = _rates(control, skills, skill, should_fire)
    b = _rates(treatment, skills, skill, should_fire)
    common = sorted(set(a) & set(b))
    diffs = np.asarray([b[q] - a[q] for q in common], float)
    sign = 1.0 if should_fire else -1.0
    comparison = paired(sign * diffs, seed=seed)
    judged = verdict(
        VerdictInputs(
            comparison=comparison,
            margin=margin,
            min_effect=min_effect,
            p_value=comparison.p_ttest,
            points_per_unit=100.0,
            error_rates=error_rates,
            max_error_rate=max_error_rate,
            higher_is_better=should_fire,
        )
    )
    return MetricComparison(
        metric=metric,
        higher_is_better=should_fire,
        queries=len(common),
        control=float(np.mean([a[q] for q in common])) if common else None,
        treatment=float(np.mean([b[q] for q in common])) if common else None,
        difference=float(diffs.mean()) if common else None,
        comparison=comparison,
        verdict=judged,
    )


def _error_rate(trials: Sequence[Trial]) -> float:
    return sum(1 for t in trials if not t.counted) / len(trials) if trials else 0.0


def compare_variants(
    trials: Sequence[Trial],
    skills: Sequence[str],
    control: str,
    treatment: str,
    *,
    skill: str | None = None,
    margin: float = DEFAULT_MARGIN,
    min_effect: float = DEFAULT_MIN_EFFECT,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    seed: int = 0,
) -> VariantComparison:
    """Description A/B: recall and false-fire rate of ``treatment`` against ``control``, paired by
    query, on all queries and separately on the train and holdout parts (trials' ``part``).

    ``overfit`` is raised when a metric improves by more than the margin on train but not on holdout
    (the description was tuned to the queries it was tuned on)."""
    a = [t for t in trials if t.variant == control]
    b = [t for t in trials if t.variant == treatment]
    if not a or not b:
        missing = control if not a else treatment
        raise ValueError(f"no trials of variant {missing!r}")
    parts: dict[str, PartComparison] = {}
    for part in PARTS:
        pa = [t for t in a if part == "all" or t.part == part]
        pb = [t for t in b if part == "all" or t.part == part]
        if part != "all" and not (pa or pb):
            continue
        rates = (_error_rate(pa), _error_rate(pb))
        kwargs: dict[str, Any] = {
            "margin": margin,
            "min_effect": min_effect,
            "max_error_rate": max_error_rate,
            "error_rates": rates,
            "seed": seed,
        }
        parts[part] = PartComparison(
            part=part,
            recall=_compare_metric("recall", pa, pb, skills, skill, **kwargs),
            false_fire=_compare_metric("false_fire", pa, pb, skills, skill, **kwargs),
        )
    warnings = _overfit_warnings(parts, margin)
    overfit = any(w.startswith("overfit") for w in warnings)
    return VariantComparison(
        control=control,
        treatment=treatment,
        skill=skill,
        margin=margin,
        error_rates=(_error_rate(a), _error_rate(b)),
        parts=parts,
        overfit=overfit,
        warnings=tuple(warnings),
        seed=seed,
    )


def _overfit_warnings(parts: dict[str, PartComparison], margin: float) -> list[str]:
    """A metric that gains more than the margin on train but not on holdout: the description was
    tuned to the queries it was tuned on."""
    if "train" not in parts:
        return []
    if "holdout" not in parts:
        return ["no holdout queries: overfitting to the queries cannot be checked"]
    warnings = []
    for metric in ("recall", "false_fire"):
        gain_train = _improvement(getattr(parts["train"], metric))
        gain_hold = _improvement(getattr(parts["holdout"], metric))
        if gain_train is not None and gain_train > margin and (gain_hold is None or gain_hold <= margin):
            shown = "no data" if gain_hold is None else f"{gain_hold:+.3f}"
            warnings.append(
                f"overfit: {metric} improves by {gain_train:+.3f} on train but {shown} on holdout "
                f"(margin {margin:g}); the new description may fit the training queries only"
            )
    return warnings


def _improvement(m: MetricComparison) -> float | None:
    if m.difference is None:
        return None
    return m.difference if m.higher_is_better else -m.difference


# ---------------------------------------------------------------- description tuning


class DescriptionDecision(Frozen):
    """Whether a rewritten description of ``skill`` (variant ``treatment``) is kept over the current
    one (``control``): it must win on the holdout queries, hurt no other skill's recall beyond the
    margin, and push no other description out of the listing."""

    skill: str
    control: str
    treatment: str
    kept: bool
    reasons: tuple[str, ...]
    recall_change_train: float | None  # the skill's recall, treatment minus control, on the train queries
    recall_change_holdout: float | None  # and on the holdout queries
    description: str = ""  # the treatment's description


def _difference(metric: MetricComparison) -> str:
    return "no data" if metric.difference is None else f"{metric.difference:+.2f}"


def description_decision(
    trials: Sequence[Trial],
    skills: Sequence[str],
    control: str,
    treatment: str,
    skill: str,
    shifts: Sequence[ListingShift] = (),
    description: str = "",
    **settings: Any,
) -> DescriptionDecision:
    """The keep rule (``settings``: margin, min_effect, max_error_rate, seed as for
    :func:`compare_variants`)."""
    margin = settings.get("margin", DEFAULT_MARGIN)
    comp = compare_variants(trials, skills, control, treatment, skill=skill, **settings)
    train, hold = comp.parts.get("train"), comp.parts.get("holdout")
    reasons: list[str] = []
    if hold is None:
        reasons.append(
            "no holdout queries: a description is kept only when it wins on queries it was not written for"
        )
    else:
        verdict = hold.recall.verdict.label
        if verdict != VerdictLabel.BETTER:
            shown = f"; on train {_difference(train.recall)}" if train is not None else ""
            reasons.append(f"holdout recall {_difference(hold.recall)}: {verdict}{shown}")
        if hold.false_fire.verdict.label == VerdictLabel.WORSE:
            reasons.append(f"holdout false-fire rate {_difference(hold.false_fire)}: WORSE")
    for other in (s for s in skills if s != skill):
        recall = (
            compare_variants(trials, skills, control, treatment, skill=other, **settings).parts["all"].recall
        )
        if recall.difference is not None and recall.difference < -margin:
            reasons.append(f"lowers {other}'s recall by {-recall.difference:.2f} (margin {margin:g})")
    reasons += [f"pushes {x.skill}'s description out of the listing" for x in shifts]
    kept = not reasons
    if kept and hold is not None:
        reasons.append(
            f"holdout recall {_difference(hold.recall)}: BETTER; no other skill's recall falls beyond the "
            "margin; no description pushed out of the listing"
        )
    return DescriptionDecision(
        skill=skill,
        control=control,
        treatment=treatment,
        kept=kept,
        reasons=(*reasons, *comp.warnings),
        recall_change_train=train.recall.difference if train is not None else None,
        recall_change_holdout=hold.recall.difference if hold is not None else None,
        description=description,
    )
