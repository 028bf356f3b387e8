"""The sample-mode flow's second half: aggregate the graded records into the report (the verdicts of
a sequential run settled by its confidence sequences), explain it, write it and the CI files, and
publish the Prefect UI's artifacts and the run log's closing lines.

Apart from the flow body (flows/modes/sample/flow.py) because all of it runs after the model calls: the
flow imports it then, so a command reaches its first call without importing the report's models,
pandas, scipy or Jinja (flows/engine/prefetch.py imports them while the calls are in flight).
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect.artifacts import acreate_link_artifact, acreate_markdown_artifact, acreate_table_artifact
from prefect.runtime import flow_run

from executors.errors import warn
from flows.engine import team_history
from flows.engine.progress import LogTarget
from flows.engine.runlog import flow_run_page
from flows.engine.runner import Executed, unwalked
from flows.modes.sample.build import blind_labels, build_report, relabel
from flows.modes.sample.control import keep_known_good
from flows.modes.sample.explain import explain_sample_run
from flows.modes.sample.judging import pairwise
from flows.modes.sample.model import SampleReport
from flows.modes.sample.prepare import Prepared
from flows.report.build import new_report_id, publish
from flows.report.ci import summary_markdown, write_ci_outputs
from flows.report.logtext import figure_lines, page_urls, regression_lines, verdict_lines
from flows.report.regression import regression_against_previous
from flows.report.schema import GraderCheck
from flows.report.server import export_pieces
from flows.report.validity import certify
from tasks.aggregate import aggregate_results
from tasks.schema import SAMPLE_SCALE, VerdictLabel
from tasks.stats.figures import Aggregate
from tasks.stats.sequential import ConfidenceSequence
from tasks.stats.sequential import record as seq_record
from tasks.stats.statistics import band
from tasks.store.files import atomic_write_chunks


@dataclass
class Outcome:
    report: SampleReport
    path: Path


async def finish(prepared: Prepared, executed: Executed) -> SampleReport:
    """The report of a run, explained, compared with the suite's previous run when named, certified."""
    report, labels = await assemble(prepared, executed)
    if executed.shard_runs:
        report.meta.shards = executed.shard_runs
    await explain_sample_run(report, prepared, executed.runner, labels, executed.gold)
    suite, shared = prepared.options.suite, prepared.options.history_url
    if suite and shared:
        await asyncio.to_thread(team_history.mirror, "pull", shared, suite, prepared.output_dir)
    if suite:  # before the certificate: the canaries are judged against the previous run
        report.regression = regression_against_previous(prepared.output_dir, report)
    graders = [GraderCheck.model_validate(f, from_attributes=True) for f in prepared.graders]
    report.validity = certify(report, prepared.options.max_error_rate, graders, prepared.leaks)
    # the report pages link back to the run's UI page
    report.meta.prefect_flow_run = flow_run_page(flow_run.id)
    return report


def write_report(report: SampleReport, prepared: Prepared) -> Path:
    """The report JSON and the CI files, the suite's known-good run, the team's shared history."""
    path = write_outputs(report, prepared)
    keep_known_good(prepared, report)
    suite, shared = prepared.options.suite, prepared.options.history_url
    if suite and shared:
        team_history.mirror("push", shared, suite, path)
    return path


async def assemble(prepared: Prepared, executed: Executed) -> tuple[SampleReport, dict[str, str]]:
    """Aggregate the graded records into the report (blind runs on their labels, not their names);
    the records go as the report takes them."""
    opts, records, runner, started_at = (
        prepared.options,
        executed.records,
        executed.runner,
        executed.started_at,
    )
    names = [v.name for v in prepared.variants]
    report_id = new_report_id(started_at, names)
    labels = blind_labels(names, opts.seed, report_id) if opts.blind else {n: n for n in names}
    aggregate = await aggregate_results(
        unwalked(relabel(records, labels)),
        unwalked(prepared.samples),
        [labels[n] for n in names],
        labels[prepared.control],
        SAMPLE_SCALE,
        seed=opts.seed,
        margin=opts.margin,
        min_effect=opts.min_effect,
        max_error_rate=opts.max_error_rate,
    )
    if executed.sequences:
        settle_by_sequence(aggregate, executed.sequences, labels, prepared, executed.planned, len(records))
    if opts.pairwise and prepared.judges and len(names) > 1:
        aggregate.pairwise = [
            p.model_copy(update={"control": labels[p.control], "treatment": labels[p.treatment]})
            for p in await pairwise(prepared, runner, records)
        ]
    records = relabel(records, labels)
    executed.release_records()  # the run's own list: build_report consumes the labelled one
    report = build_report(
        prepared,
        report_id,
        records,
        aggregate,
        runner.stats(),
        started_at,
        time.time() - executed.started,
        labels,
    )
    return report, labels


