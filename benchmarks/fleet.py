"""Sessions in containers of a Docker work pool against sessions here in bubblewrap: the whole
``skill run`` command, wall clock, at 1, 2 and 4 workers (and the same concurrency here), and the
fleet image's build time, cold (every layer removed first) and cached.

    .venv/bin/python -m benchmarks.fleet                       # 16 sessions, 1/2/4 workers
    .venv/bin/python -m benchmarks.fleet --cold --workers 1,2,4 --sessions 16
    .venv/bin/python -m benchmarks.fleet --workers 1 --poll 0.25             # workers polling faster
    .venv/bin/python -m benchmarks.fleet --worker docker --backlog 1         # Prefect's own worker

The suite is agentic (tasks x 2 arms) with the real claude CLI in each session, against the scripted
model server of the tests in this process (its replies take ``--delay`` seconds each, three turns a
session); a temporary Prefect server; workers run one flow run at a time: the fleet's own
(``python -m deployments --fleet-worker``, which starts the next waiting run's container ahead) or
Prefect's (``prefect worker start --type docker``). The fleet run keeps ``--backlog`` sessions per
worker dispatched (the command's --concurrency), so that a run waits in the pool while the workers
are busy, as in any fleet with more sessions than workers; the run here has one per worker.
Sessions per minute count the whole command (plan, sessions, checks, judge, report), as a user
waits for it; where a fleet session's time went is read from its flow run's states. Needs the
Docker daemon and debootstrap (scripts/test.sh installs both).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.flows.engine.test_fleet import POOL
from tests.flows.helpers import Workers
from tests.flows.modes.agentic.test_skill_bench import agent, calc_project, judge, skill_run


def suite(root: Path, tasks: int) -> Path:
    return calc_project(
        root, {f"task-{i + 1:02d}-easy": (f"add {i}", f"Write calc.py #{i}.") for i in range(tasks)}
    )


def timed_run(root: Path, url: str, concurrency: int, *extra: str) -> float:
    args = [*skill_run(root, url), "--no-diagnose"]
    args += ["--concurrency", str(concurrency), "--no-reuse-baseline", *extra]
    os.chdir(root)  # the skill is found in the project's .claude/skills
    started = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(args)
    if code not in (0, 1):
        raise SystemExit(f"skill run exited {code}: {out.getvalue()[-2000:]}")
    return time.perf_counter() - started


async def phases(local_since: datetime, since: datetime) -> dict[str, float]:
    """Where a fleet session's time went, medians: a session here (its ``agent-session`` task run,
    of the local run begun ``local_since``), and of the fleet's session flow runs created ``since``,
    the wait for a worker's poll (PENDING less the later of its creation and the end of the run its
    worker ran before: a run waiting for a busy worker is not waiting for a poll), the container's
    start to its engine's first state (PENDING -> RUNNING: the worker's own work, ``docker create``
    and start, Python and the imports, the flow run read: what a container started ahead saves) and
    the flow run (RUNNING -> its end: the inputs unpacked, the session, the files packed and stored)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        TaskRunFilter,
        TaskRunFilterStartTime,
    )

    from flows.engine.container_engine import SESSION_FLOW
    from tasks.agent import run_agent_session

    gaps: dict[str, list[float]] = {"here": [], "queue": [], "start": [], "run": []}
    async with get_client() as client:
        local = await client.read_task_runs(
            task_run_filter=TaskRunFilter(start_time=TaskRunFilterStartTime(after_=local_since))
        )
        gaps["here"] = [
            (t.end_time - t.start_time).total_seconds()
            for t in local
            if t.task_key == run_agent_session.task_key
            and t.start_time
            and t.end_time
            and t.start_time < since
        ]
        runs = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[SESSION_FLOW])))
        timed = []
        for run in runs:
            if run.created is None or run.created < since:
                continue
            states = {s.type.value: s.timestamp for s in await client.read_flow_run_states(run.id)}
            if {"PENDING", "RUNNING", "COMPLETED"} <= set(states):
                timed.append((run.labels.get("prefect.worker.name"), run.created, states))
        previous_end: dict[object, datetime] = {}  # a worker -> the end of the run it ran last
        for worker, created, states in sorted(timed, key=lambda t: t[2]["PENDING"]):
            ready = max(created, previous_end.get(worker, created))
            previous_end[worker] = states["COMPLETED"]
            gaps["queue"].append((states["PENDING"] - ready).total_seconds())
            gaps["start"].append((states["RUNNING"] - states["PENDING"]).total_seconds())
            gaps["run"].append((states["COMPLETED"] - states["RUNNING"]).total_seconds())
    return {name: statistics.median(values) for name, values in gaps.items() if values}


