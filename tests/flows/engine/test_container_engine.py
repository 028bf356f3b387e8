"""The fleet container's flow run without Prefect's engine: against a real Prefect server (the
session's test server) for the states and logs the UI shows, and against a scripted API for the
answers a real server gives only under load (WAIT, 503)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
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