def settle_by_sequence(
    aggregate: Aggregate,
    sequences: dict[str, ConfidenceSequence],
    labels: dict[str, str],
    prepared: Prepared,
    planned: int,
    used: int,
) -> None:
    """The verdicts of a sequential run: the sequence's decision where it settled (an interval
    recomputed after every wave would inflate false verdicts), else the fixed-N test on every case."""
    opts = prepared.options
    by_label = {labels[t]: cs for t, cs in sequences.items()}
    for comp in aggregate.comparisons:
        cs = by_label.get(comp.treatment)
        if cs is None:
            continue
        final = "fixed-N paired interval on every case (the cases ran out first)"
        rec = seq_record(
            cs,
            opts.practical_margin,
            wave_size=opts.wave,
            cases_available=len(prepared.samples),
            calls=(used, planned),
            final_look=final,
        )
        comp.sequential = rec
        verdict = comp.verdict
        if rec.decision is None:
            verdict.procedure = final
            continue
        verdict.label = VerdictLabel(rec.decision)
        verdict.procedure = f"{rec.procedure} ({rec.reference})"
        verdict.reason = (
            f"the {1 - rec.alpha:.0%} confidence sequence [{rec.lower:+.2f}, {rec.upper:+.2f}] settles it "
            f"against the margin ±{opts.practical_margin:g} after {rec.cases_used} cases in {rec.waves} "
            f"wave(s); {used} of {planned} executions made"
        )
        if rec.decision in ("BETTER", "WORSE"):
            delta = verdict.delta_points
            verdict.band, verdict.band_note = (band(delta) if delta is not None else None), None
        else:
            verdict.band, verdict.band_note = None, "band shown only beside BETTER or WORSE"


def write_outputs(report: SampleReport, prepared: Prepared) -> Path:
    """The report JSON, and the CI files asked for. Every call is paid for by now: a location that
    fails this late gets a warning and the report goes somewhere it can, never lost."""
    opts = prepared.options
    try:
        path = publish(report, prepared.output_dir)
    except OSError as exc:
        path = publish(report, fallback_reports_dir())
        warn(
            f"could not write the report into {prepared.output_dir} ({exc.strerror or exc}); it is at {path}"
        )
    write_ci_outputs(report, opts.junit, opts.github_summary, opts.threshold, opts.require_valid)
    return path


def fallback_reports_dir() -> Path:
    return Path(tempfile.gettempdir()) / "skillab-reports"


def report_port() -> str:
    return os.environ.get("SKILLAB_REPORT_PORT") or "7799"


def log_outcome(log: LogTarget, outcome: Outcome) -> None:
    """What a person watching the run wants at its end: figures, verdicts, where the report is,
    and the regression outcome (a regression as an error line)."""
    report = outcome.report
    for line in figure_lines(report) + verdict_lines(report):
        log.info(line)
    urls = " and ".join(page_urls(report, report_port()))
    log.info(
        f"report: {outcome.path} (HTML: {outcome.path.with_suffix('.html')}); in the browser: {urls} "
        "(python -m flows.bench report)"
    )
    lines = regression_lines(report)
    for line in lines[:-1]:
        log.info(line)
    if lines:
        regressed = report.regression is not None and report.regression.regressed
        (log.error if regressed else log.info)(lines[-1])


def artifact_key(report: SampleReport) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", (report.meta.suite or "skillab").lower()).strip("-") or "skillab"


def summary_artifacts(report: SampleReport) -> list[Awaitable[Any]]:
    """What the Prefect UI shows without opening a file: summary and verdict, per-variant table."""
    key = artifact_key(report)
    table = [
        {
            "variant": name,
            "score": s.avg_composite_score,
            "ci95_low": s.interval[0],
            "ci95_high": s.interval[1],
            "pass_rate": s.pass_rate,
            "errors": s.error_count,
            "ungraded": s.ungraded_count,
            "cost_usd": s.total_cost_usd,
        }
        for name, s in report.summary.items()
    ]
    return [
        acreate_markdown_artifact(
            markdown=summary_markdown(report), key=f"{key}-summary", description=f"skillab report {report.id}"
        ),
        acreate_table_artifact(table=table, key=f"{key}-variants", description="per-variant figures"),
    ]


async def publish_page(outcome: Outcome) -> None:
    """The report's HTML page beside its JSON, and the UI's links to it (sent while a thread renders
    the page: each round trip waits on the server)."""
    report = outcome.report
    key = artifact_key(report)
    html = outcome.path.with_suffix(".html")
    run_url, *suite_url = page_urls(report, report_port())
    calls = [
        acreate_link_artifact(
            link=run_url,
            link_text=(
                f"report {report.id}: the link answers while the report server runs "
                f"(python -m flows.bench report); the same page as a file: {html}"
            ),
            key=f"{key}-report",
        )
    ]
    if suite_url:
        calls.append(
            acreate_link_artifact(
                link=suite_url[0],
                link_text=(
                    f"suite {report.meta.suite}: the trend over its runs (the link answers while "
                    "python -m flows.bench report runs)"
                ),
                key=f"{key}-suite",
            )
        )
    sent = asyncio.gather(*calls)
    try:
        await asyncio.to_thread(atomic_write_chunks, html, export_pieces(report))
    finally:
        await sent
