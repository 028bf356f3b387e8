"""The fleet gateway as a hostile container meets it: a container holds no Prefect credential, and the
gateway passes only its own flow run's calls, under the gateway's credential; its events reach the
API only when they are about its own run; it reaches only the endpoints its run names. Against the
real Prefect server of the tests (which requires its credential), over the gateway's real socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from executors.relay import accept
from flows.engine.api_gate import ApiGate
from flows.engine.gateway import PREFECT, Gateway

pytestmark = pytest.mark.usefixtures("prefect_harness")
POOL = "skillab-test-gate"


def local_relay(path: Path, name: str) -> int:
    """What a container's relay is: a loopback port whose connections reach the gateway's socket
    under the destination ``name``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    threading.Thread(target=accept, args=(server, str(path), f"{name}\n".encode()), daemon=True).start()
    return int(server.getsockname()[1])


async def session_run(client: Any, base_url: str) -> Any:
    """A flow run of a deployment on the pool, as the fleet's parent creates one."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    with contextlib.suppress(ObjectAlreadyExists):
        await client.create_work_pool(WorkPoolCreate(name=POOL, type="process"))
    flow_id = await client.create_flow_from_name("gate-session")
    deployment = await client.create_deployment(flow_id, "gate", work_pool_name=POOL, entrypoint="x.py:f")
    return await client.create_flow_run_from_deployment(
        deployment, parameters={"request": {"cli": "claude"}, "base_url": base_url, "storage": "/nowhere"}
    )


@contextlib.asynccontextmanager
async def gateway(tmp_path: Path, container_run: dict[str, str]) -> AsyncIterator[Path]:
    """The gateway for POOL on a socket of its own; ``container_run`` says which flow run the
    connecting container was started for (what Docker's labels say on a worker machine)."""
    from prefect.settings import get_current_settings

    api = get_current_settings().api
    gate = ApiGate(str(api.url), api.auth_string.get_secret_value() if api.auth_string else None, None)
    path = tmp_path / "gw" / "gateway.sock"
    served = Gateway(POOL, gate, flow_run=lambda _pid: container_run.get("id"), path=path)
    task = asyncio.create_task(served.serve())
    while not path.exists():
        await asyncio.sleep(0.02)
    try:
        yield path
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_container_s_api_calls_are_its_own_flow_run_s_only(tmp_path: Path) -> None:
    from prefect.client.orchestration import PrefectClient, get_client
    from prefect.client.schemas.actions import LogCreate
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Running

    async with get_client() as admin:
        mine = await session_run(admin, "http://127.0.0.1:9/v1")
        other = await session_run(admin, "http://127.0.0.1:9/v1")
    async with gateway(tmp_path, {"id": str(mine.id)}) as path:
        port = local_relay(path, PREFECT)
        api = f"http://127.0.0.1:{port}/api"
        # the container's client holds no credential; the gateway adds its own
        async with PrefectClient(api, auth_string=None, api_key=None) as client:
            assert (await client.read_flow_run(mine.id)).id == mine.id
            await client.set_flow_run_state(mine.id, Running())
            await client.update_flow_run(mine.id, name="renamed")  # its flow_run_name, as the engine does
            log = {"name": "t", "level": 20, "message": "m", "timestamp": "2026-12-02T00:00:00Z"}
            await client.create_logs([LogCreate(flow_run_id=mine.id, **log)])
            # what Prefect's cancellation watch polls: its own run, whatever the other conditions
            watched = await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[mine.id]))
            )
            assert [r.id for r in watched] == [mine.id]
        async with httpx.AsyncClient(base_url=api) as raw:
            refused = [
                await raw.get(f"/flow_runs/{other.id}"),
                await raw.post(f"/flow_runs/{other.id}/set_state", json={"state": {"type": "CANCELLED"}}),
                await raw.post("/block_documents/filter", json={"include_secrets": True}),
                await raw.post("/flow_runs/filter", json={}),
                await raw.post(
                    "/flow_runs/filter", json={"flow_runs": {"id": {"any_": [str(mine.id), str(other.id)]}}}
                ),
                await raw.post("/variables/filter", json={}),
                await raw.post(f"/deployments/{mine.deployment_id}/create_flow_run", json={}),
                await raw.post("/logs/", json=[{**log, "flow_run_id": str(other.id)}]),
                await raw.get(f"/flow_runs/{mine.id}/../../block_documents/filter"),
                await raw.get(f"/flow_runs/{mine.id}/%2e%2e/{other.id}"),
                await raw.delete(f"/flow_runs/{mine.id}"),
                # what a worker would start a new container of, with host folders of its choosing
                await raw.patch(f"/flow_runs/{mine.id}", json={"job_variables": {"volumes": ["/:/host"]}}),
                await raw.post(f"/flow_runs/{mine.id}/set_state", json={"state": {"type": "SCHEDULED"}}),
                # retries: the server itself would schedule it again after a failure
                await raw.patch(f"/flow_runs/{mine.id}", json={"empirical_policy": {"retries": 1000}}),
                # "or_": its own id or any other condition, so every run
                await raw.post(
                    "/flow_runs/filter",
                    json={
                        "flow_runs": {
                            "operator": "or_",
                            "id": {"any_": [str(mine.id)]},
                            "name": {"like_": "a"},
                        }
                    },
                ),
                # a keyed artifact's latest version is every run's; a log in another run's task run
                await raw.post(
                    "/artifacts/",
                    json={
                        "key": "suite-summary",
                        "type": "markdown",
                        "data": "x",
                        "flow_run_id": str(mine.id),
                    },
                ),
                await raw.post(
                    "/logs/", json=[{**log, "flow_run_id": str(mine.id), "task_run_id": str(uuid.uuid4())}]
                ),
                await raw.get(f"/task_runs/{uuid.uuid4()}"),
            ]
            assert [r.status_code for r in refused] == [403] * len(refused), [r.text for r in refused]
            assert "is not this flow run's" in refused[0].json()["detail"]
            # a credential the container made up is dropped, not forwarded
            forged = await raw.get(f"/flow_runs/{other.id}", headers={"Authorization": "Basic eDp5"})
            assert forged.status_code == 403
    async with get_client() as admin:
        assert (await admin.read_flow_run(other.id)).state_type != "CANCELLED"
        assert (await admin.read_flow_run(mine.id)).state_type == "RUNNING"


