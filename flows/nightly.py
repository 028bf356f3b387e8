"""The scheduled benchmarks: a sample suite given by its options file, compared with its previous
run; a trigger suite, held to its recall and false-fire gates."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed, Failed, State

from flows.engine.runlog import run_logger
from flows.inputs.options import BenchOptions
from flows.inputs.samples import load_config
from flows.modes.sample.flow import sample_bench
from flows.modes.triggers.flow import trigger_bench
from flows.modes.triggers.plan import load_trigger_config
from flows.modes.triggers.report import gate_failures
from flows.report.schema import TriggerReport, load_report


def suite_options(config: str, suite: str, batch: bool | None = None) -> tuple[BenchOptions, Path]:
    """The suite's options (its skillab.yaml, validated against BenchOptions; ``batch`` from
    deployments.yaml overrides the file's) and its folder."""
    path = Path(config).resolve()
    given = load_config(path) | ({} if batch is None else {"batch": batch})
    return BenchOptions(**given | {"suite": suite}), path.parent


def night_name() -> str:
    """A nightly run's name: its suite and when it was due, so the runs list tells the nights apart."""
    from prefect.runtime import flow_run

    when = flow_run.scheduled_start_time.astimezone(dt.UTC)
    seconds = f":{when:%S}" if when.second else ""  # a run started by hand, not on the minute
    return f"{flow_run.parameters['suite']} · {when:%Y-%m-%d %H:%M}{seconds} UTC"


@flow(name="nightly-bench", flow_run_name=night_name, log_prints=False)
async def nightly_bench(config: str, suite: str, batch: bool | None = None) -> Any:
    """Run a suite; a significant regression against its previous run fails this flow run.
    ``batch``: through the provider's batch API at half price (nobody waits on a nightly run).

    The benchmark runs in this flow run itself, not a subflow: the run the deployment lists holds
    the night's task runs, artifacts and log, and ends in the benchmark's own named state."""
    options, folder = suite_options(config, suite, batch)
    run_logger().info(f"nightly run of suite {suite} ({config}): variants {', '.join(options.variants)}")
    return await sample_bench.fn(options, str(folder), False)


@flow(name="nightly-triggers", flow_run_name=night_name, log_prints=False)
async def nightly_triggers(config: str, suite: str) -> State:
    """Run a trigger suite (paths in its options file are relative to the file's folder) in this flow
    run; a missed gate fails it, naming every skill and figure that missed."""
    path = Path(config).resolve()
    options = load_trigger_config(path, suite)
    result: dict[str, Any] = await trigger_bench.fn(options, str(path.parent), False)
    failures = gate_failures(
        load_report(Path(result["report_path"]), TriggerReport),
        options.min_recall,
        options.max_false_fire,
        options.require_valid,
    )
    if failures:
        return Failed(name="Missed gates", message=f"suite {suite!r}: " + "; ".join(failures))
    return Completed(name="Gates met", message=f"suite {suite!r}: every gate met", data=result)
