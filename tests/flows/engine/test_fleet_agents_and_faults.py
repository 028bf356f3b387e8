"""The fleet beyond one CLI and a mounted folder: Copilot CLI and OpenCode in the containers, storage
on S3, the budget, a hung container, the Prefect server restarted mid-run. A pool of its own (two
workers), so this module runs beside test_fleet.py; its workers are Prefect's own (`prefect worker
start --type docker`), which serve the fleet's pool as well as the fleet's worker does."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.fakes.s3 import s3_bucket
from tests.flows.engine.fleet_support import containers, first_turns, register, run, wait_for_containers
from tests.flows.helpers import Workers, subprocess_env
from tests.flows.modes.agentic.test_skill_bench import agent, calc_project, judge, skill_run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]
POOL = "skillab-test-fleet-more"
FLEET_WORKERS = 2
FLEET_WORKER_KIND = "docker"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with s3_bucket(monkeypatch, "skillab-fleet") as bucket:
        yield f"s3://{bucket}/runs"


def test_sessions_travel_through_s3_with_nothing_mounted(
    fleet: Workers, s3: str, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool whose storage is an s3:// URL: no folder is mounted into its containers and no
    credential of the bucket reaches them: each flow run carries URLs signed for its own session's
    part (its inputs and record to read, its mark, files and record to write), and every session's
    inputs, record and files travel through the bucket; the parent grades them as usual."""
    import fsspec
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    register("skillab-test-s3", s3)
    workers = Workers("skillab-test-s3", "docker", tmp_path)
    workers.start("s3-worker")
    monkeypatch.chdir(suite)
    for path in (suite / "suite").glob("task-03*"):
        path.unlink()
    try:
        with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
            report = run(suite, server.url, "s3", "--fleet-pool", "skillab-test-s3", runs=1)
    finally:
        workers.stop()

    async def template() -> tuple[dict[str, Any], list[Any]]:
        async with get_client() as client:
            pool = await client.read_work_pool("skillab-test-s3")
            deployment = await client.read_deployment_by_name("skillab-session/skillab-test-s3")
            runs = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
            )
            return pool.base_job_template, runs

    base, runs = asyncio.run(template())
    props = base["variables"]["properties"]
    assert props["volumes"]["default"] == [] and props["env"]["default"] == {}
    assert runs
    for r in runs:  # URLs signed for its session's part alone, no credential of the bucket
        key, inputs = r.parameters["key"], r.parameters["inputs"]
        assert sorted(r.parameters["signed"]) == sorted(
            [f"GET inputs/{inputs}.tar", f"GET sessions/{key}/session.json"]
            + [f"PUT sessions/{key}/{name}" for name in ("started", "files.tar", "session.json")]
        )
        assert "fleet-test-secret" not in json.dumps(r.parameters) + json.dumps(r.job_variables)
    records = fsspec.filesystem("s3", skip_instance_cache=True).glob(
        f"{s3.removeprefix('s3://')}/sessions/*/session.json"
    )
    assert len(records) == 4  # 2 tasks x 2 arms
    assert report["summary"]["with-skill"]["avgCompositeScore"] == 90


