"""The sample-mode flow: load, fan out one task per sample x variant x run, grade, judge, aggregate,
report. The pieces live below: ``flows.engine`` runs and judges, ``flows.report`` builds and writes."""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import acreate_link_artifact, acreate_markdown_artifact, acreate_table_artifact
from prefect.states import Completed

from executors.registry import close_all
from executors.schema import RunResult
from flows.engine.gold import check_gold
from flows.engine.judging import combine, judge_outputs, pairwise
from flows.engine.progress import LogTarget, Progress
from flows.engine.runlog import estimate, plan_line, run_logger
from flows.engine.runner import RunnerConfig, UnitRunner, unwalked
from flows.explain import explain_sample_run
from flows.inputs.options import BenchOptions
from flows.inputs.prepare import Prepared, prepare
from flows.report.build import blind_labels, build_report, new_report_id, publish, relabel
from flows.report.ci import append_github_summary, summary_markdown, write_junit
from flows.report.logtext import (
    figure_lines,
    page_urls,
    regression_lines,
    state_message,
    verdict_lines,
    verdict_summary,
)
from flows.report.regression import regression_against_previous
from flows.report.schema import Report
from flows.report.server import export_html
from flows.shard import dispatch_shards
from graders.judge import Judgement
from graders.schema import Grade, Sample
from tasks.aggregate import aggregate_results
from tasks.files import atomic_write_text
from tasks.grade import grade_outputs
from tasks.schema import SAMPLE_SCALE, Record, Unit
from tasks.sequential import ConfidenceSequence, decide
from tasks.sequential import record as seq_record


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


async def run_in_waves(
    prepared: Prepared, runner: UnitRunner, units: list[Unit]
) -> tuple[list[Record], dict[str, ConfidenceSequence]]:
    """--sequential: cases in waves (a seeded order drawn before the first), each wave executed and
    graded, its paired differences fed to one confidence sequence per treatment; stop as soon as
    every sequence settles against the margin, a budget ends, or the cases run out."""
    opts, control = prepared.options, prepared.control
    order = [s.sample_id for s in prepared.samples]
    random.Random(opts.seed).shuffle(order)
    treatments = [v.name for v in prepared.variants if v.name != control]
    sequences = {t: ConfidenceSequence.for_scale(SAMPLE_SCALE) for t in treatments}
    records: list[Record] = []
    for start in range(0, len(order), opts.wave):
        wave = order[start : start + opts.wave]
        members = set(wave)
        new = await grade(
            prepared, runner, await execute(prepared, runner, [u for u in units if u.sample_id in members])
        )
        records += new
        for t in treatments:
            sequences[t] = sequences[t].update(case_differences(new, wave, control, t))
        if all(decide(cs, margin_of(opts)) for cs in sequences.values()) or runner.over_budget():
            break
    return records, sequences


def margin_of(options: BenchOptions) -> float:
    return SAMPLE_SCALE.margin if options.margin is None else options.margin


def case_differences(records: list[Record], order: list[str], control: str, treatment: str) -> list[float]:
    """Treatment minus control per case (run means of scored runs), in the pre-drawn case order."""
    scores: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r.result.ok and r.grade is not None and r.grade.composite is not None:
            scores.setdefault((r.sample_id, r.variant), []).append(r.grade.composite)
    return [
        sum(b) / len(b) - sum(a) / len(a)
        for case in order
        if (a := scores.get((case, control))) and (b := scores.get((case, treatment)))
    ]


