"""A scheduled trigger suite, held to its recall and false-fire gates."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.states import Completed, Failed, State

from flows.engine.runlog import add_tags, night_name, outcome_tag, run_logger
from flows.modes.triggers.control import with_controls
from flows.modes.triggers.flow import run_triggers
from flows.modes.triggers.model import TriggerReport
from flows.modes.triggers.plan import load_trigger_config
from flows.modes.triggers.report import gate_failures
from flows.report.logtext import night_outcome, regression_outcome, world_change_lines
from flows.report.schema import load_report


@flow(name="nightly-triggers", flow_run_name=night_name, log_prints=False)
async def nightly_triggers(config: str, suite: str) -> State:
    """Run a trigger suite (paths in its options file are relative to the file's folder) in this flow
    run; a missed gate fails it, naming every skill and figure that missed."""
    path = Path(config).resolve()
    options, controls = with_controls(load_trigger_config(path, suite), path.parent)
    for line in controls:
        run_logger().info(line)
    result, _ = await run_triggers(options, str(path.parent), False)
    report = load_report(Path(str(result.report_path)), TriggerReport)
    failures = gate_failures(report, options.min_recall, options.max_false_fire, options.require_valid)
    regression = report.regression
    if regression is not None and regression.regressed:  # by the same-night control, or the last night
        failures.append(regression_outcome(report))
    # skills unchanged under a changed CLI, model or listing (or a control that moved with the world):
    # the night names the world, not the skill
    moved = regression is not None and bool(regression.artifact_changes) and not regression.controls
    world = night_outcome(report) == "the world changed" and not moved
    changed = "".join(f"; {line}" for line in world_change_lines(report))
    if regression is not None and regression.controls and not regression.regressed:
        changed += f"; {regression_outcome(report)}"
    word = "regressed" if regression and regression.regressed else "world changed" if world else None
    await add_tags(outcome_tag(word or ("missed gates" if failures else "gates met")))
    if failures:
        told = "; the world changed, not the skills" if world else ""
        return Failed(message=f"suite {suite!r}: " + "; ".join(failures) + told + changed)
    return Completed(message=f"suite {suite!r}: every gate met{changed}", data=result)
