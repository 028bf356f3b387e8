"""Agent sessions in containers, dispatched through a Prefect Docker work pool (``--fleet-pool``).

A session of any mode (agentic, plugin suite, trigger) runs as one flow run of the deployment
``skillab-session/<pool>``: a ``prefect-docker`` worker, on this machine or any machine polling the
pool, starts the fleet's image (deployments/image.py) and the flow run there. Nothing travels on a
shared filesystem: the folders the session reads (its sandbox as staged, its HOME, the skill,
plugin, environment and add_dirs) go to the deployment's storage URL (fsspec: a local folder, or
``s3://...``) as one content-addressed archive; the container unpacks them at the same absolute
paths (its file system is its own), runs the session exactly as a local run does (fresh HOME,
bubblewrap, the model reached only through the forwarder), and stores the session and the files it
left (its sandbox, its outputs) under the session's key. The parent restores them where a local
session would have left them, so grading and aggregation cannot tell the difference.

The stored result is the truth, not the flow run's state: a result already stored is never run
again (a re-dispatched session of the same key is the same flow run, by its idempotency key, and a
flow run that finds its result stored returns at once; one that ended before its session began,
its container unable to reach a restarting server, is dispatched again); a worker killed
mid-session leaves its container running to the end; one killed after claiming a flow run and
before its container began it leaves the run PENDING, which is cancelled and dispatched again once
that worker is offline; a flow run that never starts (no worker online) or never ends (its machine
gone) becomes an error the report counts, after its own timeout and a grace period, and its flow
run is cancelled (the worker stops the container).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow

from executors.egress import PROVIDERS
from executors.errors import InputError, env_int
from executors.lean_httpx import httpx
from executors.parsing import JsonObject
from executors.schema import AgentRequest, AgentSession, SessionStatus
from flows.engine.container_engine import SESSION_FLOW, session_in_container, unavailable
from flows.engine.fleet import provider_of
from flows.engine.session_files import FILES_LIMIT, digest_file, input_paths, output_folders, pack, unpack
from flows.engine.storage import FILES, RECORD, STARTED, Storage, signed_urls, storage_mounts, stored

ROOT = Path(__file__).resolve().parents[2]
#: skillab's code as a container runs it: the fleet's image holds these, at this digest.
SOURCES = ("flows", "tasks", "graders", "executors", "deployments", "pyproject.toml")
POLL_S = 1.0
#: How often a session's result is looked for in a storage that is a local folder (a stat, not a
#: request): seen ~0.4 s sooner on average than at the API's pace.
LOCAL_POLL_S = 0.25
#: After a session's own timeout, how long its flow run may still take (container start, upload).
GRACE_ENV, GRACE_S = "SKILLAB_FLEET_GRACE_S", 180
#: How long a session may wait for a worker while none of the pool's is online.
NO_WORKER_ENV, NO_WORKER_S = "SKILLAB_FLEET_NO_WORKER_S", 120
#: A flow run claimed (Prefect's PENDING) whose container has not begun it this long, its worker
#: unheard as long and no longer online (killed between its claim and the container's start: nobody
#: will start it), is cancelled and dispatched again. A container begins its run in seconds, under a
#: test suite's load in up to half a minute; a worker is offline three missed heartbeats after its
#: last (90 s at Prefect's default, 15 s in the tests).
ABANDONED_S = 60.0
#: Flow runs a session may take when each ends before the session starts (its container could not
#: reach the API to begin, the server restarting): none of them paid for anything.
DISPATCHES = 3
#: How long a dispatch keeps asking an API busy or away, as the wait for a session's result does. A
#: server's SQLite locked under load answers 503 after 10 s, each of Prefect's 5 tries, for minutes
#: (seen with 2 cores running containers, CLIs and tests); its command's API watch ends a dead one.
DISPATCH_PATIENCE_S = 600.0


def source_files() -> Iterator[Path]:
    for name in SOURCES:
        top = ROOT / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield path


def source_digest() -> str:
    """skillab's code as this checkout has it: a fleet's image and deployment must hold the same."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


#: The deployment's flow: one session inside the fleet's container. A container runs it with an engine
#: of its own (flows/engine/container_engine.py); Prefect's engine, given the flow run, runs the same.
container_session = flow(name=SESSION_FLOW, flow_run_name="{label}", log_prints=False, persist_result=False)(
    session_in_container
)


@dataclass(frozen=True)
class Dispatched:
    """A session back from the fleet; ``rate_limited``: its provider answered 429 during it."""

    session: AgentSession
    rate_limited: bool = False


def failed(error: str) -> Dispatched:
    return Dispatched(AgentSession(ok=False, status=SessionStatus.ERROR, error=error))


