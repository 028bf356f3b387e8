"""A scheduled trigger suite, held to its recall and false-fire gates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed, Failed, State

from flows.engine.runlog import night_name
from flows.modes.triggers.flow import trigger_bench
from flows.modes.triggers.model import TriggerReport
from flows.modes.triggers.plan import load_trigger_config
from flows.modes.triggers.report import gate_failures
from flows.report.schema import load_report


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
