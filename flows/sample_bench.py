"""The sample-mode flow: load, fan out one task per sample x variant x run, grade, judge, aggregate,
report. The pieces live below: ``flows.engine`` runs and judges, ``flows.report`` builds and writes.

The report's models, aggregation (pandas, scipy), the HTML export (Jinja, Starlette), shards and the
regression check are imported where they are used: a command reaches its first model call without
paying for them, and they are imported in the background while the calls are in flight.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow
from prefect.artifacts import acreate_link_artifact, acreate_markdown_artifact, acreate_table_artifact

from executors.registry import close_all
from executors.schema import RunResult
from flows.engine.judging import combine, judge_outputs, pairwise
from flows.engine.prefetch import prefetch
from flows.engine.progress import Progress
from flows.engine.runner import RunnerConfig, UnitRunner, unwalked
from flows.inputs.options import BenchOptions
from flows.inputs.prepare import Prepared, prepare
from graders.judge import Judgement
from graders.schema import Grade, Sample
from tasks.files import atomic_write_text
from tasks.grade import grade_outputs
from tasks.schema import SAMPLE_SCALE, Record, Unit

if TYPE_CHECKING:
    from flows.report.schema import Report


@dataclass
class Outcome:
    report: Report
    path: Path | None


class RegressionError(Exception):
    """A significant regression against the previous run of the suite: the flow run ends Failed."""

    def __init__(self, message: str, report_path: str) -> None:
        super().__init__(message)
        self.report_path = report_path


async def execute(
    prepared: Prepared, runner: UnitRunner, units: list[Unit]
) -> list[tuple[Unit, Sample, RunResult]]:
    """Every unit's result (cached or called), with its sample; units a budget stopped are absent."""
    results = await runner.run(units, prepared.policy(prepared.target))
    by_id = {s.sample_id: s for s in prepared.samples}
    return [(u, by_id[u.sample_id], results[u.key]) for u in units if u.key in results]


async def grade(
    prepared: Prepared, runner: UnitRunner, done: list[tuple[Unit, Sample, RunResult]]
) -> list[Record]:
    """Assertions for every answer, then the judge where a criterion asks for it."""
    ok_items = [(u, s, r) for u, s, r in done if r.ok]
    deterministic = grade_outputs(unwalked([(s, r) for _, s, r in ok_items])) if ok_items else []
    judgements: list[list[Judgement]] = [[] for _ in ok_items]
    judge_enabled = bool(prepared.judges)
    if judge_enabled and ok_items:
        runner.progress = Progress(0, "judging", enabled=False)
        judgements = await judge_outputs(prepared, runner, ok_items)
    grades: dict[str, Grade] = {
        u.key: combine(s, det, js, judge_enabled)
        for (u, s, _), det, js in zip(ok_items, deterministic, judgements, strict=True)
    }
    return [
        Record(
            sample_id=u.sample_id,
            variant=u.variant,
            run=u.run,
            cluster=s.cluster,
            result=r,
            grade=grades.get(u.key),
        )
        for u, s, r in done
    ]


async def run_benchmark(prepared: Prepared, cwd: Path, *, show_progress: bool = True) -> Outcome:
    opts = prepared.options
    started, started_at = time.time(), dt.datetime.now(dt.UTC)
    units = prepared.units()
    shard_runs = []
    if opts.shards > 1:
        from flows.shard import dispatch_shards

        shard_runs = await dispatch_shards(prepared, cwd)
    progress = Progress(len(units), "executing", enabled=show_progress)
    runner = UnitRunner(RunnerConfig.of(prepared), progress, on_first_result=prefetch)
    try:
        done = await execute(prepared, runner, units)
    finally:
        progress.close()
    records = await grade(prepared, runner, done)
    report = await assemble(prepared, runner, records, started, started_at)
    if shard_runs:
        report.meta.shards = shard_runs
    if opts.suite:
        from flows.report.regression import regression_against_previous

        report.regression = regression_against_previous(prepared.output_dir, report)
    return Outcome(report, write_outputs(report, prepared))