class FleetPool:
    """The parent's side of ``--fleet-pool``: the deployment found (and checked to run this code) once,
    then every session dispatched, waited for and restored."""

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.name = f"{SESSION_FLOW}/{pool}"
        self.deployment: Any = None
        self.storage: Storage | None = None
        self.keys: dict[str, str] = {}  # provider -> the variable of its registered key
        self.lock = asyncio.Lock()

    async def ready(self) -> Storage:
        """The deployment and its storage, found once."""
        async with self.lock:
            if self.storage is None:
                self.deployment, self.storage, self.keys = await _deployment(self.name)
            return self.storage

    async def session(self, request: AgentRequest, base_url: str | None, label: str) -> Dispatched:
        """The session run in a container of the pool, and restored here. Anything that goes wrong
        on the way (storage, the API, a refused archive) is this session's error, not the run's."""
        store = await self.ready()
        try:
            key, inputs = await self._upload(store, request, base_url)
            result = stored(key, RECORD)
            if not await asyncio.to_thread(store.exists, result):
                error = await self._run(store, key, inputs, request, base_url, label)
                if error is not None:
                    return failed(f"{self.pool}: {error}")
            return await asyncio.to_thread(_restore, store, key, request)
        except (InputError, asyncio.CancelledError):
            raise
        except Exception as exc:
            return failed(f"{self.pool}: {type(exc).__name__}: {exc}")

    async def _upload(self, store: Storage, request: AgentRequest, base_url: str | None) -> tuple[str, str]:
        """The session's inputs in the storage (once per content); (the session's key, their digest)."""
        with tempfile.TemporaryDirectory(prefix="skillab-fleet-") as tmp:
            archive = Path(tmp) / "inputs.tar"
            await asyncio.to_thread(pack, {str(p).lstrip("/"): p for p in input_paths(request)}, archive)
            inputs = await asyncio.to_thread(digest_file, archive)
            if not await asyncio.to_thread(store.exists, f"inputs/{inputs}.tar"):
                await asyncio.to_thread(store.put, archive, f"inputs/{inputs}.tar")
        key = hashlib.sha256(
            json.dumps([request.model_dump(mode="json"), base_url, inputs, self.name]).encode()
        ).hexdigest()[:32]
        return key, inputs

    async def _run(
        self, store: Storage, key: str, inputs: str, request: AgentRequest, base_url: str | None, label: str
    ) -> str | None:
        """A flow run of the deployment waited for (another, up to DISPATCHES, after one that ended
        before its session began); a run the parent gives up on (cancelled, Ctrl-C) is cancelled
        too, so its container stops."""
        from prefect.client.orchestration import get_client

        parameters = {
            "request": request.model_dump(mode="json"),
            "storage": store.url,
            "key": key,
            "inputs": inputs,
            "base_url": base_url,
            "label": label,
            "signed": await asyncio.to_thread(signed_urls, store, key, inputs),
        }
        mounts = await asyncio.to_thread(storage_mounts, store, key, inputs)
        async with get_client() as client:

            async def dispatch(idempotency: str | None = None) -> Any:
                """A flow run for ``idempotency`` (the one it already names), else a new one. An API
                busy or away is asked again with the same key, so a reply lost never makes two runs."""
                idempotency = idempotency or f"{key}-{uuid.uuid4().hex}"
                deadline = asyncio.get_running_loop().time() + DISPATCH_PATIENCE_S
                while True:
                    try:
                        return await client.create_flow_run_from_deployment(
                            self.deployment.id,
                            parameters=parameters,
                            job_variables=key_variables(self.keys, request.cli) | {"volumes": mounts},
                            name=label,
                            idempotency_key=idempotency,
                            tags=["skillab", "fleet"],
                        )
                    except Exception as exc:
                        if not unavailable(exc) or asyncio.get_running_loop().time() > deadline:
                            raise
                    await asyncio.sleep(POLL_S)

            # The session's key joins a flow run still under way (a parent killed and run again), so
            # a session is never in two containers at once; one already ended with no result was an
            # earlier run's error, which this run repeats. Any later flow run is a new one.
            run = await dispatch(key)
            if run.state is not None and run.state.is_final():
                run = await dispatch()
            for attempt in range(1, DISPATCHES + 1):
                try:
                    ended = await _wait(client, run.id, store, key, request, self.pool)
                except asyncio.CancelledError:
                    await asyncio.shield(_cancel(client, run.id))
                    raise
                if ended is None:
                    return None
                if not ended.unstarted:
                    return ended.why
                why = ended.why
                if attempt < DISPATCHES:
                    run = await dispatch()
            return f"{why}, {DISPATCHES} times: never started"


def secret_block(env: str) -> str:
    """The Prefect Secret block that holds the credential of variable ``env`` for the fleet."""
    return "skillab-" + env.lower().replace("_", "-")


