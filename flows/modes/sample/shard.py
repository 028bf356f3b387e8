"""Scale-out on Prefect's own path: a suite split into shards, one flow run per shard dispatched
with ``run_deployment`` to the process workers of a work pool (on this machine or others).

A shard only executes its units into the shared cache (``--cache-dir`` on storage every worker
sees). The parent run then finds every unit cached and grades, judges and aggregates exactly as a
single-process run does, so both give the same report. A shard that failed leaves its units
uncached, and the parent runs them itself.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.deployments import arun_deployment
from prefect.exceptions import ObjectNotFound

from executors.errors import InputError
from flows.engine.progress import Progress
from flows.engine.runlog import run_logger
from flows.engine.runner import UnitRunner
from flows.inputs.options import SHARD_FLOW, BenchOptions
from flows.modes.sample.prepare import Prepared, prepare
from flows.modes.sample.units import runner_config
from tasks.schema import ShardRun, Unit


def shard_of(sample_id: str, shards: int) -> int:
    """Stable across processes and machines (Python's hash() is salted per process)."""
    return int(hashlib.sha256(sample_id.encode()).hexdigest(), 16) % shards


def units_of_shard(prepared: Prepared, shard: int, shards: int) -> list[Unit]:
    return [u for u in prepared.units() if shard_of(u.sample_id, shards) == shard]


@flow(name=SHARD_FLOW, flow_run_name="shard {shard} of {shards}", log_prints=False)
async def bench_shard(options: BenchOptions, cwd: str, shard: int, shards: int) -> dict[str, Any]:
    """Execute one shard's units into the shared cache."""
    prepared = prepare(options, Path(cwd))
    units = units_of_shard(prepared, shard, shards)
    log = run_logger()
    log.info(f"shard {shard} of {shards}: {len(units):,} of the run's units, into the shared cache")
    progress = Progress(len(units), f"shard {shard}", enabled=False, log=log)
    runner = UnitRunner(runner_config(prepared), progress)
    results = await runner.run(units, prepared.policy(prepared.target))
    return {
        "shard": shard,
        "units": len(units),
        "calls": runner.calls,
        "cached": runner.cache_hits,
        "errors": sum(1 for r in results.values() if not r.ok),
    }


async def require_deployment(name: str) -> None:
    """The shard deployment must exist before any shard (or call) starts."""
    async with get_client() as client:
        try:
            await client.read_deployment_by_name(name)
        except ObjectNotFound:
            raise InputError(
                f"--shards: no deployment {name!r} on the Prefect server; register it once with "
                "`python -m deployments --register-shards POOL`"
            ) from None


async def dispatch_shards(prepared: Prepared, cwd: Path) -> list[ShardRun]:
    """One flow run per shard on the work pool's workers; waits for all of them."""
    o = prepared.options
    await require_deployment(o.shard_deployment)
    runs = await asyncio.gather(
        *(
            arun_deployment(
                name=o.shard_deployment,
                parameters={
                    "options": o.model_copy(update={"shards": 1}).model_dump(mode="json"),
                    "cwd": str(cwd.resolve()),
                    "shard": i,
                    "shards": o.shards,
                },
                flow_run_name=f"{o.suite or prepared.samples_path.name} · shard {i + 1}/{o.shards}",
                tags=["skillab", "sample", "shard", *([o.suite] if o.suite else [])],
                timeout=None,
                poll_interval=1,
            )
            for i in range(o.shards)
        )
    )
    return [
        ShardRun(shard=i, flow_run=str(r.id), state=r.state.name if r.state else None)
        for i, r in enumerate(runs)
    ]
