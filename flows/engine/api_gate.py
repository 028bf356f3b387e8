"""The Prefect API as a fleet container reaches it: its own flow run's calls, under the gateway's credential.

A container of the pool holds no Prefect credential (each flow run's job variables unset the
worker's). The gateway's ``prefect`` destination is this filter. It knows the one flow run a
container was started for from Docker's labels, never from what the container says
(:class:`Caller`); each HTTP request is checked against that run (:func:`rule`), its credential
headers replaced by the gateway's own, and only then sent on. So a container reads its own flow run,
deployment and flow (and asks whether that run is being cancelled), reports its states, logs and
artifacts, and sends events about its own run and its task runs, and nothing else: not a Secret block, a variable, another run, a new flow run.

The events stream (``/api/events/in``, a WebSocket) is answered here: the container's handshake
is accepted without a credential, and each event it sends goes on, over the gateway's own
authenticated stream, only when it is about the caller's flow run.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import h11
from websockets.asyncio.client import connect
from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol, Side, State
from websockets.typing import Subprotocol
from websockets.utils import accept_key

from executors.egress import normalised_target
from executors.http_relay import close, forwarded_headers, relay_response, reply, requests
from executors.lean_httpx import httpx
from executors.parsing import JsonObject

MAX_BODY = 16 * 1024 * 1024  # logs come in batches; nothing a session's flow run sends is larger
MAX_EVENT = 1024 * 1024
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: Prefect's credential headers, and the CSRF token a client may send: the gateway's replace them.
CREDENTIAL = frozenset({"authorization", "x-csrf-token"})
EVENTS_IN = "/api/events/in"


@dataclass
class Caller:
    """The flow run a container was started for, as the API knows it (read with the gateway's
    credential), and the task runs of it the gateway has seen."""

    run_id: str
    flow_id: str
    deployment_id: str | None
    endpoints: frozenset[str]  # the "host:port"s its parameters name (its model, its storage)
    task_runs: set[str] = field(default_factory=set)


class Rule(Enum):
    ALLOW = "allow"
    BODY = "body"  # allowed when every record in the body names the caller's flow run
    OWN_FILTER = "own filter"  # a flow-run query allowed when it asks for the caller's run alone
    OWN_CHANGE = "own change"  # a change to the caller's run its engine makes (see own_change)
    TASK_RUN = "task run"  # allowed when the task run belongs to the caller's flow run


def rule(method: str, path: str, caller: Caller) -> Rule | None:
    """What the caller may do with ``method path`` (already normalised); None: refused."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[0] != "api":
        return None
    reading, writing = method == "GET", method in ("POST", "PATCH")
    match parts[1:]:
        case ["admin", "version"] | ["health"] | ["hello"] | ["csrf-token"] if reading:
            return Rule.ALLOW
        case ["flow_runs", run, *_] if run == caller.run_id and reading:
            return Rule.ALLOW
        case ["flow_runs", run, "labels"] if run == caller.run_id and method == "PATCH":
            return Rule.ALLOW
        case ["flow_runs", run] | ["flow_runs", run, "set_state"] if run == caller.run_id and writing:
            return Rule.OWN_CHANGE
        case ["flow_runs", "filter"] if method == "POST":  # Prefect's cancellation watch polls so
            return Rule.OWN_FILTER
        case ["flows", flow] if flow == caller.flow_id and reading:
            return Rule.ALLOW
        case ["deployments", deployment] if deployment == caller.deployment_id and reading:
            return Rule.ALLOW
        case ["logs" | "artifacts" | "task_runs"] if method == "POST":
            return Rule.BODY
        case ["task_runs", task, *_] if UUID.fullmatch(task) and (reading or writing):
            return Rule.TASK_RUN
    return None


def own_records(body: bytes, caller: Caller, kind: str) -> bool:
    """Every record of a logs, artifacts or task-run body names the caller's flow run; a log names
    no task run but one of the caller's, an artifact no key (a key's latest version is shared by
    every run: a container could replace another run's summary)."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    records = data if isinstance(data, list) else [data]

    def own(r: Any) -> bool:
        if not isinstance(r, dict) or r.get("flow_run_id") != caller.run_id:
            return False
        if kind == "logs":
            return r.get("task_run_id") in (None, *caller.task_runs)
        return kind != "artifacts" or r.get("key") is None

    return bool(records) and all(own(r) for r in records)


def own_filter(body: bytes, caller: Caller) -> bool:
    """A flow-run query whose ids are the caller's run alone (the other conditions only narrow it)."""
    try:
        runs = json.loads(body).get("flow_runs") or {}
        ids = runs.get("id") or {}
    except (ValueError, AttributeError):
        return False
    if runs.get("operator") not in (None, "and_"):  # "or_" would add every run the others match
        return False
    wanted = ids.get("any_") if isinstance(ids, dict) else None
    return isinstance(wanted, list) and bool(wanted) and all(i == caller.run_id for i in wanted)


