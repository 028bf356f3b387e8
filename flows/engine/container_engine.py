"""A fleet container's flow run, told to the Prefect API without Prefect's engine.

Prefect's flow-run engine costs every container about 1.2 s of imports (Prefect, its settings, its
client, the flow's module) and a dozen API calls before the session begins, for what a session's
flow run does not use (task runs, results, retries, caching). So the container speaks the part of
the flow-run protocol it needs, over plain HTTP, as Prefect's engine does: it reads its flow run
(the parameters; one cancelled or ended meanwhile is not begun), proposes ``RUNNING`` (a ``WAIT``
is waited out; a refusal ends it without running), runs the session (:func:`session_in_container`,
which is also the deployment's flow ``skillab-session``, for Prefect's engine to run if asked), and
proposes ``COMPLETED`` or ``FAILED``, with a log line in the run's logs either way. The states are Prefect's
own types and names, so the UI filters them as any other. An API that does not take the final state
ends the container non-zero, and its worker marks the flow run ``CRASHED``, as with Prefect's engine.
Nothing here imports Prefect.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import traceback
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from executors.agent import agent_session
from executors.egress import forwarder
from executors.lean_httpx import httpx
from executors.parsing import JsonObject
from executors.schema import AgentRequest, SessionStatus
from flows.engine.api_gate import credential_headers
from flows.engine.container_net import isolated, route
from flows.engine.gateway import PREFECT, session_endpoints
from flows.engine.session_files import HEX, confined_paths, digest_file, output_folders, pack, unpack
from flows.engine.storage import FILES, RECORD, STARTED, SignedStorage, Storage, stored

SESSION_FLOW = "skillab-session"
#: The image a container runs, as the fleet's image names itself (deployments/image.py): each
#: session's record carries it, so a night on a rebuilt image is told apart in the fingerprint.
IMAGE_VARIABLE = "SKILLAB_IMAGE"
#: Where Prefect's workers tell a container its flow run.
RUN_ID_ENV = "PREFECT__FLOW_RUN_ID"
#: How long a call waits for an API away or busy (a server restarting, its SQLite locked), about as
#: long as Prefect's client retries (five tries, backing off).
PATIENCE_S = 60.0
#: States a container does not begin from: a run cancelled (or ended) before its container started.
ENDED = frozenset({"CANCELLING", "CANCELLED", "COMPLETED", "FAILED", "CRASHED"})
#: The session's parameters, which its flow run holds; ``signed`` may be absent.
PARAMETERS = ("request", "storage", "key", "inputs", "base_url", "label")
#: Set on a container the fleet's worker started before it claimed the run (deployments/
#: fleet_worker.py): it waits, imported, until the worker tells it the run is its (``CLAIMED_SIGNAL``)
#: or it finds itself named the run's infrastructure, and ends without a word to the API if the run
#: went to another worker's container, ended, or was not claimed in ``AHEAD_WAIT_S``.
AHEAD_ENV = "SKILLAB_STARTED_AHEAD"
CLAIMED_SIGNAL = "SIGUSR1"
#: How often a container started ahead reads its run: the signal is the quick way; the reads find a
#: run claimed elsewhere or ended, and a claim whose signal came before the handler was set (the
#: first process of a container drops a signal it has no handler for).
AHEAD_CHECK_S = 1.0
#: Longer than a session may wait in the queue behind another's: a run nobody claims is cancelled by
#: the command that made it (it sees no worker), and then its container ends.
AHEAD_WAIT_S = 3600.0


async def session_in_container(
    request: JsonObject,
    storage: str,
    key: str,
    inputs: str,
    base_url: str | None,
    label: str,
    signed: dict[str, str] | None = None,
) -> SessionStatus | str:
    """One session inside the fleet's container: its inputs unpacked at their own paths, the session
    run as a local one is, its result and files stored under ``key``. A result already stored is
    not run again (a flow run retried, or re-dispatched, after it was paid for). The flow run is
    the one its worker named in the environment, whichever engine runs it."""
    if isolated():  # the container's own way out: its model endpoint and its storage, by the gateway
        for url in session_endpoints(
            {"request": request, "storage": storage, "base_url": base_url, "signed": signed}
        ):
            route(url)
    store: Storage | SignedStorage = SignedStorage(signed) if signed else Storage(storage)
    result = stored(key, RECORD)
    if store.exists(result):
        return "stored before"
    limited = _RateLimited()
    forwarder().on_rate_limited(limited.note)  # held weakly by the forwarder: kept alive here
    session_request = AgentRequest.model_validate(request)
    if not (HEX.fullmatch(key) and HEX.fullmatch(inputs)):
        raise ValueError("a session key or an inputs digest that is not one")
    with tempfile.TemporaryDirectory(prefix="skillab-fleet-") as tmp:
        archive = Path(tmp) / "inputs.tar"
        store.get(f"inputs/{inputs}.tar", archive)
        if digest_file(archive) != inputs:  # written by someone else than the parent that named it
            raise ValueError(f"inputs/{inputs}.tar does not match its digest: not unpacked")
        unpack(archive, Path("/"), under=confined_paths(session_request))
        if not (run_id := os.environ.get(RUN_ID_ENV)):  # the mark says which flow run paid
            raise ValueError(f"no flow run named in ${RUN_ID_ENV}: the session is not run")
        # from here on the session may cost: this flow run is never followed by another
        store.mark(stored(key, STARTED), run_id)
        session = await agent_session(session_request, base_url)
        files = Path(tmp) / "files.tar"
        try:
            pack(output_folders(session_request), files, skip=(Path(session_request.home),))
        except ValueError as exc:  # the session's files are not taken back: it is no result
            pack({}, files)
            session = session.model_copy(
                update={"ok": False, "status": SessionStatus.ERROR, "error": f"the session's files: {exc}"}
            )
        store.put(files, stored(key, FILES))
        record = Path(tmp) / "session.json"
        kept = {"session": session.model_dump(mode="json"), "rate_limited": limited.seen}
        record.write_text(json.dumps(kept | {"image": os.environ.get(IMAGE_VARIABLE)}), encoding="utf-8")
        store.put(record, result)
    return session.status


class _RateLimited:
    seen = False

    def note(self, provider: str) -> None:
        self.seen = True


def unavailable(exc: Exception) -> bool:
    """The Prefect API away or overloaded (its database busy under load answers 503), not a refusal:
    worth asking again, by a container and by the parent dispatching to it alike."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in (429, 502, 503, 504)
    return isinstance(exc, httpx.TransportError | OSError)


