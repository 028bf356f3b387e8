"""A scheduled sample suite: given by its options file, compared with its previous run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from flows.engine.runlog import night_name, run_logger
from flows.inputs.options import BenchOptions
from flows.inputs.samples import load_config
from flows.modes.sample.control import with_controls
from flows.modes.sample.flow import sample_bench


def suite_options(config: str, suite: str, batch: bool | None = None) -> tuple[BenchOptions, Path]:
    """The suite's options (its skillab.yaml, validated against BenchOptions; ``batch`` from
    deployments.yaml overrides the file's) and its folder."""
    path = Path(config).resolve()
    given = load_config(path) | ({} if batch is None else {"batch": batch})
    return BenchOptions(**given | {"suite": suite}), path.parent


@flow(name="nightly-bench", flow_run_name=night_name, log_prints=False)
async def nightly_bench(config: str, suite: str, batch: bool | None = None) -> Any:
    """Run a suite; a significant regression against its previous run fails this flow run.
    ``batch``: through the provider's batch API at half price (nobody waits on a nightly run).

    The benchmark runs in this flow run itself, not a subflow: the run the deployment lists holds
    the night's task runs, artifacts and log, and ends in the benchmark's own named state."""
    options, folder = suite_options(config, suite, batch)
    options, told = with_controls(options, folder)
    log = run_logger()
    log.info(f"nightly run of suite {suite} ({config}): variants {', '.join(options.variants)}")
    for line in told:
        log.info(line)
    return await sample_bench.fn(options, str(folder), False)
