"""The fleet container's flow run without Prefect's engine: against a real Prefect server (the
session's test server) for the states and logs the UI shows, and against a scripted API for the
answers a real server gives only under load (WAIT, 503)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from flows.engine import container_engine
from flows.engine.api_gate import credential_headers
from flows.engine.container_engine import FlowRunApi, run_flow_run

ROOT = Path(__file__).resolve().parents[3]
PARAMETERS: dict[str, Any] = {
    "request": {},
    "storage": "/nowhere",
    "key": "a" * 32,
    "inputs": "b" * 64,
    "base_url": None,
    "label": "task-01 · with-skill",
}


def api(run_id: str) -> FlowRunApi:
    """The container's API client for ``run_id`` on the test server, with its credential."""
    from prefect.settings import get_current_settings

    settings = get_current_settings().api
    auth = settings.auth_string.get_secret_value() if settings.auth_string else None
    key = settings.key.get_secret_value() if settings.key else None
    return FlowRunApi(str(settings.url), run_id, credential_headers(auth, key))


async def pending_run(parameters: dict[str, Any]) -> str:
    """A flow run as a worker leaves it for its container: PENDING."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.states import Pending

    @flow(name="skillab-session")
    def session() -> None: ...

    async with get_client() as client:
        run = await client.create_flow_run(
            session, parameters=parameters, state=Pending(), name="engine-test"
        )
    return str(run.id)


async def ended(run_id: str) -> tuple[Any, list[str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    async with get_client() as client:
        run = await client.read_flow_run(UUID(run_id))
        logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
    return run.state, [log.message for log in logs]


@pytest.mark.usefixtures("prefect_harness")
def test_a_flow_run_is_begun_run_and_completed_in_prefects_own_states(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []

    async def session(**parameters: Any) -> str:
        seen.append(parameters)
        return "completed"

    monkeypatch.setattr(container_engine, "session_in_container", session)

    async def scenario() -> tuple[int, Any, list[str]]:
        run_id = await pending_run(PARAMETERS)
        code = await run_flow_run(api(run_id))
        return code, *await ended(run_id)

    code, state, logs = asyncio.run(scenario())
    assert code == 0 and seen == [PARAMETERS | {"signed": None}]
    assert (
        state.type.value == "COMPLETED"
        and state.name == "Completed"
        and state.message == "the session: completed"
    )
    assert any(m.startswith("Beginning flow run 'engine-test'") for m in logs), logs


@pytest.mark.usefixtures("prefect_harness")
def test_a_session_that_raises_fails_its_flow_run_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    async def session(**parameters: Any) -> str:
        raise ValueError("inputs/x.tar does not match its digest: not unpacked")

    monkeypatch.setattr(container_engine, "session_in_container", session)

    async def scenario() -> tuple[int, Any, list[str]]:
        run_id = await pending_run(PARAMETERS)
        return await run_flow_run(api(run_id)), *await ended(run_id)

    code, state, logs = asyncio.run(scenario())
    assert code == 0 and state.type.value == "FAILED" and state.name == "Failed"
    assert state.message == (
        "Flow run encountered an exception: ValueError: inputs/x.tar does not match its digest: not unpacked"
    )
    assert any("Traceback" in m for m in logs), logs


@pytest.mark.usefixtures("prefect_harness")
def test_a_flow_run_missing_a_parameter_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container_engine, "session_in_container", pytest.fail)

    async def scenario() -> Any:
        run_id = await pending_run({k: v for k, v in PARAMETERS.items() if k != "inputs"})
        await run_flow_run(api(run_id))
        return (await ended(run_id))[0]

    state = asyncio.run(scenario())
    assert state.type.value == "FAILED" and state.message.endswith("the flow run's parameters lack inputs")


@pytest.mark.usefixtures("prefect_harness")
def test_a_flow_run_cancelled_before_its_container_began_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelled

    monkeypatch.setattr(container_engine, "session_in_container", pytest.fail)

    async def scenario() -> tuple[int, Any]:
        run_id = await pending_run(PARAMETERS)
        async with get_client() as client:
            await client.set_flow_run_state(run_id, Cancelled(), force=True)
        return await run_flow_run(api(run_id)), (await ended(run_id))[0]

    code, state = asyncio.run(scenario())
    assert code == 0 and state.type.value == "CANCELLED"


class ScriptedApi:
    """A Prefect API that answers as one under load does: a 503 first, and a WAIT for RUNNING."""

    def __init__(self, final: str = "ACCEPT", logs: int = 201) -> None:
        self.final, self.logs = final, logs
        self.calls: list[tuple[str, str, Any]] = []
        self.busy = 1
        self.waits = 1

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body: Any = json.loads(request.content) if request.content else None
        self.calls.append((request.method, request.url.path, body))
        if self.busy:
            self.busy -= 1
            return httpx.Response(503, text="database is locked")
        if request.method == "GET":
            return httpx.Response(200, json={"name": "r", "parameters": PARAMETERS})
        if request.url.path.endswith("/logs/"):
            return httpx.Response(self.logs, json=None)
        kind = body["state"]["type"]
        if kind == "RUNNING" and self.waits:
            self.waits -= 1
            return httpx.Response(200, json={"status": "WAIT", "details": {"delay_seconds": 0.01}})
        return httpx.Response(200, json={"status": self.final if kind != "RUNNING" else "ACCEPT"})

    def states(self) -> list[str]:
        return [b["state"]["type"] for m, p, b in self.calls if p.endswith("/set_state")]


def scripted(api: ScriptedApi, monkeypatch: pytest.MonkeyPatch) -> int:
    async def session(**parameters: Any) -> str:
        return "completed"

    monkeypatch.setattr(container_engine, "session_in_container", session)
    monkeypatch.setattr(asyncio, "sleep", _no_wait)
    transport = httpx.MockTransport(api)
    return asyncio.run(run_flow_run(FlowRunApi("http://api.test/api", "r1", {}, transport)))


_sleep = asyncio.sleep


async def _no_wait(delay: float) -> None:
    await _sleep(0)


def test_a_busy_api_is_asked_again_and_a_wait_is_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    api = ScriptedApi()
    assert scripted(api, monkeypatch) == 0
    assert api.calls[0][:2] == api.calls[1][:2] == ("GET", "/api/flow_runs/r1")  # the 503 asked again
    assert api.states() == ["RUNNING", "RUNNING", "COMPLETED"]


def test_a_log_line_the_api_cannot_take_at_once_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    api = ScriptedApi(logs=503)
    assert scripted(api, monkeypatch) == 0
    assert [p for m, p, b in api.calls].count("/api/logs/") == 2  # the two lines, each asked once
    assert api.states()[-1] == "COMPLETED"


def test_a_final_state_the_api_refuses_ends_the_container_non_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its worker then marks the run CRASHED, as for Prefect's engine."""
    assert scripted(ScriptedApi(final="REJECT"), monkeypatch) == 1