async def assemble(
    prepared: Prepared, runner: UnitRunner, records: list[Record], started: float, started_at: dt.datetime
) -> Report:
    """Aggregate the graded records into the report (blind runs on their labels, not their names)."""
    from flows.report.build import blind_labels, build_report, new_report_id, relabel
    from tasks.aggregate import aggregate_results

    opts = prepared.options
    names = [v.name for v in prepared.variants]
    report_id = new_report_id(started_at, names)
    labels = blind_labels(names, opts.seed, report_id) if opts.blind else {n: n for n in names}
    aggregate = aggregate_results(
        unwalked(relabel(records, labels)),
        unwalked(prepared.samples),
        [labels[n] for n in names],
        labels[prepared.control],
        SAMPLE_SCALE,
        opts.seed,
        opts.margin,
        opts.min_effect,
        opts.max_error_rate,
    )
    if opts.pairwise and prepared.judges and len(names) > 1:
        aggregate["pairwise"] = [
            {**p, "control": labels[p["control"]], "treatment": labels[p["treatment"]]}
            for p in await pairwise(prepared, runner, records)
        ]
    return build_report(
        prepared,
        report_id,
        relabel(records, labels),
        aggregate,
        runner.stats(),
        started_at,
        time.time() - started,
        labels,
    )


def write_outputs(report: Report, prepared: Prepared) -> Path:
    """The report JSON, and the CI files asked for. Every call is paid for by now: a location that
    fails this late gets a warning and the report goes somewhere it can, never lost."""
    from flows.report.build import publish
    from flows.report.ci import append_github_summary, write_junit

    opts = prepared.options
    try:
        path = publish(report, prepared.output_dir)
    except OSError as exc:
        path = publish(report, fallback_reports_dir())
        warn(
            f"could not write the report into {prepared.output_dir} ({exc.strerror or exc}); it is at {path}"
        )
    for flag, target, write in (
        ("--junit", opts.junit, write_junit),
        ("--github-summary", opts.github_summary, append_github_summary),
    ):
        if target:
            try:
                write(report, Path(target), opts.threshold)
            except OSError as exc:
                warn(f"{flag}: could not write {target} ({exc.strerror or exc}); the report is at {path}")
    return path


def fallback_reports_dir() -> Path:
    return Path(tempfile.gettempdir()) / "skillab-reports"


def warn(message: str) -> None:
    print(f"skillab: warning: {message}", file=sys.stderr)


@flow(name="sample-bench", log_prints=False)
async def sample_bench(options: BenchOptions, cwd: str = ".", show_progress: bool = True) -> dict[str, Any]:
    """Sample mode: does artifact B beat artifact A on the same model and the same cases?"""
    prepared = prepare(options, Path(cwd))
    try:
        outcome = await run_benchmark(prepared, Path(cwd), show_progress=show_progress)
    finally:
        await close_all()  # connection pools belong to this flow run's event loop
    await publish_artifacts(outcome)
    regression = outcome.report.regression
    if regression and regression.regressed:
        raise RegressionError(
            f"significant regression in {', '.join(regression.regressed)} against the previous run "
            f"{regression.previous} of suite {options.suite!r}",
            str(outcome.path),
        )
    return {"report_path": str(outcome.path) if outcome.path else None, "id": outcome.report.id}


def artifact_key(report: Report) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", (report.meta.suite or "skillab").lower()).strip("-") or "skillab"


async def publish_artifacts(outcome: Outcome) -> None:
    """What the Prefect UI shows without opening a file: summary and verdict, per-variant table, a link."""
    from flows.report.ci import summary_markdown

    report = outcome.report
    key = artifact_key(report)
    await acreate_markdown_artifact(
        markdown=summary_markdown(report), key=f"{key}-summary", description=f"skillab report {report.id}"
    )
    table = [
        {
            "variant": name,
            "score": s.avg_composite_score,
            "ci95_low": s.composite_ci95[0] if s.composite_ci95 else None,
            "ci95_high": s.composite_ci95[1] if len(s.composite_ci95) > 1 else None,
            "pass_rate": s.pass_rate,
            "errors": s.error_count,
            "ungraded": s.ungraded_count,
            "cost_usd": s.total_cost_usd,
        }
        for name, s in report.summary.items()
    ]
    await acreate_table_artifact(table=table, key=f"{key}-variants", description="per-variant figures")
    if outcome.path is not None:
        from flows.report.server import export_html

        html = outcome.path.with_suffix(".html")
        atomic_write_text(html, export_html(report))
        port = os.environ.get("SKILLAB_REPORT_PORT") or "7799"
        await acreate_link_artifact(
            link=f"http://127.0.0.1:{port}/run/{report.id}",
            link_text=f"report {report.id} (python -m flows.bench report; file: {html})",
            key=f"{key}-report",
        )