async def _registered_keys(client: Any) -> dict[str, str]:
    """Provider name -> the variable of its credential registered for the fleet (the first of its
    credentials with a Secret block); read without the secrets themselves."""
    from prefect.exceptions import ObjectNotFound

    found: dict[str, str] = {}
    for provider in PROVIDERS.values():
        for credential in provider.credentials:
            try:
                await client.read_block_document_by_name(
                    secret_block(credential.env), block_type_slug="secret", include_secrets=False
                )
            except ObjectNotFound:
                continue
            found[provider.name] = credential.env
            break
    return found


#: The worker's Prefect credentials, which it passes to every container it starts unless the flow
#: run's job variables unset them (None): a container reaches the API only through its gateway's filter.
PREFECT_CREDENTIALS = ("PREFECT_API_AUTH_STRING", "PREFECT_API_KEY", "PREFECT_SERVER_API_AUTH_STRING")


def key_variables(keys: dict[str, str], cli: str) -> JsonObject:
    """The job variables of one session's flow run: its own runner's provider key (a reference the
    worker resolves when it starts the container), none of any other provider, and no Prefect
    credential."""
    provider = provider_of(cli)
    env: dict[str, str | None] = dict.fromkeys(PREFECT_CREDENTIALS)
    if provider is not None and (name := keys.get(provider.name)):
        env[name] = "{{ prefect.blocks.secret." + secret_block(name) + " }}"
    return {"env": env}


async def _deployment(name: str) -> tuple[Any, Storage, dict[str, str]]:
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    async with get_client() as client:
        try:
            deployment = await client.read_deployment_by_name(name)
        except ObjectNotFound:
            raise InputError(
                f"--fleet-pool: no deployment {name!r} on the Prefect server; register it with "
                f"`python -m deployments --register-fleet {name.split('/', 1)[1]} --fleet-storage URL`"
            ) from None
        keys = await _registered_keys(client)
    if deployment.version != (ours := source_digest()):
        raise InputError(
            f"--fleet-pool: {name} runs skillab {deployment.version}, this checkout is {ours}: register it "
            "again (python -m deployments --register-fleet ...) to build the image of this code"
        )
    return deployment, Storage(str(deployment.parameters["storage"])), keys


def _restore(store: Storage, key: str, request: AgentRequest) -> Dispatched:
    """The stored session, its sandbox and outputs put back where a local session leaves them."""
    record = json.loads(store.fs.cat_file(store.path(stored(key, RECORD))))
    if store.size(stored(key, FILES)) > FILES_LIMIT:
        return failed(f"the session's files are over {FILES_LIMIT >> 30} GiB: not taken back")
    with tempfile.TemporaryDirectory(prefix="skillab-fleet-") as tmp:
        archive, unpacked = Path(tmp) / "files.tar", Path(tmp) / "files"
        store.get(stored(key, FILES), archive)
        unpack(archive, unpacked)
        for name, folder in output_folders(request).items():
            if (unpacked / name).is_symlink() or not (unpacked / name).is_dir():
                raise ValueError(f"the session's {name} folder is missing or a link")
            shutil.rmtree(folder, ignore_errors=True)
            folder.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(unpacked / name, folder)
    session = AgentSession.model_validate(record["session"])
    if isinstance(image := record.get("image"), str):  # the image the container said it was
        session = session.model_copy(update={"meta": session.meta.model_copy(update={"image": image})})
    return Dispatched(session, bool(record.get("rate_limited")))


@dataclass(frozen=True)
class Ended:
    """Why a flow run gave no result; ``unstarted``: it ended before its session began (nothing paid)."""

    why: str
    unstarted: bool = False