def test_the_command_without_a_flow_run_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flows.engine.container_engine"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PREFECT__FLOW_RUN_ID": "not-a-uuid"},
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "skillab: no flow run to run ($PREFECT__FLOW_RUN_ID is 'not-a-uuid')\n"


def test_a_container_does_not_import_prefect() -> None:
    """Its import was half of what a container cost a session (~1.2 s of 2.5); nor httpx's command line
    (rich, click, pygments: ~0.1 s more, executors/lean_httpx.py), which the image has with Prefect."""
    heavy = "('prefect', 'rich', 'click', 'pygments')"
    code = f"import sys, flows.engine.container_engine; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout == "[]\n"


# ---------------------------------------------------------------- started ahead (deployments/fleet_worker.py)

ME = "3f2a9c0d1b7e"  # Docker's host name for a container: its id's first 12 characters
THEIRS = "unix:///var/run/docker.sock:9e8d7c6b5a4f" + "0" * 52


def reads(*runs: dict[str, Any]) -> httpx.MockTransport:
    """An API whose flow run reads are ``runs`` in turn (the last repeated); nothing else answers."""
    script = list(runs)

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET", "a container started ahead proposes nothing while it waits"
        return httpx.Response(200, json=script.pop(0) if len(script) > 1 else script[0])

    return httpx.MockTransport(answer)


