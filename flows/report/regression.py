"""Regression tracking: each run of a named suite against the previous run of the same suite.

The previous run must have used the same model; cases are matched by sample_id (cases added or
removed since are counted, not compared). Per variant, the paired statistics of the case-level
differences (this run minus the previous one) give a verdict; WORSE is a regression.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from flows.report.entries import (
    ArtifactChange,
    ControlVerdict,
    Regression,
    RegressionVariant,
    night_outcome_of,
)
from flows.report.fingerprint import changes
from flows.report.schema import Meta, Report
from flows.report.store import read_reports
from tasks.schema import VerdictLabel
from tasks.stats import statistics as st


def suite_reports(reports_dir: Path, suite: str) -> list[Report]:
    """Every readable report of the suite, oldest first."""
    found = [r for r in read_reports(reports_dir) if r.meta.suite == suite]
    return sorted(found, key=lambda r: r.meta.timestamp)


def case_scores(report: Report) -> dict[str, dict[str, float]]:
    """variant -> sample_id -> the case's score (its mode's: a composite, a trigger rate); blind
    labels resolved."""
    out: dict[str, dict[str, float]] = {}
    for case in report.results:
        for label in case.variants:
            if (score := report.case_score(case, label)) is not None:
                out.setdefault(report.variant_name(label), {})[case.sample_id] = score
    return out


def compare_variant(
    before: dict[str, float], after: dict[str, float], report: Report, seed: int
) -> RegressionVariant:
    scale = report.scale
    shared = sorted(set(before) & set(after))
    diffs = [after[s] - before[s] for s in shared]
    paired = st.paired(diffs, seed=seed)
    verdict = st.verdict(
        st.VerdictInputs(
            comparison=paired,
            margin=scale.margin,
            min_effect=scale.min_effect,
            p_value=paired.p_ttest,
            points_per_unit=100.0 / (scale.maximum - scale.minimum),
            error_rates=(0.0, 0.0),
            max_error_rate=1.0,
        )
    )
    return RegressionVariant(
        cases=len(shared),
        cases_added=len(set(after) - set(before)),
        cases_removed=len(set(before) - set(after)),
        mean_before=sum(before[s] for s in shared) / len(shared) if shared else None,
        mean_after=sum(after[s] for s in shared) / len(shared) if shared else None,
        paired=paired,
        verdict=verdict,
        per_case={s: d for s, d in zip(shared, diffs, strict=True) if d != 0},
    )


def sizes(meta: Meta) -> dict[str, int | None] | None:
    """variant -> its artifact's size, where the mode records it (sample mode)."""
    return meta.artifact_sizes()


def artifact_changes(previous: Report, current: Report) -> dict[str, ArtifactChange]:
    """Variants (by name) in both runs whose artifact's SHA-256 differs, with the sizes recorded."""

    def by_name(report: Report, field: dict[str, Any] | None) -> dict[str, Any]:
        return {report.variant_name(label): value for label, value in (field or {}).items()}

    hashes_before = by_name(previous, previous.meta.skill_hashes)
    hashes_after = by_name(current, current.meta.skill_hashes)
    sizes_before = by_name(previous, sizes(previous.meta))
    sizes_after = by_name(current, sizes(current.meta))
    return {
        name: ArtifactChange(
            before=hashes_before[name],
            after=hashes_after[name],
            bytes_before=sizes_before.get(name),
            bytes_after=sizes_after.get(name),
        )
        for name in sorted(set(hashes_before) & set(hashes_after))
        if hashes_before[name] != hashes_after[name]
    }