async def _wait(
    client: Any, run_id: Any, store: Storage, key: str, request: AgentRequest, pool: str
) -> Ended | None:
    """Until the session's result is stored (None), or why it never will be. Polls the storage and
    the flow run; the server being away (restarted) only delays it. A run waits in the queue while
    a worker of the pool is online; claimed (PENDING) or RUNNING, it has the session's timeout and
    the grace period to store its result (one its worker left pending: :func:`_abandoned`)."""
    loop = asyncio.get_running_loop()
    grace, no_worker = env_int(GRACE_ENV, GRACE_S), env_int(NO_WORKER_ENV, NO_WORKER_S)
    result = stored(key, RECORD)
    no_worker_since: float | None = None
    claimed: float | None = None  # when it was first seen claimed by a worker
    raced: float | None = None  # until when a run cancelled as its container began it is waited for
    step = LOCAL_POLL_S if store.local else POLL_S
    api_due = 0.0  # the flow run and the pool's workers are read at the API's pace, POLL_S
    while True:
        if await asyncio.to_thread(store.exists, result):
            return None
        if loop.time() < api_due:
            await asyncio.sleep(step)
            continue
        api_due = loop.time() + POLL_S
        try:
            run = await client.read_flow_run(run_id)
            state = run.state
            if state is not None and state.is_final():
                if await asyncio.to_thread(store.exists, result):
                    return None
                if raced is None or loop.time() > raced:
                    began = await _began(store, key, run_id)
                    why = f"its flow run ended {state.name} with no result ({state.message or 'no message'})"
                    return Ended(why, unstarted=not began and not state.is_cancelled())
            elif state is not None and (state.is_pending() or state.is_running()):
                claimed = claimed or loop.time()
                if state.is_pending() and loop.time() - claimed > ABANDONED_S:
                    abandoned = await _abandoned(client, run, pool, store, key)
                    if abandoned:
                        return Ended(
                            "its worker went away after taking it, before the session began", unstarted=True
                        )
                    if abandoned is False:  # its container runs the session on: its result is waited for
                        raced = claimed + request.timeout_s + grace
                if loop.time() - claimed > request.timeout_s + grace:
                    await _cancel(client, run_id)
                    return Ended(
                        f"no result {request.timeout_s + grace:.0f}s after a worker took it (the worker, its "
                        "machine or the container gone): cancelled"
                    )
            elif await _online(client, pool):
                no_worker_since = None
            elif no_worker_since is None:
                no_worker_since = loop.time()
            elif loop.time() - no_worker_since > no_worker:
                await _cancel(client, run_id)
                return Ended(f"no worker of the pool online for {no_worker}s: not run")
        except Exception as exc:  # the API away (a server restart): the storage still tells
            if not _transient(exc):
                raise
        await asyncio.sleep(step)


def _transient(exc: Exception) -> bool:
    return isinstance(exc, httpx.TransportError | httpx.HTTPStatusError | OSError)


def alive(worker: Any, now: datetime, patience: float = 0.0) -> bool:
    """A pool's worker (as the API lists it) is online: Prefect's ONLINE, and heard from within
    Prefect's own window for it (three heartbeat intervals, by default), or ``patience`` seconds if
    longer, judged here too: a server without its foreman service (Prefect's temporary server) never
    marks a silent worker offline."""
    from prefect.client.schemas.objects import WorkerStatus
    from prefect.settings import get_current_settings

    foreman = get_current_settings().server.services.foreman
    interval = worker.heartbeat_interval_seconds or foreman.fallback_heartbeat_interval_seconds
    last = worker.last_heartbeat_time
    return (
        worker.status == WorkerStatus.ONLINE
        and last is not None
        and (now - last).total_seconds() <= max(foreman.inactivity_heartbeat_multiple * interval, patience)
    )


async def _online(client: Any, pool: str, name: str | None = None, patience: float = 0.0) -> bool:
    """A worker of the pool is online (``name``: that one; ``patience``: see :func:`alive`)."""
    workers = await client.read_workers_for_work_pool(pool)
    now = datetime.now(UTC)
    return any(name in (None, w.name) and alive(w, now, patience) for w in workers)


async def _abandoned(client: Any, run: Any, pool: str, store: Storage, key: str) -> bool | None:
    """A run left pending: None while its worker is online (or its session has begun); else the run
    is cancelled, and True if nothing began it, False if its container proposed RUNNING just before
    the cancel (RUNNING in its states: it runs the session on, nothing stops it, so the session is
    not to be paid for twice)."""
    if not await _worker_gone(client, run, pool):
        return None
    if await _began(store, key, run.id):
        return None
    await _cancel(client, run.id, "its worker went away before the session began", ended=True)
    return not any(state.is_running() for state in await client.read_flow_run_states(run.id))


async def _began(store: Storage, key: str, run_id: Any) -> bool:
    """The session of ``key`` was begun by flow run ``run_id``: its container marked it before it
    ran it (flows/engine/container_engine.py), so it may have cost."""
    return await asyncio.to_thread(store.read_mark, stored(key, STARTED)) == str(run_id)


async def _worker_gone(client: Any, run: Any, pool: str) -> bool:
    """The worker that claimed ``run`` (Prefect's ``prefect.worker.name`` label; none if it died before
    giving it) is not online in the pool, nor heard from in ``ABANDONED_S`` (a busy server's SQLite
    fails to record heartbeats of live workers for a while: "heartbeat persistence failed")."""
    name = (run.labels or {}).get("prefect.worker.name")
    return not (name and await _online(client, pool, name, ABANDONED_S))


async def _cancel(client: Any, run_id: Any, why: str = "no result in time", ended: bool = False) -> None:
    """The flow run cancelled: ``CANCELLING`` for its worker to stop the container, or ``CANCELLED``
    (``ended``) where no worker is left to do it."""
    from prefect.states import Cancelled, Cancelling, State

    state: State[None] = (Cancelled if ended else Cancelling)(message=f"skillab: {why}")
    try:
        await client.set_flow_run_state(run_id, state, force=True)
    except Exception as exc:
        if not _transient(exc):
            raise
