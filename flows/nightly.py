"""The scheduled benchmarks: a sample suite given by its options file, compared with its previous
run; a trigger suite, held to its recall and false-fire gates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed

from flows.engine.runlog import run_logger
from flows.inputs.options import BenchOptions
from flows.inputs.samples import load_config
from flows.inputs.triggers import load_trigger_config
from flows.report.schema import load_report
from flows.report.triggers import gate_failures
from flows.sample_bench import sample_bench
from flows.trigger_bench import trigger_bench


class TriggerGateError(Exception):
    """A scheduled trigger suite missed its gates (--min-recall, --max-false-fire): the flow run fails."""


def suite_options(config: str, suite: str, batch: bool | None = None) -> tuple[BenchOptions, Path]:
    """The suite's options (its skillab.yaml, validated against BenchOptions; ``batch`` from
    deployments.yaml overrides the file's) and its folder."""
    path = Path(config).resolve()
    given = load_config(path) | ({} if batch is None else {"batch": batch})
    return BenchOptions(**given | {"suite": suite}), path.parent


@flow(name="nightly-bench", flow_run_name="{suite} · nightly", log_prints=False)
async def nightly_bench(config: str, suite: str, batch: bool | None = None) -> Any:
    """Run a suite; a significant regression against its previous run fails this flow run.
    ``batch``: through the provider's batch API at half price (nobody waits on a nightly run)."""
    options, folder = suite_options(config, suite, batch)
    log = run_logger()
    log.info(f"nightly run of suite {suite} ({config}): variants {', '.join(options.variants)}")
    named = sample_bench.with_options(flow_run_name=f"{suite} · {','.join(options.variants)}")
    state = await named(options, str(folder), False, return_state=True)
    result = await state.aresult()  # a failure (a regression) raises, and fails this run too
    log.info(f"suite {suite}: {state.message}")
    # The verdict in this run's final state message too, where the runs list shows it.
    return Completed(message=state.message, data=result)


@flow(name="nightly-triggers", flow_run_name="{suite} · nightly triggers", log_prints=False)
async def nightly_triggers(config: str, suite: str) -> dict[str, Any]:
    """Run a trigger suite (paths in its options file are relative to the file's folder); a missed
    gate fails this flow run, naming every skill and figure that missed."""
    path = Path(config).resolve()
    options = load_trigger_config(path, suite)
    named = trigger_bench.with_options(flow_run_name=f"{suite} · triggers")
    result: dict[str, Any] = await named(options, str(path.parent), False)
    failures = gate_failures(
        load_report(Path(result["report_path"])), options.min_recall, options.max_false_fire
    )
    if failures:
        raise TriggerGateError(f"suite {suite!r}: " + "; ".join(failures))
    return result
