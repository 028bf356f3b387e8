"""What the fleet's tests share: a pool of Docker workers per test module (its own pool name, so
two modules run side by side on one Docker daemon without counting each other's containers), the
suite they run, and reading what the containers did."""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import Workers
from tests.flows.modes.agentic.test_skill_bench import skill_run

CLIS = ("claude", "copilot", "opencode")  # one image for every test here: its base layer is made once
#: Held while a module builds the image and registers its pool: the first builds, the others find it.
IMAGE_LOCK = Path("/tmp/skillab-fleet-image.lock")


def docker_ready() -> str | None:
    try:
        proc = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if proc.returncode == 0 else proc.stderr.decode()[-300:]


def register(pool: str, storage: str) -> None:
    """The pool and its deployment, the image built first where it is missing (one module at a time)."""
    from deployments.fleet import register as register_pool

    with open(IMAGE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        register_pool(pool, storage, CLIS)


@contextlib.contextmanager
def fleet_pool(
    pool: str, workers: int, tmp_path_factory: pytest.TempPathFactory, kind: str = "fleet"
) -> Iterator[Workers]:
    """The image, the pool and its deployment (storage: a folder, mounted), ``workers`` workers of
    ``kind`` (fleet: the fleet's own, which start containers ahead; docker: Prefect's own)."""
    if (problem := docker_ready()) is not None:
        pytest.fail(f"the Docker daemon is not running (scripts/test.sh starts it): {problem}")
    storage = tmp_path_factory.mktemp("fleet-storage")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ANTHROPIC_API_KEY", "sk-fleet")  # into a Secret block the worker gives containers
        env.setenv("OPENAI_API_KEY", "sk-fleet-other")  # registered too: no claude container gets it
        register(pool, str(storage))
    running = Workers(pool, kind, tmp_path_factory.mktemp("workers"))
    try:
        for i in range(workers):
            running.start(f"worker-{i}")
        yield running
    finally:
        running.stop()


def run(suite: Path, url: str, results: str, *extra: str, runs: int = 2) -> dict[str, Any]:
    args = [*skill_run(suite, url, results), "--runs", str(runs)]
    assert main([*args, "--timeout", "60", "--concurrency", "6", *extra]) == 0
    (folder,) = (suite / results).glob("calc-skill-*")
    return json.loads((folder / "report.json").read_text())


#: What differs between two runs of the same suite whatever ran them: timings, costs and token counts
#: (a container's CLI describes another machine in its system prompt), folders, ids.
VARYING = re.compile(r"duration|tokens|cost|latency|timestamp|seconds|dir$|outputs|^id$", re.I)


def comparable(value: Any) -> Any:
    """A report less what varies between runs (its meta is the run's own)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k != "meta" and not VARYING.search(k)}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def first_turns(server: FakeProvider) -> int:
    """Agent sessions the scripted server saw start: a request with tools and no tool result yet."""
    return server.count(
        lambda c: bool(c.body.get("tools")) and "tool_result" not in json.dumps(c.body["messages"])
    )


def containers(pool: str, *status: str) -> list[str]:
    """The ids of the pool's containers that exist now (running or paused), or in ``status``."""
    proc = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=io.prefect.work-pool-name={pool}"]
        + [f"--filter=status={s}" for s in status],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()


def wait_for_sessions(server: FakeProvider, n: int) -> None:
    """Until ``n`` sessions have begun talking to the model (a pool's containers are more than its
    running sessions where workers start the next ones ahead)."""
    deadline = time.monotonic() + 240
    while first_turns(server) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first_turns(server) >= n, f"{n} sessions were to be running"


def wait_for_containers(pool: str, n: int) -> None:
    deadline = time.monotonic() + 240
    while len(containers(pool)) < n and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(containers(pool)) == n, f"{n} sessions were to be running in containers"
