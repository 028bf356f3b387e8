"""The sample-mode flow: load, fan out one task per sample x variant x run, grade, judge, aggregate,
report. The pieces live below: ``flows.engine`` runs and judges, ``flows.report`` builds and writes.

What runs after the model calls (the report, aggregation with pandas and scipy, the HTML export
with Jinja) lives in flows/modes/sample/report.py and is imported then, as are shards, the gold check and
the sequential procedure when asked for: a command reaches its first model call without paying for
them, and flows/engine/prefetch.py imports them in the background while the calls are in flight.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed, Failed, State

from executors.registry import close_all
from executors.schema import RunResult
from flows.engine.gc import lean_gc
from flows.engine.prefetch import prefetch
from flows.engine.progress import LogTarget, Progress
from flows.engine.runlog import add_tags, outcome_tag, run_logger, tag_flow_run
from flows.engine.runner import Executed, UnitRunner, unwalked
from flows.inputs.options import BenchOptions
from flows.modes.sample.estimate import estimate, plan_line
from flows.modes.sample.judging import combine, judge_outputs
from flows.modes.sample.prepare import Prepared, prepared_for
from flows.modes.sample.units import runner_config
from graders.judge import Judgement
from graders.schema import AssertionResult, Grade, Sample
from tasks.context import current
from tasks.grade import Outputs, grade_outputs
from tasks.schema import SAMPLE_SCALE, Record, ShardRun, Unit

#: What a run imports after its calls (flows/engine/prefetch.py), in the order it needs them.
AFTER_CALLS = ("flows.modes.sample.report", "flows.report.console", "flows.report.gates")


def prefetch_after_calls() -> None:
    prefetch(AFTER_CALLS)


class FailedBench(Exception):
    """The run finished and wrote its report, yet its flow run ends Failed (a nightly run shows red)."""

    def __init__(self, message: str, report_path: str) -> None:
        super().__init__(message)
        self.report_path = report_path


class RegressionError(FailedBench):
    """A significant regression against the previous run of the suite."""


class NothingMeasuredError(FailedBench):
    """Every call of a variant failed (an endpoint down, a bad key): no figure stands for it."""


class NotCertifiedError(FailedBench):
    """--require-valid and the report's validity certificate has a FAIL."""


async def execute_and_grade(prepared: Prepared, runner: UnitRunner, units: list[Unit]) -> list[Record]:
    """Every unit's result (cached or called; units a budget stopped are absent), each answer's
    assertions run as it arrives (tasks/grade.py), then the judge where a criterion asks for it."""
    by_id = {s.sample_id: s for s in prepared.samples}
    outputs = Outputs()

    def arrived(unit: Unit, result: RunResult) -> None:
        if result.ok:
            outputs.put(unit.key, by_id[unit.sample_id], result)

    grading = asyncio.ensure_future(grade_outputs(unwalked(outputs)))
    runner.on_result = arrived
    try:
        results = await runner.run(units, prepared.policy(prepared.target))
    except BaseException:  # Ctrl-C, a lost API: the thread stops after its check under way
        outputs.close(abandon=True)
        grading.add_done_callback(lambda f: f.cancelled() or f.exception())  # the run's error is the news
        raise
    finally:
        runner.on_result = None
    outputs.close()
    done = [(u, by_id[u.sample_id], results[u.key]) for u in units if u.key in results]
    return await grade(prepared, runner, done, (await grading).by_key)


async def grade(
    prepared: Prepared,
    runner: UnitRunner,
    done: list[tuple[Unit, Sample, RunResult]],
    asserted: dict[str, list[AssertionResult]],
) -> list[Record]:
    """Every answer's grade: its assertions' results (``asserted``, by unit key) and the judge's."""
    ok_items = [(u, s, r) for u, s, r in done if r.ok]
    judgements: list[list[Judgement]] = [[] for _ in ok_items]
    judge_enabled = bool(prepared.judges)
    if judge_enabled and ok_items:
        runner.progress = Progress(0, "judging", enabled=False)
        judgements = await judge_outputs(prepared, runner, ok_items)
    grades: dict[str, Grade] = {
        u.key: combine(s, asserted[u.key], js, judge_enabled)
        for (u, s, _), js in zip(ok_items, judgements, strict=True)
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
) -> tuple[list[Record], dict[str, Any]]:
    """--sequential: cases in waves (a seeded order drawn before the first), each wave executed and
    graded, its paired differences fed to one confidence sequence per treatment; stop as soon as
    every sequence settles against the margin, a budget ends, or the cases run out."""
    from tasks.stats.sequential import ConfidenceSequence, decide

    opts, control = prepared.options, prepared.control
    order = [s.sample_id for s in prepared.samples]
    random.Random(opts.seed).shuffle(order)
    treatments = [v.name for v in prepared.variants if v.name != control]
    sequences = {t: ConfidenceSequence.for_scale(SAMPLE_SCALE) for t in treatments}
    records: list[Record] = []
    for start in range(0, len(order), opts.wave):
        wave = order[start : start + opts.wave]
        members = set(wave)
        new = await execute_and_grade(prepared, runner, [u for u in units if u.sample_id in members])
        records += new
        for t in treatments:
            sequences[t] = sequences[t].update(case_differences(new, wave, control, t))
        if all(decide(cs, opts.practical_margin) for cs in sequences.values()) or runner.over_budget():
            break
    return records, sequences


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