def compare_runs(
    previous: Report, current: Report, *, seed: int, earlier: Sequence[Report] = ()
) -> Regression:
    """``current`` against ``previous``, variant by variant; a variant run beside its same-night control
    (``<name>@good``) is decided by that control instead, its drift read from ``earlier`` runs."""
    before, after = case_scores(previous), case_scores(current)
    per_variant = {
        variant: compare_variant(before[variant], after[variant], current, seed)
        for variant in sorted(set(before) & set(after))
        if not variant.endswith(KNOWN_GOOD)
    }
    world = changes(previous.meta.fingerprint, current.meta.fingerprint)
    controls = same_night_controls(current, after, earlier or [previous], seed, world)
    changed = artifact_changes(previous, current)
    worse = {v for v, r in per_variant.items() if r.verdict.label == VerdictLabel.WORSE and v not in controls}
    if controls:  # a night with a control: a variant whose artifact did not change moved with the world
        worse &= set(changed)
    worse |= {v for v, c in controls.items() if c.outcome in ("the skill regressed", "both")}
    return Regression(
        previous=previous.id,
        previous_timestamp=previous.meta.timestamp,
        per_variant=per_variant,
        regressed=sorted(worse),
        controls=controls,
        artifact_changes=changed,
        world_changes=world,
        canaries=canary_moves(previous, current),
    )


#: How far a canary's judged score may move between nights (on the 1-5 scale) before it counts:
#: a judge sampled above temperature 0 may move a rounding step; a changed judge moves a point.
CANARY_TOLERANCE = 0.5


def canary_moves(previous: Report, current: Report) -> list[str]:
    """The gold items both runs judged (the same gold file) whose score moved past the tolerance, or
    that one run could grade and the other not: the judge, not the artifact, changed."""
    before, after = previous.judge_gold, current.judge_gold
    if before is None or after is None or before.sha256 != after.sha256:
        return []

    def shown(score: float | None) -> str:
        return "UNGRADED" if score is None else f"{score:g}"

    moved = []
    for item in sorted(set(before.scores) & set(after.scores)):
        was, now = before.scores[item], after.scores[item]
        if (was is None) != (now is None) or (
            was is not None and now is not None and abs(now - was) > CANARY_TOLERANCE
        ):
            moved.append(f"canary {item}: judged {shown(now)}, {shown(was)} on the previous run")
    return moved


#: The name of a variant's same-night control: its last known good artifact, run beside it.
KNOWN_GOOD = "@good"
#: Where a suite's passing nights keep their artifacts, by SHA-256 (in the reports folder).
KNOWN_GOOD_STORE = ".known-good"
MOVED = (VerdictLabel.WORSE, VerdictLabel.BETTER)


def passed(report: Report) -> bool:
    """A night whose artifacts may become the known good ones: it did not regress."""
    return report.regression is None or not report.regression.regressed


def due_control(
    reports: Path, suite: str, every: int, model: str | None = None
) -> tuple[Report, Path] | None:
    """The night whose artifacts tonight's controls run (the suite's last that passed, on ``model``
    when given) and a fresh folder to stage tonight's artifacts in; None when no night passed yet or a
    control ran fewer than ``every`` nights ago."""
    nights = [r for r in suite_reports(reports, suite) if model is None or r.meta.model == model]
    good = next((r for r in reversed(nights) if passed(r)), None)
    with_control = [i for i, r in enumerate(nights) if any(v.endswith(KNOWN_GOOD) for v in r.meta.variants)]
    if good is None or (with_control and len(nights) - 1 - with_control[-1] < every - 1):
        return None
    staging = reports / ".nights" / quote(suite, safe="") / "skills"
    shutil.rmtree(staging, ignore_errors=True)
    return good, staging


def control_told(name: str, night: Report, digest: str) -> str:
    """What the night is told of one control arm it runs."""
    return (
        f"same-night control: {name}{KNOWN_GOOD}, the artifact of night {night.id} (sha256 {digest[:12]}), "
        f"runs beside {name}: its sessions or calls double, and the night reads no cache"
    )