def test_copilot_and_opencode_sessions_run_in_the_fleets_containers(
    fleet: Workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copilot CLI and OpenCode in the fleet's image: a two-agent matrix through the pool finds each
    agent's scripted effect (none on copilot; on opencode a fix of one task of two), every session clean."""
    from tests.flows.modes.agentic.test_agent_matrix import EASY, anthropic_agents, opencode_agent

    calc_project(
        tmp_path,
        {"task-01-easy": ("task 1", "Create calc.py with add(a, b)."), "task-02-easy": ("task 2", EASY)},
    )
    monkeypatch.chdir(tmp_path)
    with FakeProvider(judge, agent=anthropic_agents) as server:
        server.chat_agent = opencode_agent
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["skill", "run", "--skill", "calc-skill", "--tasks", "suite", "--runner", "copilot,opencode"]
        args += ["--base-url", f"copilot={server.url},opencode={server.url}/v1"]
        args += ["--judge-model", "claude-opus-4", "--results-dir", str(tmp_path / "results")]
        main([*args, "--timeout", "240", "--concurrency", "4", "--fleet-pool", POOL])
    (root,) = (tmp_path / "results").glob("calc-skill-agents-*")
    report = json.loads((root / "report.json").read_text())
    lifts = {a["runner"]: a for a in report["matrix"]["agents"]}
    assert lifts["copilot"]["paired"]["mean"] == 0 and lifts["opencode"]["paired"]["mean"] == 25
    assert all(a["invokedRate"] == 1.0 and a["errors"] == 0 for a in lifts.values())


def test_the_budget_holds_for_sessions_in_the_pool(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--max-calls counts the sessions the parent dispatches: 2 of the 6 run, 4 are not run."""
    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        args = [*skill_run(suite, server.url, "budget"), "--max-calls", "2"]
        main([*args, "--fleet-pool", POOL, "--concurrency", "1"])
        assert first_turns(server) == 2
    (folder,) = (suite / "budget").glob("calc-skill-*")
    meta = json.loads((folder / "report.json").read_text())["meta"]
    assert len(meta["notRun"]) == 4 and all(n["reason"] == "budget" for n in meta["notRun"])


def test_a_hung_container_is_cancelled_and_counted_as_an_error(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A container frozen mid-session (docker pause) stores no result: once the session's timeout and
    the grace period have passed since a worker took it, its flow run is cancelled and the session is
    an error the report counts. (A frozen container outlives the cancellation: removed here.)"""
    monkeypatch.chdir(suite)
    for path in (suite / "suite").glob("task-0[23]*"):
        path.unlink()
    monkeypatch.setenv("SKILLAB_FLEET_GRACE_S", "1")
    frozen: list[str] = []

    def freeze_the_first() -> None:
        deadline = time.monotonic() + 120
        while not frozen and time.monotonic() < deadline:
            for container in containers(POOL, "running"):
                if subprocess.run(["docker", "pause", container], capture_output=True).returncode == 0:
                    frozen.append(container)
                    break
            time.sleep(0.2)

    with FakeProvider(judge, agent=agent) as server:
        # the agent's first turn answered only once a container is frozen: no session can end before
        # the freeze (a loaded machine may take seconds to pause one)
        server.held = lambda call: bool(call.body.get("stream")) and not frozen
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        args = [*skill_run(suite, server.url, "hung"), "--timeout", "20"]
        watcher = threading.Thread(target=freeze_the_first)
        watcher.start()
        try:
            main([*args, "--fleet-pool", POOL, "--concurrency", "1"])
        finally:
            watcher.join()
            subprocess.run(["docker", "rm", "-f", *frozen], capture_output=True, check=False)
    (folder,) = (suite / "hung").glob("calc-skill-*")
    errors = [json.loads(p.read_text()) for p in folder.glob("outputs/task-01/*/meta.json")]
    assert frozen and any(m["status"] == "error" and "after a worker took it" in m["error"] for m in errors)


def restart_the_server(down_s: float) -> None:
    """The test's Prefect server killed outright and, ``down_s`` later, started again on its port
    with its database (a crash and a restart, as a machine's service manager does it)."""
    import httpx
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    server = SubprocessASGIServer._instances[None]
    assert server.api_url == str(get_current_settings().api.url) and server.server_process
    server.server_process.kill()
    server.server_process.wait()
    time.sleep(down_s)
    server.server_process = server._run_uvicorn_command()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{server.api_url}/health", timeout=5).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError("the Prefect server did not come back")


def test_a_prefect_server_restarted_mid_run_loses_nothing(
    fleet: Workers, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server killed while sessions run in containers and started again: the run finishes with
    every session run once and none an error, the fleet's limit held throughout, every slot it took
    given back (the leases outlive the server: a leaked slot would stall the next run), and the run
    itself, taken back once the API answers again, completed in the Prefect UI."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    from flows.engine.fleet import fleet_name

    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent, delay=1.0).anthropic_env(monkeypatch) as server:
        args = [*skill_run(suite, server.url, "restart"), "--fleet-pool", POOL, "--fleet-sessions", "2"]
        # the parent in a process of its own: a run that stalls is killed, not left holding the test
        with open(tmp_path / "parent.err", "wb") as err:
            parent = subprocess.Popen(
                [sys.executable, "-m", "flows.bench", *args, "--timeout", "90"],
                env=subprocess_env(),
                stderr=err,
            )
        try:
            wait_for_containers(POOL, 2)  # the fleet's two sessions running
            restart_the_server(down_s=5)
            assert parent.wait(timeout=300) == 0
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
        assert first_turns(server) == 6 and server.peak <= 2
        limit = fleet_name("claude")

    async def afterwards() -> tuple[int, Any]:
        async with get_client() as client:
            slots = (await client.read_global_concurrency_limit_by_name(limit)).active_slots
            (newest,) = await client.read_flow_runs(  # this test's parent
                flow_filter=FlowFilter(name=FlowFilterName(any_=["skill-bench"])),
                sort=FlowRunSort.START_TIME_DESC,
                limit=1,
            )
            return slots, newest.state

    slots, state = asyncio.run(afterwards())
    told = (tmp_path / "parent.err").read_text()
    assert slots == 0 and state is not None and state.is_completed(), state
    assert "stopped answering" in told and "answers again: the run goes on with it" in told, told
    (folder,) = (suite / "restart").glob("calc-skill-*")
    report = json.loads((folder / "report.json").read_text())
    assert all(report["summary"][arm]["errorCount"] == 0 for arm in ("baseline", "with-skill"))