async def test_a_container_s_events_reach_the_api_only_about_its_own_run(tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    async with get_client() as admin:
        mine = await session_run(admin, "http://127.0.0.1:9/v1")
        other = await session_run(admin, "http://127.0.0.1:9/v1")
    mine_run, other_run = (f"prefect.flow-run.{r.id}" for r in (mine, other))
    as_run = {"prefect.resource.role": "flow-run"}
    task = f"prefect.task-run.{uuid.uuid4()}"
    sent = {  # (resource, related, payload) -> whether the API gets it
        "own run": ((mine_run, [], {}), True),
        "another run": ((other_run, [], {}), False),
        "own task run": ((task, [{"prefect.resource.id": mine_run, **as_run}], {}), True),
        # Prefect's recorder takes the task run's flow run from the payload: a forged one is dropped
        "a task run moved to another run": (
            (
                task,
                [{"prefect.resource.id": mine_run, **as_run}],
                {"task_run": {"flow_run_id": str(other.id)}},
            ),
            False,
        ),
        "a task run of two runs": (
            (task, [{"prefect.resource.id": r, **as_run} for r in (other_run, mine_run)], {}),
            False,
        ),
    }
    names = {what: f"skillab.test.{uuid.uuid4().hex}" for what in sent}
    async with gateway(tmp_path, {"id": str(mine.id)}) as path:
        port = local_relay(path, PREFECT)
        url = f"ws://127.0.0.1:{port}/api/events/in"
        async with connect(url, subprotocols=[Subprotocol("prefect")]) as stream:
            await stream.send(json.dumps({"type": "auth", "token": None}))
            assert json.loads(await stream.recv())["type"] == "auth_success"
            for what, ((resource, related, payload), _) in sent.items():
                event = {
                    "occurred": "2026-12-02T00:00:00Z",
                    "event": names[what],
                    "resource": {"prefect.resource.id": resource},
                    "related": related,
                    "payload": payload,
                    "id": str(uuid.uuid4()),
                }
                await stream.send(json.dumps(event))
            await stream.ping()
    kept = {what for what, (_, passes) in sent.items() if passes}
    async with get_client() as admin:
        seen: set[str] = set()
        for _ in range(100):  # the server persists events a moment after it takes them
            for what, name in names.items():
                found = await admin._client.post(
                    "/events/filter",
                    json={
                        "filter": {"event": {"name": [name]}, "occurred": {"since": "2026-12-01T00:00:00Z"}}
                    },
                )
                if found.json().get("events"):
                    seen.add(what)
            if kept <= seen:
                break
            await asyncio.sleep(0.1)
    assert seen == kept


async def test_a_container_reaches_the_endpoints_its_run_names_and_nothing_else(tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    named = await asyncio.start_server(echo, "127.0.0.1", 0)
    unnamed = await asyncio.start_server(echo, "127.0.0.1", 0)
    named_port, unnamed_port = (s.sockets[0].getsockname()[1] for s in (named, unnamed))
    async with get_client() as admin:
        mine = await session_run(admin, f"http://127.0.0.1:{named_port}/v1")

    async def through(path: Path, name: str) -> bytes:
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(f"{name}\nhello\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout=10)
        writer.close()
        return answer

    async with gateway(tmp_path, {"id": str(mine.id)}) as path:
        assert await through(path, f"127.0.0.1:{named_port}") == b"hello\n"
        assert await through(path, f"127.0.0.1:{unnamed_port}") == b""
        assert await through(path, "127.0.0.1:22") == b""
    async with gateway(tmp_path, {}) as path:  # a process in no container of the pool
        assert await through(path, f"127.0.0.1:{named_port}") == b""
    for server in (named, unnamed):
        server.close()


def test_a_session_s_flow_run_unsets_the_worker_s_prefect_credential() -> None:
    """The job variables every session's flow run is created with: the worker passes its own settings
    to containers unless they are unset (None), so none of its Prefect credentials reaches one."""
    from flows.engine.remote import PREFECT_CREDENTIALS, key_variables

    env = key_variables({"anthropic": "ANTHROPIC_API_KEY"}, "claude")["env"]
    assert {name: env[name] for name in PREFECT_CREDENTIALS} == dict.fromkeys(PREFECT_CREDENTIALS)
    assert "PREFECT_API_AUTH_STRING" in os.environ  # the tests' worker would pass this one on
    assert env["ANTHROPIC_API_KEY"].startswith("{{ prefect.blocks.secret.")


def test_a_process_in_no_container_of_the_pool_is_nobody() -> None:
    """The gateway's own way of telling a caller: the pool's container sharing the caller's pid
    namespace; this test's process is in none (and a cgroup it could move into says nothing)."""
    from flows.engine.gateway import DockerPeers

    assert DockerPeers(POOL)(os.getpid()) is None