def same_night_controls(
    current: Report,
    after: dict[str, dict[str, float]],
    earlier: Sequence[Report],
    seed: int,
    world: list[str],
) -> dict[str, ControlVerdict]:
    """Each variant run beside its control tonight: the candidate verdict (variant against control,
    tonight) and the drift verdict (the control against the same artifact on its own night)."""
    hashes = {current.variant_name(k): v for k, v in (current.meta.skill_hashes or {}).items()}
    out = {}
    for name in sorted(after):
        control = f"{name}{KNOWN_GOOD}"
        if control not in after:
            continue
        good = [r for r in earlier if hashes.get(control) in {*(r.meta.skill_hashes or {}).values()} - {None}]
        night = good[-1] if good else None
        candidate = compare_variant(after[control], after[name], current, seed)
        drift = None
        if night is not None:
            own = {night.variant_name(k): h for k, h in (night.meta.skill_hashes or {}).items()}
            then = next((v for v, h in own.items() if h == hashes.get(control)), None)
            drift = compare_variant(case_scores(night).get(str(then), {}), after[control], current, seed)
        out[name] = control_verdict(night.id if night else "unknown", candidate, drift, world)
    return out


def control_verdict(
    night: str, candidate: RegressionVariant, drift: RegressionVariant | None, world_parts: list[str]
) -> ControlVerdict:
    """The rule: the skill regressed when tonight's variant is WORSE than tonight's control; the world
    changed when the control moved (WORSE or BETTER) against its own night, or, its night unknown,
    when the fingerprint changed; both, or neither."""
    skill = candidate.verdict.label == VerdictLabel.WORSE
    moved = drift.verdict.label in MOVED if drift is not None else False
    world = moved or (drift is None and bool(world_parts))
    rule = (
        f"variant vs control tonight: {candidate.verdict.label} ({_diff(candidate)}); control vs its own "
        f"night {night}: " + (f"{drift.verdict.label} ({_diff(drift)})" if drift is not None else "not found")
    )
    if world_parts:
        rule += "; what ran changed: " + "; ".join(world_parts)
    return ControlVerdict(
        control_night=night,
        candidate=candidate,
        drift=drift,
        outcome=night_outcome_of(skill, world),
        rule=rule,
    )


def _diff(v: RegressionVariant) -> str:
    p = v.paired
    interval = (
        f", 95% CI {p.ci_low:+.2f} to {p.ci_high:+.2f}"
        if p.ci_low is not None and p.ci_high is not None
        else ""
    )
    return f"{p.mean:+.2f}{interval} over {v.cases} cases" if p.mean is not None else f"{v.cases} cases"


def regression_against_previous(reports_dir: Path, report: Report) -> Regression | None:
    """The comparison with the newest earlier run of the same suite and model, if any."""
    suite = report.meta.suite
    if not suite:
        return None
    earlier = [
        r
        for r in suite_reports(reports_dir, suite)
        if r.id != report.id
        and r.meta.model == report.meta.model
        and r.meta.timestamp < report.meta.timestamp
    ]
    if not earlier:
        return None
    return compare_runs(earlier[-1], report, seed=report.meta.seed, earlier=earlier)


@dataclass(frozen=True)
class HistoryRow:
    """One run of a suite in its history."""

    id: str
    timestamp: str
    model: str
    means: dict[str, float | None]  # variant -> its mean composite score
    verdicts: list[str]
    regressed: list[str]
    changed: list[str]  # what ran differently from the run before (its fingerprint)


def history(reports_dir: Path, suite: str) -> list[HistoryRow]:
    """One row per run of the suite: when, which model, each variant's mean, verdicts, regressions,
    and what changed in what ran since the run before it."""
    reports = suite_reports(reports_dir, suite)
    return [
        HistoryRow(
            id=report.id,
            timestamp=report.meta.timestamp,
            model=report.meta.model,
            means={report.variant_name(k): v.avg_composite_score for k, v in report.summary.items()},
            verdicts=[str(c.verdict.label) for c in report.comparisons],
            regressed=report.regression.regressed if report.regression else [],
            changed=changes(reports[i - 1].meta.fingerprint, report.meta.fingerprint) if i else [],
        )
        for i, report in enumerate(reports)
    ]