class FlowRunApi:
    """The calls one flow run's container makes to the Prefect API (``url`` ending in ``/api``)."""

    def __init__(
        self,
        url: str,
        run_id: str,
        headers: dict[str, str],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.run_id = run_id
        self.client = httpx.AsyncClient(base_url=url, headers=headers, timeout=30.0, transport=transport)

    async def call(self, method: str, path: str, body: Any = None, patience: float = PATIENCE_S) -> Any:
        """The API's answer; an API away or busy is asked again for up to ``patience`` seconds."""
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + patience, 0.5
        while True:
            try:
                response = await self.client.request(method, path, json=body)
                response.raise_for_status()
                return response.json() if response.content else None
            except Exception as exc:
                if not unavailable(exc) or loop.time() > deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 8.0)

    async def flow_run(self) -> JsonObject:
        run: JsonObject = await self.call("GET", f"flow_runs/{self.run_id}")
        return run

    async def propose(self, kind: str, name: str, message: str | None = None) -> JsonObject:
        """The API's orchestration of a new state of this flow run (``kind``: Prefect's state type),
        after any ``WAIT`` it asked for: its ``status`` ACCEPT, REJECT or ABORT."""
        while True:
            details = {"flow_run_id": self.run_id, "transition_id": str(uuid.uuid4())}
            state = {"type": kind, "name": name, "message": message, "state_details": details}
            answer: JsonObject = await self.call(
                "POST", f"flow_runs/{self.run_id}/set_state", {"state": state, "force": False}
            )
            if answer.get("status") != "WAIT":
                return answer
            await asyncio.sleep(float((answer.get("details") or {}).get("delay_seconds") or 1.0))

    async def log(self, level: int, message: str) -> None:
        """A line in the flow run's logs in the UI, asked once: one the API does not take at once is
        not worth failing for, nor waiting for."""
        line = {
            "name": "skillab.fleet",
            "level": level,
            "message": message,
            "timestamp": datetime.now(UTC).isoformat(),
            "flow_run_id": self.run_id,
            "task_run_id": None,
        }
        try:
            await self.call("POST", "logs/", [line], patience=0.0)
        except httpx.HTTPError as exc:
            print(f"skillab: a log line was not taken: {exc}", file=sys.stderr)

    async def aclose(self) -> None:
        await self.client.aclose()