#: What a flow-run engine changes of its own run (its name, its flow's version, its retry policy):
#: never its job variables, parameters or tags, which the next container of it would run with.
OWN_FIELDS = frozenset({"name", "flow_version", "empirical_policy"})


def own_change(method: str, body: bytes) -> bool:
    """A change the caller's flow-run engine makes to its own run: a field of OWN_FIELDS, or a state
    that does not schedule it again (a scheduled run is started anew by a worker, which a
    container must not be able to ask for)."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    if method == "PATCH":
        policy = data.get("empirical_policy")
        retries = policy.get("retries") if isinstance(policy, dict) else None
        # the session flow has no retries: more would have the server schedule it again
        return set(data) <= OWN_FIELDS and (
            policy is None or (isinstance(policy, dict) and retries in (None, 0))
        )
    state = data.get("state")
    return isinstance(state, dict) and str(state.get("type", "")).upper() not in ("", "SCHEDULED")


def own_event(text: str, caller: Caller) -> str | None:
    """What an event is about when it is the caller's to send: "run" (its flow run), the id of a
    task run of it, or None. A task run's event relates to exactly one flow run, the caller's, and
    its payload names no other task run or flow run (Prefect's recorder takes both from there)."""
    try:
        event = json.loads(text)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(resource := event.get("resource"), dict):
        return None
    mine = f"prefect.flow-run.{caller.run_id}"
    subject = resource.get("prefect.resource.id")
    if subject == mine:
        return "run"
    if not (isinstance(subject, str) and subject.startswith("prefect.task-run.")):
        return None
    task = subject.removeprefix("prefect.task-run.")
    related = event.get("related")
    runs = [
        r.get("prefect.resource.id")
        for r in (related if isinstance(related, list) else [])
        if isinstance(r, dict) and r.get("prefect.resource.role") == "flow-run"
    ]
    payload = event.get("payload")
    named = payload.get("task_run") if isinstance(payload, dict) else None
    named = named if isinstance(named, dict) else {}
    if runs != [mine] or named.get("flow_run_id", caller.run_id) != caller.run_id:
        return None
    return task if named.get("id", task) == task and UUID.fullmatch(task) else None


def credential_headers(auth_string: str | None, api_key: str | None) -> dict[str, str]:
    """How the gateway authenticates itself, as Prefect's own client does."""
    if auth_string:
        return {"Authorization": "Basic " + base64.b64encode(auth_string.encode()).decode()}
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class ApiGate:
    """One gateway's filter in front of its Prefect API (``api_url``, ending in ``/api``)."""

    def __init__(self, api_url: str, auth_string: str | None, api_key: str | None) -> None:
        self.api = httpx.URL(api_url.rstrip("/"))
        self.auth_string = auth_string
        self.credential = credential_headers(auth_string, api_key)
        timeout = httpx.Timeout(connect=30.0, read=300.0, write=60.0, pool=60.0)
        self.http = httpx.AsyncClient(timeout=timeout, headers=self.credential, follow_redirects=False)

    def url(self, path: str) -> httpx.URL:
        """A container's ``/api/...`` path on the gateway's API (Prefect Cloud's has a workspace's path)."""
        root = self.api.raw_path.decode("latin-1").rstrip("/")
        return self.api.copy_with(raw_path=(root + path.removeprefix("/api")).encode("latin-1"))

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, caller: Caller) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=256 * 1024)
        try:
            async for request, body in requests(conn, reader, writer, MAX_BODY, "fleet gateway"):
                if _is_upgrade(request):
                    await self._events(request, conn, reader, writer, caller)
                    return
                await self._forward(request, body, conn, writer, caller)
        except Exception:  # a container must never make the gateway print a traceback
            return
        finally:
            close(writer)

    async def _forward(
        self,
        request: h11.Request,
        body: bytes,
        conn: h11.Connection,
        writer: asyncio.StreamWriter,
        caller: Caller,
    ) -> None:
        method, raw = request.method.decode(), request.target.decode("latin-1")
        target = normalised_target(raw)
        verdict = rule(method, target, caller) if target else None
        path = (target or "").split("?", 1)[0]
        checks = {
            Rule.BODY: lambda: own_records(body, caller, path.strip("/").split("/")[1]),
            Rule.OWN_FILTER: lambda: own_filter(body, caller),
            Rule.OWN_CHANGE: lambda: own_change(method, body),
        }
        if verdict in checks and not checks[verdict]():
            verdict = None
        if verdict is Rule.TASK_RUN and not await self._task_run_of(target or "", caller):
            verdict = None
        if target is None or verdict is None:
            await reply(
                writer, conn, 403, f"fleet gateway: {method} {raw[:200]} is not this flow run's".encode()
            )
            return
        headers = forwarded_headers(request, CREDENTIAL)
        async with self.http.stream(method, self.url(target), headers=headers, content=body) as response:
            await relay_response(writer, conn, response)

    async def _task_run_of(self, target: str, caller: Caller) -> bool:
        """The task run a path names belongs to the caller's flow run."""
        task = target.split("?", 1)[0].strip("/").split("/")[2]
        return await self._task_owner(task, caller) == "mine"

    async def _task_owner(self, task: str, caller: Caller) -> str:
        """Whose task run ``task`` is: "mine" (the caller's), "none" (no such run yet), or "other";
        the caller's are remembered."""
        if task in caller.task_runs:
            return "mine"
        response = await self.http.get(self.url(f"/api/task_runs/{task}"))
        if response.status_code == 404:
            return "none"
        if response.status_code != 200 or response.json().get("flow_run_id") != caller.run_id:
            return "other"
        caller.task_runs.add(task)
        return "mine"

    async def _events(
        self,
        request: h11.Request,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        caller: Caller,
    ) -> None:
        """The container's events stream: accepted here, its own run's events sent on upstream."""
        target = request.target.decode("latin-1").split("?", 1)[0]
        key = (
            dict((k.lower(), v) for k, v in request.headers).get(b"sec-websocket-key", b"").decode("latin-1")
        )
        if target != EVENTS_IN or not key:
            await reply(writer, conn, 403, f"fleet gateway: no stream at {target[:200]}".encode())
            return
        upstream = await self._events_upstream()
        accepted = [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", accept_key(key)),
            ("Sec-WebSocket-Protocol", "prefect"),
        ]
        writer.write(conn.send(h11.InformationalResponse(status_code=101, headers=accepted)) or b"")
        stream = Protocol(Side.SERVER, max_size=MAX_EVENT)
        stream.receive_data(conn.trailing_data[0])
        authenticated = False
        try:
            while True:
                for frame in stream.events_received():
                    if not isinstance(frame, Frame) or frame.opcode is not Opcode.TEXT:
                        continue  # pings are answered by the protocol itself
                    text = bytes(frame.data).decode("utf-8", "replace")
                    if not authenticated:  # the container's handshake: it has no credential to give
                        authenticated = True
                        stream.send_text(b'{"type": "auth_success"}')
                    elif (about := own_event(text, caller)) == "run" or (
                        about is not None and await self._task_owner(about, caller) != "other"
                    ):  # a task run's first event makes it: the caller's from then on
                        if about != "run":
                            caller.task_runs.add(about)
                        await upstream.send(text)
                for data in stream.data_to_send():
                    writer.write(data)
                await writer.drain()
                if stream.close_expected() or stream.state is State.CLOSED:
                    return
                data = await reader.read(1 << 16)
                if not data:
                    stream.receive_eof()
                    return
                stream.receive_data(data)
        finally:
            await upstream.close()

    async def _events_upstream(self) -> Any:
        """The gateway's own events stream, authenticated as Prefect's client does."""
        from prefect.events.clients import events_in_socket_from_api_url

        socket = await connect(
            events_in_socket_from_api_url(str(self.api)),
            subprotocols=[Subprotocol("prefect")],
            additional_headers=self.credential,
        )
        if self.auth_string or not self.credential:  # a self-hosted server's handshake
            await socket.send(json.dumps({"type": "auth", "token": self.auth_string}))
            answer = json.loads(await socket.recv())
            if answer.get("type") != "auth_success":
                await socket.close()
                raise PermissionError(f"the Prefect API refused the gateway's events stream: {answer}")
        return socket

    async def flow_run(self, run_id: str) -> JsonObject | None:
        """The flow run as the API has it, or None when it has no such run."""
        response = await self.http.get(self.url(f"/api/flow_runs/{run_id}"))
        return response.json() if response.status_code == 200 else None

    async def aclose(self) -> None:
        await self.http.aclose()


def _is_upgrade(request: h11.Request) -> bool:
    return any(k.lower() == b"upgrade" and v.lower() == b"websocket" for k, v in request.headers)