def settle_by_sequence(
    aggregate: dict[str, Any],
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
    for comp in aggregate.get("comparisons", []):
        cs = by_label.get(comp["treatment"])
        if cs is None:
            continue
        final = "fixed-N paired interval on every case (the cases ran out first)"
        rec = seq_record(
            cs, margin_of(opts), wave_size=opts.wave, cases_available=len(prepared.samples), final_look=final
        )
        comp["sequential"] = rec.as_dict() | {"callsUsed": used, "callsFixedN": planned}
        verdict = comp["verdict"]
        if rec.decision is None:
            verdict["procedure"] = final
            continue
        verdict |= {
            "label": rec.decision,
            "procedure": f"{rec.procedure} ({rec.reference})",
            "reason": f"the {1 - rec.alpha:.0%} confidence sequence [{rec.lower:+.2f}, {rec.upper:+.2f}] "
            f"settles it against the margin ±{margin_of(opts):g} after {rec.cases_used} cases in {rec.waves} "
            f"wave(s); {used} of {planned} executions made",
        }
        if rec.decision not in ("BETTER", "WORSE"):
            verdict |= {"band": None, "band_note": "band shown only beside BETTER or WORSE"}


async def run_benchmark(
    prepared: Prepared, cwd: Path, *, show_progress: bool = True, log: LogTarget | None = None
) -> Outcome:
    opts = prepared.options
    started, started_at = time.time(), dt.datetime.now(dt.UTC)
    names = [v.name for v in prepared.variants]
    report_id = new_report_id(started_at, names)
    units = prepared.units()
    shard_runs = await dispatch_shards(prepared, cwd) if opts.shards > 1 else []
    progress = Progress(len(units), "executing", enabled=show_progress, log=log)
    runner = UnitRunner(RunnerConfig.of(prepared), progress)
    sequences: dict[str, ConfidenceSequence] = {}
    try:
        gold = await check_gold(prepared, runner)
        if opts.sequential:
            records, sequences = await run_in_waves(prepared, runner, units)
        else:
            records = await grade(prepared, runner, await execute(prepared, runner, units))
    finally:
        progress.close()
    # Blind runs are aggregated on their labels: no figure or message can carry a name.
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
    if sequences:
        settle_by_sequence(aggregate, sequences, labels, prepared, len(units), len(records))
    if opts.pairwise and prepared.judges and len(names) > 1:
        aggregate["pairwise"] = [
            {**p, "control": labels[p["control"]], "treatment": labels[p["treatment"]]}
            for p in await pairwise(prepared, runner, records)
        ]
    report = build_report(
        prepared,
        report_id,
        relabel(records, labels),
        aggregate,
        runner.stats(),
        started_at,
        time.time() - started,
        labels,
    )
    if shard_runs:
        report.meta.shards = shard_runs
    await explain_sample_run(report, prepared, runner, labels, gold)
    if opts.suite:
        report.regression = regression_against_previous(prepared.output_dir, report)
    return Outcome(report, write_outputs(report, prepared))


def write_outputs(report: Report, prepared: Prepared) -> Path:
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
async def sample_bench(options: BenchOptions, cwd: str = ".", show_progress: bool = True) -> Any:
    """Sample mode: does artifact B beat artifact A on the same model and the same cases?"""
    log = run_logger()
    prepared = prepare(options, Path(cwd))
    log.info(plan_line(prepared, estimate(prepared)))
    try:
        outcome = await run_benchmark(prepared, Path(cwd), show_progress=show_progress, log=log)
    finally:
        await close_all()  # connection pools belong to this flow run's event loop
    await publish_artifacts(outcome)
    log_outcome(log, outcome)
    report = outcome.report
    regression = report.regression
    if regression and regression.regressed:
        raise RegressionError(
            f"significant regression in {', '.join(regression.regressed)} against the previous run "
            f"{regression.previous} of suite {options.suite!r} ({verdict_summary(report)})",
            str(outcome.path),
        )
    result = {"report_path": str(outcome.path) if outcome.path else None, "id": report.id}
    return Completed(message=state_message(report), data=result)


def report_port() -> str:
    return os.environ.get("SKILLAB_REPORT_PORT") or "7799"


def log_outcome(log: LogTarget, outcome: Outcome) -> None:
    """What a person watching the run wants at its end: figures, verdicts, where the report is,
    and the regression outcome (a regression as an error line)."""
    report = outcome.report
    for line in figure_lines(report) + verdict_lines(report):
        log.info(line)
    if outcome.path is not None:
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


def artifact_key(report: Report) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", (report.meta.suite or "skillab").lower()).strip("-") or "skillab"


async def publish_artifacts(outcome: Outcome) -> None:
    """What the Prefect UI shows without opening a file: summary and verdict, per-variant table, a link."""
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
        html = outcome.path.with_suffix(".html")
        atomic_write_text(html, export_html(report))
        run_url, *suite_url = page_urls(report, report_port())
        await acreate_link_artifact(
            link=run_url,
            link_text=f"report {report.id} (python -m flows.bench report; file: {html})",
            key=f"{key}-report",
        )
        if suite_url:
            await acreate_link_artifact(
                link=suite_url[0],
                link_text=f"suite {report.meta.suite}: the trend over its runs (python -m flows.bench report)",
                key=f"{key}-suite",
            )
