"""The scheduled benchmark: a suite given by its options file, compared with its previous run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed

from flows.engine.runlog import run_logger
from flows.inputs.options import BenchOptions
from flows.inputs.samples import load_config
from flows.sample_bench import sample_bench


def suite_options(config: str, suite: str) -> tuple[BenchOptions, Path]:
    """The suite's options (its skillab.yaml, validated against BenchOptions) and its folder."""
    path = Path(config).resolve()
    return BenchOptions(**{**load_config(path), "suite": suite}), path.parent


@flow(name="nightly-bench", flow_run_name="{suite} · nightly", log_prints=False)
async def nightly_bench(config: str, suite: str) -> Any:
    """Run a suite; a significant regression against its previous run fails this flow run."""
    options, folder = suite_options(config, suite)
    log = run_logger()
    log.info(f"nightly run of suite {suite} ({config}): variants {', '.join(options.variants)}")
    named = sample_bench.with_options(flow_run_name=f"{suite} · {','.join(options.variants)}")
    state = await named(options, str(folder), False, return_state=True)
    result = await state.aresult()  # a failure (a regression) raises, and fails this run too
    log.info(f"suite {suite}: {state.message}")
    # The verdict in this run's final state message too, where the runs list shows it.
    return Completed(message=state.message, data=result)
