"""Trigger mode: does the skill fire when it should, stay away when it should not, and win over the
other installed skills? Real agent sessions with the skill listed, never forced."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

from prefect import flow

from flows.engine.progress import Progress
from flows.engine.runlog import add_tags, outcome_tag, run_logger, tag_flow_run
from flows.engine.runner import RunnerConfig, UnitRunner
from flows.inputs.files import skillab_home
from flows.modes.triggers.control import keep_known_good
from flows.modes.triggers.plan import TriggerOptions, prepare_triggers
from flows.modes.triggers.report import build_trigger_report
from flows.modes.triggers.runner import TriggerRunner
from flows.report.build import RunOutcome, new_report_id, publish
from flows.report.ci import write_junit
from flows.report.logtext import (
    artifact_change_lines,
    md,
    named_verdict_lines,
    outcome_name,
    validity_lines,
    world_change_lines,
)
from flows.report.regression import regression_against_previous
from flows.report.schema import Report
from tasks.context import current, handover_key


@flow(name="skill-triggers", log_prints=False)
async def trigger_bench(options: TriggerOptions, cwd: str = ".", show_progress: bool = True) -> RunOutcome:
    """Trigger mode: does the skill fire when it should, and only then? The run's outcome is a tag
    of its flow run (a nightly run's is its gates', see nightly.py)."""
    result, report = await run_triggers(options, cwd, show_progress)
    await add_tags(outcome_tag(outcome_name(report)))
    return result


async def run_triggers(options: TriggerOptions, cwd: str, show_progress: bool) -> tuple[RunOutcome, Report]:
    """The sessions, the report and its files, and the run's story in its Prefect log."""
    await tag_flow_run("trigger", options.suite)
    plan = current().take_handed_over(handover_key(options, Path(cwd))) or prepare_triggers(
        options, Path(cwd)
    )
    started = dt.datetime.now(dt.UTC)
    cache_dir = Path(options.cache_dir) if options.cache_dir else skillab_home() / "cache"
    progress = Progress(len(plan.sessions), "sessions", enabled=show_progress)
    config = RunnerConfig(
        options.concurrency,
        cache_dir if options.cache else None,
        max_calls=options.max_calls,
        budget_usd=options.budget_usd,
        fleet_sessions=options.fleet_sessions,
        fleet_rpm=options.fleet_rpm,
        fleet_pool=options.fleet_pool,
    )
    runner = UnitRunner(config, progress)
    try:
        outcomes = await TriggerRunner(plan, runner).run()
    finally:
        progress.close()
    stats = runner.stats()
    report_id = new_report_id(started, ["triggers", *(v.label for v in plan.variants)])
    report = build_trigger_report(plan, report_id, outcomes, started, stats)
    # a suite's run against its previous one: the artifacts and what ran that changed between them
    report.regression = regression_against_previous(Path(cwd) / options.results_dir, report)
    keep_known_good(plan, report, Path(cwd) / options.results_dir)
    path = publish(report, Path(cwd) / options.results_dir)
    if options.output_dir:
        publish(report, Path(options.output_dir))
    if options.junit:
        write_junit(report, Path(cwd) / options.junit, 0.0, options.require_valid)  # no score threshold
    log = run_logger()  # the run's story in its Prefect log and a summary artifact
    changed = [*artifact_change_lines(report), *world_change_lines(report)]
    story = [*named_verdict_lines(report), *validity_lines(report), *changed, f"report: {path}"]
    for line in story:
        log.info(line)
    await summary_artifact(report, story)
    return current().keep(RunOutcome(id=report.id, report_path=str(path))), report


async def summary_artifact(report: Report, story: list[str]) -> None:
    """The run's verdicts and certificate as the flow run's markdown artifact (the Prefect UI's
    Artifacts tab). Cosmetic: a run whose API is slow or gone goes on without it."""
    from prefect.artifacts import acreate_markdown_artifact

    lines = [f"## skillab triggers: {md(', '.join(report.meta.variants))}", ""]
    lines += [f"- {md(line.strip())}" for line in story]
    with contextlib.suppress(Exception):
        await acreate_markdown_artifact(markdown="\n".join(lines), description=f"skillab report {report.id}")