def _parameters(run: JsonObject) -> JsonObject:
    parameters = run.get("parameters")
    if not isinstance(parameters, dict):
        raise ValueError("the flow run has no parameters")
    if missing := [name for name in PARAMETERS if name not in parameters]:
        raise ValueError(f"the flow run's parameters lack {', '.join(missing)}")
    return {name: parameters.get(name) for name in (*PARAMETERS, "signed")}


async def run_flow_run(api: FlowRunApi) -> int:
    """The flow run, begun, run and ended as Prefect's engine would; the container's exit code."""
    run = await api.flow_run()
    if (kind := (run.get("state") or {}).get("type")) in ENDED:  # the server would take RUNNING still
        print(f"skillab: flow run {api.run_id} not run: it is {kind} already")
        return 0
    answer = await api.propose("RUNNING", "Running")
    if answer.get("status") != "ACCEPT":  # cancelled, or taken, meanwhile: nothing is run
        why = (answer.get("details") or {}).get("reason") or (answer.get("state") or {}).get("name")
        print(f"skillab: flow run {api.run_id} not run: the API answered {answer.get('status')} ({why})")
        return 0
    await api.log(logging.INFO, f"Beginning flow run {run.get('name')!r} for flow {SESSION_FLOW!r}")
    try:
        status = await session_in_container(**_parameters(run))
    except Exception as exc:
        traceback.print_exc()
        message = f"Flow run encountered an exception: {type(exc).__name__}: {exc}"
        await api.log(logging.ERROR, f"{message}\n{traceback.format_exc()}")
        kind, name = "FAILED", "Failed"
    else:
        message = f"the session: {status}"
        await api.log(logging.INFO, f"Finished: {message}")
        kind, name = "COMPLETED", "Completed"
    ended = await api.propose(kind, name, message)
    # a final state not taken leaves the run to its worker, which marks it CRASHED on a non-zero exit
    return 0 if ended.get("status") == "ACCEPT" else 1


def _headers() -> dict[str, str]:
    """No credential in the fleet's containers (the gateway holds it); one a caller elsewhere set."""
    if isolated():
        return {}
    return credential_headers(os.environ.get("PREFECT_API_AUTH_STRING"), os.environ.get("PREFECT_API_KEY"))


async def claimed(api: FlowRunApi, told: asyncio.Event, me: str) -> bool:
    """A container started ahead: True once its worker has claimed the run for it (``told``, or the
    run's infrastructure names this container, ``me``: Docker's host name for it, its id's start);
    False if the run went to another container, ended, or was not claimed in time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + AHEAD_WAIT_S
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(told.wait(), AHEAD_CHECK_S)
        if told.is_set():
            return True
        run = await api.flow_run()
        if infrastructure := run.get("infrastructure_pid"):  # the worker's "<docker host>:<container id>"
            return str(infrastructure).rsplit(":", 1)[-1].startswith(me)
        if (run.get("state") or {}).get("type") in ENDED or loop.time() > deadline:
            return False


async def _main(url: str, run_id: str, ahead: bool = False) -> int:
    api = FlowRunApi(url, run_id, _headers())
    try:
        if ahead:
            told = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(getattr(signal, CLAIMED_SIGNAL), told.set)
            if not await claimed(api, told, socket.gethostname()):
                print(f"skillab: flow run {run_id} not run here: another container took it, or it ended")
                return 0
        return await run_flow_run(api)
    finally:
        await api.aclose()


def main(argv: list[str]) -> int:
    """The container's command: the flow run the worker named in the environment, against the API
    the worker configured (``PREFECT_API_URL``), which is first given its route to the gateway."""
    run_id = os.environ.get(RUN_ID_ENV, "")
    url = os.environ.get("PREFECT_API_URL", "")
    if argv:
        print(
            f"usage: python -m flows.engine.container_engine (the flow run: ${RUN_ID_ENV})", file=sys.stderr
        )
        return 2
    try:
        uuid.UUID(run_id)
    except ValueError:
        print(f"skillab: no flow run to run (${RUN_ID_ENV} is {run_id!r})", file=sys.stderr)
        return 2
    if not url:
        print("skillab: no Prefect API to report to ($PREFECT_API_URL is unset)", file=sys.stderr)
        return 2
    if isolated():  # plain HTTP to the gateway's filter, which holds the credential and talks to the API
        url = f"http://{route(url, PREFECT)}/api"
    # a container's first process ignores signals it has no handler for: Docker's stop (a
    # cancelled run) would wait its whole grace period before killing it
    signal.signal(signal.SIGTERM, lambda *_: os._exit(128 + signal.SIGTERM))
    return asyncio.run(_main(url, run_id, ahead=bool(os.environ.get(AHEAD_ENV))))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
