"""What one Prefect task run costs per unit, and what a batch of units per task run would save.

    .venv/bin/python -m benchmarks.prefect_cost                 # 2,000 units, concurrency 32
    .venv/bin/python -m benchmarks.prefect_cost --units 5000 --trials 3

An inner-loop figure, not the user's clock (that is benchmarks/peers.py): inside one flow run on a
real Prefect server (its own process, a fresh database), N units whose body does nothing
(``await asyncio.sleep(0)``) are run under a concurrency cap of C in five ways:

- ``coroutines``: plain coroutines, no task runs (the floor: asyncio and the flow run);
- ``task per unit``: one task run per unit, as skillab runs them (same task options as call-model);
- ``... no events``: the same with the client's task-run state events switched off (monkeypatched:
  Prefect has no setting for it; the UI then knows nothing of the task runs);
- ``task per 10 units`` and ``task per 100 units``: one task run per batch;
- ``task per unit, by its events``: one task run per unit as skillab makes them now, without the task
  engine (``tasks/unit_runs.py``: its Running and Completed events, batched to ``POST /api/events``).

For each it prints the client process's CPU per unit, the Prefect server's CPU per unit (its process,
measured until it is idle again: events are recorded after the client is done), and the shares the
task run adds over the plain coroutines. Everything else skillab does per unit (the HTTP call, the
grading, the cache write) is outside these figures; the orchestration benchmark gives the total.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks import units_parser
from benchmarks.orchestration import ROOT, free_port, start, stop, wait_http

MODES = (
    "coroutines",
    "task per unit",
    "task per unit, no events",
    "task per 10 units",
    "task per 100 units",
    "task per unit, by its events",
)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pid: int, quiet_s: float = 1.0, limit_s: float = 60.0) -> None:
    """Wait until the server has spent (almost) no CPU for ``quiet_s``: its event backlog is done."""
    deadline = time.monotonic() + limit_s
    last = process_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = process_cpu(pid)
        if now - last < 0.02 * quiet_s:
            return
        last = now


def measure(units: int, concurrency: int, server_pid: int) -> dict[str, dict[str, float]]:
    """Every mode once, in this process, inside one flow run (imports and the flow's start untimed)."""
    import prefect.task_engine as engine
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    options: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False, "retries": 3}

    @task(name="unit", task_run_name="unit-{i}", **options)
    async def one(i: int) -> int:
        await asyncio.sleep(0)
        return i

    @task(name="units", task_run_name="units-{first}", **options)
    async def many(first: int, size: int) -> int:
        for _ in range(size):
            await asyncio.sleep(0)
        return first

    async def bare(i: int) -> int:
        await asyncio.sleep(0)
        return i

    from tasks.unit_runs import UnitRun, UnitRuns

    async def evented(unit_runs: UnitRuns, i: int) -> int:
        # UnitRuns.call's events around a unit (its retries and the model call left out)
        run = UnitRun(f"unit-{i}", f"k{i}")
        unit_runs._event(run, "RUNNING", "Running", run.start)
        await asyncio.sleep(0)
        unit_runs._event(run, "COMPLETED", "Completed", dt.datetime.now(dt.UTC), end=True)
        return i

    async def capped(jobs: list[Callable[[], Awaitable[int]]]) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def run(job: Callable[[], Awaitable[int]]) -> None:
            async with gate:
                await job()

        await asyncio.gather(*(run(j) for j in jobs))

    def jobs(mode: str, unit_runs: UnitRuns) -> list[Callable[[], Awaitable[int]]]:
        if mode == "coroutines":
            return [functools.partial(bare, i) for i in range(units)]
        if mode.endswith("by its events"):
            return [functools.partial(evented, unit_runs, i) for i in range(units)]
        if mode.startswith("task per unit"):
            return [functools.partial(one, i) for i in range(units)]
        size = int(mode.split()[2])
        return [functools.partial(many, f, size) for f in range(0, units, size)]

    @flow(name="prefect-cost")
    async def cost() -> dict[str, dict[str, float]]:
        unit_runs = UnitRuns.of_current_flow(retries=3)
        await capped(jobs("task per unit", unit_runs)[:50])  # warm: first task runs build caches and clients
        settle(server_pid)
        out = {}
        emit = engine.emit_task_run_state_change_event
        for mode in MODES:
            if mode.endswith("no events"):
                engine.emit_task_run_state_change_event = lambda *a, **k: None  # type: ignore[assignment]
            cpu0, wall0, server0 = time.process_time(), time.perf_counter(), process_cpu(server_pid)
            if mode.endswith("by its events"):
                async with unit_runs:  # its last batch sent on leaving: in the figures
                    await capped(jobs(mode, unit_runs))
            else:
                await capped(jobs(mode, unit_runs))
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            engine.emit_task_run_state_change_event = emit
            settle(server_pid)
            out[mode] = {"client_ms": cpu / units * 1000, "wall_s": wall}
            out[mode]["server_ms"] = (process_cpu(server_pid) - server0) / units * 1000
        return out

    return asyncio.run(cost())


def trial(units: int, concurrency: int) -> dict[str, dict[str, float]]:
    """One measurement against a fresh Prefect server in its own process."""
    from flows.cli.prefect_env import PREFECT_DEFAULTS

    home = Path(tempfile.mkdtemp(prefix="skillab-prefect-cost-"))
    port = free_port()
    env = os.environ | PREFECT_DEFAULTS | {"PREFECT_HOME": str(home), "PYTHONPATH": str(ROOT)}
    server = start([sys.executable, "-m", "prefect", "server", "start", "--port", str(port)], env)
    try:
        wait_http(f"http://127.0.0.1:{port}/api/health")
        measure = ["--measure", str(server.pid), "--units", str(units), "--concurrency", str(concurrency)]
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.prefect_cost", *measure],
            cwd=ROOT,
            env=env | {"PREFECT_API_URL": f"http://127.0.0.1:{port}/api"},
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        stop(server)
        shutil.rmtree(home, ignore_errors=True)
    result: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = units_parser(__doc__, 2000)
    parser.add_argument("--trials", type=int, default=1, help="each against a fresh server; medians printed")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)  # the server's pid: run here
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.units, args.concurrency, args.measure)))
        return
    trials = [trial(args.units, args.concurrency) for _ in range(args.trials)]

    def median(mode: str, key: str) -> float:
        return statistics.median(t[mode][key] for t in trials)

    base = median("coroutines", "client_ms")
    print(f"{args.units} no-op units, concurrency {args.concurrency}, {args.trials} trial(s), medians")
    print("| mode | client CPU per unit | over coroutines | server CPU per unit | wall |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        client = median(mode, "client_ms")
        print(
            f"| {mode} | {client:.2f} ms | +{client - base:.2f} ms | {median(mode, 'server_ms'):.2f} ms "
            f"| {median(mode, 'wall_s'):.2f} s |"
        )


if __name__ == "__main__":
    main()