def waited(
    transport: httpx.MockTransport, told_after: int | None, monkeypatch: pytest.MonkeyPatch
) -> tuple[bool, int]:
    """``claimed`` over ``transport``, the worker's signal given at read ``told_after`` (None: never),
    and the reads it made."""
    monkeypatch.setattr(container_engine, "AHEAD_CHECK_S", 0.01)
    seen = 0

    def counted(request: httpx.Request) -> httpx.Response:
        nonlocal seen
        seen += 1
        if told_after is not None and seen >= told_after:
            told.set()
        return transport.handle_request(request)

    async def scenario() -> bool:
        api = FlowRunApi("http://api.test/api", "r1", {}, httpx.MockTransport(counted))
        try:
            return await container_engine.claimed(api, told, ME)
        finally:
            await api.aclose()

    told = asyncio.Event()
    return asyncio.run(scenario()), seen


SCHEDULED = {"state": {"type": "SCHEDULED"}, "infrastructure_pid": None}
PENDING = {"state": {"type": "PENDING"}, "infrastructure_pid": None}


def test_a_container_started_ahead_waits_until_its_worker_tells_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert waited(reads(SCHEDULED, SCHEDULED, PENDING), told_after=3, monkeypatch=monkeypatch) == (True, 3)


def test_a_claim_whose_signal_was_lost_is_found_in_the_runs_infrastructure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first process of a container drops a signal it has no handler for yet (while it imports)."""
    mine = {"state": {"type": "PENDING"}, "infrastructure_pid": f"unix:///var/run/docker.sock:{ME}{'1' * 52}"}
    assert waited(reads(SCHEDULED, PENDING, mine), told_after=None, monkeypatch=monkeypatch) == (True, 3)


@pytest.mark.parametrize(
    "run",
    [
        {"state": {"type": "RUNNING"}, "infrastructure_pid": THEIRS},  # another worker's container took it
        {"state": {"type": "CANCELLED"}, "infrastructure_pid": None},  # its command gave it up
    ],
)
def test_a_container_started_ahead_for_a_run_it_will_not_run_ends(
    run: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert waited(reads(SCHEDULED, run), told_after=None, monkeypatch=monkeypatch) == (False, 2)


class ApiServer:
    """A Prefect API on 127.0.0.1 for a container engine run as its own process: the flow run waits
    (SCHEDULED) and every state is accepted; each request is kept, in order."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        requests: list[tuple[Any, ...]] = []
        self.requests = requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(("GET", self.path))
                self.reply({"name": "r", "parameters": PARAMETERS, **SCHEDULED})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                requests.append(("POST", self.path, body))
                self.reply({"status": "ACCEPT"} if self.path.endswith("/set_state") else None)

            def reply(self, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(200 if body is not None else 201)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None: ...

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def states(self) -> list[str]:
        return [
            r[2]["state"]["type"] for r in self.requests if r[0] == "POST" and r[1].endswith("/set_state")
        ]


def test_the_workers_signal_starts_a_container_started_ahead() -> None:
    """The command as a container runs it, started ahead: it reads its run and proposes nothing until
    the signal (SIGUSR1, what the fleet's worker sends), then begins the run as any container does
    (this one's session parameters are empty, so it fails, in Prefect's states)."""
    run_id = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    env = {"PATH": "/usr/bin:/bin", "PREFECT__FLOW_RUN_ID": run_id, container_engine.AHEAD_ENV: "1"}
    with ApiServer() as api:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flows.engine.container_engine"],
            cwd=ROOT,
            env=env | {"PREFECT_API_URL": api.url, "NO_PROXY": "127.0.0.1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while len(api.requests) < 2 and time.monotonic() < deadline:  # waiting: it read its run twice
                time.sleep(0.05)
            assert api.requests and api.states() == []
            proc.send_signal(signal.SIGUSR1)
            out, _ = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 0, out
    assert api.states() == ["RUNNING", "FAILED"]