def image_times(cold: bool) -> tuple[float | None, float]:
    from deployments.image import build

    cold_s = None
    if cold:
        for repo in ("skillab-session", "skillab-base", "skillab-rootfs"):
            tags = subprocess.run(
                ["docker", "images", "-q", repo], capture_output=True, text=True, check=True
            ).stdout.split()
            if tags:
                subprocess.run(["docker", "rmi", "-f", *set(tags)], capture_output=True, check=False)
        cold_s = build().seconds
    return cold_s, build().seconds


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=16, help="sessions (tasks x 2 arms)")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per scripted model reply")
    parser.add_argument("--cold", action="store_true", help="also time the image build from nothing")
    parser.add_argument(
        "--poll",
        type=float,
        default=1.0,
        help="the workers' PREFECT_WORKER_QUERY_SECONDS (Prefect's default: 10)",
    )
    parser.add_argument(
        "--worker",
        choices=("fleet", "docker"),
        default="fleet",
        help="fleet: python -m deployments --fleet-worker; docker: prefect worker start --type docker",
    )
    parser.add_argument(
        "--backlog", type=int, default=2, help="sessions dispatched per worker in the fleet run (>= 1)"
    )
    args = parser.parse_args(argv)
    if args.backlog < 1:
        parser.error(f"--backlog {args.backlog}: at least one session per worker")
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="skillab-bench-prefect-")
    from flows.cli.prefect_env import configure_prefect

    configure_prefect()
    from prefect.testing.utilities import prefect_test_harness

    from deployments.fleet import register

    cold_s, cached_s = image_times(args.cold)
    print(
        f"image build: cold {cold_s:.0f} s, cached {cached_s:.2f} s"
        if cold_s
        else f"image build: cached {cached_s:.2f} s"
    )
    rows = []
    where: dict[int, dict[str, float]] = {}
    with prefect_test_harness(server_startup_timeout=180), tempfile.TemporaryDirectory() as tmp:
        register(POOL, str(Path(tmp) / "storage"), ("claude",))
        workers = Workers(POOL, args.worker, poll_s=args.poll)
        with FakeProvider(judge, agent=agent, delay=args.delay) as server:
            os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-bench")
            for n in (int(w) for w in args.workers.split(",")):
                local_since = datetime.now(UTC)
                local = timed_run(suite(Path(tmp) / f"local-{n}", args.sessions // 2), server.url, n)
                for i in range(n):
                    workers.start(f"bench-{i}")
                since = datetime.now(UTC)
                try:
                    fleet = timed_run(
                        suite(Path(tmp) / f"fleet-{n}", args.sessions // 2),
                        server.url,
                        n * args.backlog,
                        "--fleet-pool",
                        POOL,
                    )
                finally:
                    workers.stop()
                rows.append((n, local, fleet))
                where[n] = asyncio.run(phases(local_since, since))
    print(f"{args.sessions} sessions, whole `skill run` command, wall clock:")
    print("workers | here (bwrap) sessions/min | fleet (containers) sessions/min | fleet/here time")
    for n, local, fleet in rows:
        print(
            f"{n} | {args.sessions / local * 60:.1f} | {args.sessions / fleet * 60:.1f} | {fleet / local:.2f}x"
        )
    n1 = next(((local, fleet) for n, local, fleet in rows if n == 1), None)
    if n1:
        print(f"per-session overhead of a container at 1 worker: {(n1[1] - n1[0]) / args.sessions:.2f} s")
    print(
        f"medians per session flow run ({args.worker} workers polling every {args.poll:g} s, backlog {args.backlog}):"
    )
    for n, gaps in where.items():
        told = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in gaps.items())
        added = sum(gaps.get(name, 0.0) for name in ("queue", "start", "run")) - gaps.get("here", 0.0)
        print(f"{n} worker(s): {told}; a container adds {added:.2f} s to a session")


if __name__ == "__main__":
    main_()