async def run_units(
    prepared: Prepared, cwd: Path, *, show_progress: bool = True, log: LogTarget | None = None
) -> Executed:
    """Every unit called (or read from the cache), then graded and judged; with --sequential, in
    waves until the verdict settles."""
    opts = prepared.options
    started, started_at = time.time(), dt.datetime.now(dt.UTC)
    units = prepared.units()
    shard_runs: list[ShardRun] = []
    if opts.shards > 1:
        from flows.modes.sample.shard import dispatch_shards

        shard_runs = await dispatch_shards(prepared, cwd)
    progress = Progress(len(units), "executing", enabled=show_progress, log=log)
    runner = UnitRunner(runner_config(prepared), progress, on_fan_out=prefetch_after_calls)
    sequences: dict[str, Any] = {}
    gold = None
    try:
        if prepared.gold is not None:
            from flows.modes.sample.gold import check_gold

            gold = await check_gold(prepared, runner)
        if opts.sequential:
            records, sequences = await run_in_waves(prepared, runner, units)
        else:
            records = await execute_and_grade(prepared, runner, units)
    finally:
        progress.close()
    prepared.release_units()
    return Executed(records, runner, started, started_at, shard_runs, len(units), sequences, gold)


@flow(name="sample-bench", log_prints=False)
async def sample_bench(options: BenchOptions, cwd: str = ".", show_progress: bool = True) -> Any:
    """Sample mode: does artifact B beat artifact A on the same model and the same cases?"""
    log = run_logger()
    await tag_flow_run("sample", options.suite)
    prepared = prepared_for(options, Path(cwd))
    log.info(plan_line(prepared, estimate(prepared)))
    try:
        executed = await run_units(prepared, Path(cwd), show_progress=show_progress, log=log)
        from flows.modes.sample.report import (
            Outcome,
            finish,
            log_outcome,
            publish_page,
            summary_artifacts,
            write_report,
        )

        # Frozen: what the calls left (every record), which each collection among the report's new
        # objects would re-scan (~0.19 s of collections after the last reply at 10,000 units).
        with lean_gc():
            report = await finish(prepared, executed)  # pairwise judging and the diagnosis still call models
    finally:
        await close_all()  # connection pools belong to this flow run's event loop
    failure, word = run_end(options, report)
    # The UI's share is mostly the server's time (at a run's end it is still recording the units'
    # task runs): the outcome tag and the summary are under way while a thread writes the report.
    shown = asyncio.gather(add_tags(outcome_tag(word)), *summary_artifacts(report))
    try:
        with lean_gc():
            outcome = Outcome(report, await asyncio.to_thread(write_report, report, prepared))
        # kept before the UI's share: the report is what the command needs
        state = final_state(failure, outcome)
        await publish_page(outcome)
    finally:
        await shown
    log_outcome(log, outcome)
    return state


#: Why a finished run's flow run ends Failed: its error's kind and message.
Failure = tuple[type[FailedBench], str]


def run_end(options: BenchOptions, report: Any) -> tuple[Failure | None, str]:
    """Why the flow run ends Failed, if it does: nothing was measured, the suite regressed against
    its previous run (the message states the drop), or --require-valid and the report is not
    certified; and the outcome in a word or two, for the run's outcome tag."""
    from flows.report.gates import unmeasured
    from flows.report.logtext import night_outcome, outcome_name, regression_outcome
    from flows.report.validity import require_valid_failures

    regression = report.regression
    # what the night found names its outcome (a drop of unchanged artifacts in a changed world)
    world = night_outcome(report) == "the world changed"
    if idle := unmeasured(report):
        return (NothingMeasuredError, "; ".join(idle)), "Errors"
    if regression and regression.regressed:
        return (RegressionError, regression_outcome(report)), "World changed" if world else "Regressed"
    if options.require_valid and (invalid := require_valid_failures(report)):
        return (NotCertifiedError, "; ".join(invalid)), "Not certified"
    return None, "World changed" if world else outcome_name(report)


def final_state(failure: Failure | None, outcome: Any) -> State:
    """Completed, its message the verdicts; Failed for ``failure`` (a state, not an exception: no
    traceback on the terminal or in the run's log). The states keep Prefect's names: its filters
    count by them. The report is written either way."""
    from flows.report.build import RunOutcome
    from flows.report.logtext import state_message

    if failure is not None:
        kind, message = failure
        failed = kind(message, str(outcome.path))
        return Failed(message=str(failed), data=current().keep(failed))
    result = current().keep(RunOutcome(id=outcome.report.id, report_path=str(outcome.path)))
    return Completed(message=state_message(outcome.report), data=result)
