"""A named suite over its runs: each variant's score with its interval, each run's verdict against
the run before it (regressions stand out), and cost and error rate over time.

``trend_entry`` reduces one report to what the suite page needs; the runs list caches it with the
rest of a run's summary, so the page reads no report twice. Blind labels are resolved to the
variants' names, as ``history --suite`` does: a trend needs the same name from run to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from flows.report import chart_kit, charts
from flows.report.logtext import artifact_change_text, change_figures
from flows.report.schema import Report
from tasks.schema import VerdictLabel
from tasks.stats.models import Model

MARKS = {str(VerdictLabel.WORSE): "worse", str(VerdictLabel.BETTER): "better"}


class TrendVariant(Model):
    """One variant in one run of a suite, under its name."""

    mean: float | None
    """mean score"""
    low: float | None
    """lower end of its 95% interval"""
    high: float | None
    """upper end"""
    errors: int
    """executions that errored"""
    executions: int
    """executions in all"""
    error_rate: float
    """errored share"""
    cost: float
    """what its executions cost"""
    change: str | None
    """the verdict against the suite's previous run"""
    delta: float | None
    """its mean change"""
    reason: str | None
    """the verdict's reason"""
    figures: str | None
    """the change in figures"""
    artifact: str | None
    """how the artifact changed since the previous run"""


class Trend(Model):
    """What the suite page needs of one run."""

    variants: dict[str, TrendVariant]
    """variant name -> its figures"""
    previous: str | None
    """the suite's run before this one"""
    regressed: list[str]
    """variants significantly worse than in that run"""
    scale: tuple[float, float, str]
    """the scale's minimum, maximum and name"""


def trend_entry(report: Report) -> Trend:
    """Per variant: mean, interval, errors, cost, and the verdict against the suite's previous run."""
    regression = report.regression
    variants: dict[str, TrendVariant] = {}
    for label, s in report.summary.items():
        name = report.variant_name(label)
        change = regression.per_variant.get(name) if regression else None
        low, high = s.interval
        artifact = regression.artifact_changes.get(name) if regression else None
        variants[name] = TrendVariant(
            mean=s.avg_composite_score,
            low=low,
            high=high,
            errors=s.error_count,
            executions=s.executions,
            error_rate=s.error_rate,
            cost=s.total_cost_usd,
            change=str(change.verdict.label) if change else None,
            delta=change.paired.mean if change else None,
            reason=change.verdict.reason if change else None,
            figures=change_figures(change) if change else None,
            artifact=artifact_change_text(artifact) if artifact else None,
        )
    return Trend(
        variants=variants,
        previous=regression.previous if regression else None,
        regressed=list(regression.regressed) if regression else [],
        scale=(report.scale.minimum, report.scale.maximum, report.scale.name),
    )


class RunRow(Model):
    """One run in the runs list (the server's index and a suite's page)."""

    id: str
    """the report's id"""
    timestamp: str
    """when the run started"""
    mode: str
    """sample, agentic or trigger"""
    variants: list[str]
    """its variants (labels in a blind run)"""
    model: str
    """the model"""
    executor: str
    """the executor or agent CLI"""
    suite: str | None
    """the suite it belongs to"""
    samples: int
    """cases"""
    cost: float
    """calls and judge, USD"""
    verdicts: list[str]
    """each comparison's verdict, in words"""
    labels: list[str]
    """each comparison's verdict label"""
    blind: bool
    """a blind run"""
    errors: int
    """executions that errored"""
    executions: int
    """executions in all"""
    flow_run: str | None
    """the run's page in the Prefect UI"""
    trend: Trend | None
    """for a suite's run: what its page needs"""


def suite_runs(runs: Sequence[RunRow], suite: str) -> list[SuiteRow]:
    """The runs list's rows of one suite, oldest first."""
    rows = [SuiteRow(r, r.trend) for r in runs if r.suite == suite and r.trend is not None]
    return sorted(rows, key=lambda r: r.run.timestamp)


@dataclass(frozen=True)
class SuiteRow:
    """A suite's run: its row, with the trend a suite's run always has."""

    run: RunRow
    trend: Trend


