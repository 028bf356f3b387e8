"""CI gates on a report: a score threshold, a required verdict, a certified one, and no regression. Pure functions,
used by `ci` (every variant) and `skill run` (the with-skill arm)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from flows.report.logtext import change_figures
from flows.report.schema import Report
from flows.report.validity import require_valid_failures
from tasks.schema import VerdictLabel

Require = Literal["none", "better", "not-worse"]


def unmeasured(report: Report) -> list[str]:
    """Variants of which nothing was measured: every execution failed (or what the mode counts as
    nothing measured), so no score or rate stands for the artifact. Each line names the first error."""
    idle = report.idle()
    if idle is None:
        idle = {
            v: f"every execution failed ({s.error_count}/{s.executions})"
            for v, s in report.summary.items()
            if s.error_count and s.success_count == 0
        }
    lines = []
    for variant, what in idle.items():
        cause = first_error(report, variant)
        lines.append(f"{variant}: {what}, nothing was measured" + (f": {cause}" if cause else ""))
    return lines


def first_error(report: Report, variant: str) -> str | None:
    """The first line of the first error a variant's runs recorded."""
    for case in report.all_cases():
        entry = case.variants.get(variant)
        for run in [entry, *(entry.runs or [])] if entry else []:
            if run.error:
                return run.error.splitlines()[0][:300]
    return None


def regression_failures(report: Report | None) -> list[str]:
    regression = report.regression if report else None
    if regression is None:
        return []
    return [
        f"{v}: regression against {regression.previous}: {change_figures(regression.per_variant[v])}"
        for v in regression.regressed
    ]


def gate_failures(
    report: Report,
    *,
    threshold: float | None,
    require: Require,
    variants: Iterable[str] | None = None,
    score_name: str = "average composite",
    require_valid: bool = False,
) -> list[str]:
    """Why the report fails the gate (empty when it passes). ``variants``: which the threshold
    applies to (default: all)."""
    failures = unmeasured(report) + (require_valid_failures(report) if require_valid else [])
    chosen = set(report.summary) if variants is None else set(variants)
    for name, s in report.summary.items():
        score = s.avg_composite_score
        measured = s.success_count > 0  # else unmeasured() said why: the threshold would only add noise
        if threshold is not None and name in chosen and measured and (score is None or score < threshold):
            shown = "none" if score is None else f"{score:.2f}"
            failures.append(f"{name}: {score_name} {shown} < threshold {threshold:g}")
    for comp in report.comparisons:
        label = comp.verdict.label
        if require == "better" and label != VerdictLabel.BETTER:
            failures.append(f"{comp.treatment} vs {comp.control}: verdict {label}, required BETTER")
        if require == "not-worse" and label == VerdictLabel.WORSE:
            failures.append(f"{comp.treatment} vs {comp.control}: verdict WORSE")
    if require != "none" and not report.comparisons:
        failures.append(f"no comparison to gate on: {require} required")
    if report.judge_gold is not None and not report.judge_gold.reliable:
        failures.append(report.judge_gold.message)
    return failures + regression_failures(report)