def run_label(row: SuiteRow) -> str:
    """A short x-axis label: month-day hour:minute."""
    return row.run.timestamp[5:16].replace("T", " ")


def variant_names(rows: Sequence[SuiteRow]) -> list[str]:
    names: list[str] = []
    for r in rows:
        names += [n for n in r.trend.variants if n not in names]
    return names


def score_point(row: SuiteRow, name: str) -> charts.TrendPoint:
    v = row.trend.variants.get(name)
    if v is None or v.mean is None:
        return charts.TrendPoint(None)
    tip = f"{run_label(row)} ({row.run.id}): mean {v.mean:.2f}"
    if v.low is not None and v.high is not None:
        tip += f", 95% interval {v.low:.2f} to {v.high:.2f}"
    if v.change:
        delta = "" if v.delta is None else f" ({v.delta:+.2f})"
        tip += f"; against the run before: {v.change}{delta}"
    return charts.TrendPoint(v.mean, v.low, v.high, MARKS.get(v.change or "", ""), tip)


def score_chart(rows: Sequence[SuiteRow], names: Sequence[str]) -> Markup:
    scales = [r.trend.scale for r in rows]
    lo, hi = min(s[0] for s in scales), max(s[1] for s in scales)
    regressions = sum(bool(r.trend.regressed) for r in rows)
    subtitle = (
        f"{regressions} run{'s' if regressions != 1 else ''} with a regression"
        if regressions
        else "no regression in any run"
    )
    return charts.trend(
        {n: [score_point(r, n) for r in rows] for n in names},
        [run_label(r) for r in rows],
        "Is each variant holding its score from run to run?",
        y_label=f"mean score ({scales[-1][2]})",
        y_range=(lo, hi),
        subtitle=subtitle,
        marks=True,
    )


def cost_chart(rows: Sequence[SuiteRow]) -> Markup:
    title = "What does each run cost?"
    costs = [r.run.cost for r in rows]
    if max(costs) == 0:
        return chart_kit.note(title, "Every run cost $0 (a free, local or unpriced model).")
    _, top = chart_kit.nice_range(0, max(costs))
    points = [charts.TrendPoint(c, tip=f"{run_label(r)}: ${c:.4f}") for r, c in zip(rows, costs, strict=True)]
    return charts.trend(
        {"calls and judge": points},
        [run_label(r) for r in rows],
        title,
        y_label="cost per run (USD)",
        y_range=(0, top),
        subtitle=f"${sum(costs):.4f} over {len(rows)} runs",
    )


def error_chart(rows: Sequence[SuiteRow], names: Sequence[str]) -> Markup:
    series: dict[str, list[charts.TrendPoint]] = {}
    worst = 0.0
    for n in names:
        series[n] = []
        for r in rows:
            v = r.trend.variants.get(n)
            rate = None if v is None else v.error_rate
            worst = max(worst, rate or 0.0)
            tip = "" if v is None else f"{run_label(r)}: {v.errors} of {v.executions} executions errored"
            series[n].append(charts.TrendPoint(rate, tip=tip))
    _, top = chart_kit.nice_range(0, max(worst, 0.05))
    return charts.trend(
        series,
        [run_label(r) for r in rows],
        "How often do the calls fail?",
        y_label="executions that errored",
        y_range=(0, top),
        y_format=lambda v: f"{v * 100:.0f}%" if top >= 0.1 else f"{v * 100:.1f}%",
        subtitle="no errors in any run" if worst == 0 else f"worst run: {worst:.0%} errored",
    )


def suite_view(runs: Sequence[RunRow], suite: str) -> dict[str, Any]:
    """The suite page's context: its runs (newest first in the table), variant names and charts."""
    rows = suite_runs(runs, suite)
    names = variant_names(rows)
    return {
        "suite": suite,
        "rows": [r.run for r in reversed(rows)],
        "names": names,
        "models": sorted({r.run.model for r in rows}),
        "charts": {
            "score": score_chart(rows, names),
            "cost": cost_chart(rows),
            "errors": error_chart(rows, names),
        }
        if rows
        else {},
    }
