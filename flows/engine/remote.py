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
mid-session leaves its container running to the end; a flow run that never starts (no worker
online) or never ends (its machine gone) becomes an error the report counts, after its own timeout
and a grace period, and its flow run is cancelled (the worker stops the container).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import httpx
from fsspec.asyn import sync
from fsspec.core import url_to_fs
from prefect import flow

from executors.egress import PROVIDERS, forwarder
from executors.errors import InputError, env_int
from executors.sandbox import SYSTEM_DIRS, files_limit, tree_size
from executors.schema import AgentRequest, AgentSession, SessionStatus
from flows.engine.container_net import isolated, route
from flows.engine.fleet import provider_of
from flows.engine.gateway import allow

ROOT = Path(__file__).resolve().parents[2]
SESSION_FLOW = "skillab-session"
#: skillab's code as a container runs it: the fleet's image holds these, at this digest.
SOURCES = ("flows", "tasks", "graders", "executors", "deployments", "pyproject.toml")
POLL_S = 1.0
#: After a session's own timeout, how long its flow run may still take (container start, upload).
GRACE_ENV, GRACE_S = "SKILLAB_FLEET_GRACE_S", 180
#: How long a session may wait for a worker while none of the pool's is online.
NO_WORKER_ENV, NO_WORKER_S = "SKILLAB_FLEET_NO_WORKER_S", 120
#: Flow runs a session may take when each ends before the session starts (its container could not
#: reach the API to begin, the server restarting): none of them paid for anything.
DISPATCHES = 3
#: The largest archive of a session's files taken back (the sandbox's disk bound, with room).
FILES_LIMIT = 4 << 30


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


#: What a session leaves in the storage: its record (the result), the files it left, and the mark that
#: it began (after which it is never dispatched again).
RECORD, FILES, STARTED = "session.json", "files.tar", "started"


def stored(key: str, name: str) -> str:
    return f"sessions/{key}/{name}"


def model_url(base_url: str | None, cli: str) -> str | None:
    """The endpoint a session's forwarder talks to: the run's, else its provider's public one."""
    provider = provider_of(cli)
    return base_url or (provider.default_url if provider else None)


def storage_endpoint(url: str) -> str | None:
    """The endpoint an ``s3://`` storage is reached at (``AWS_ENDPOINT_URL``, else AWS's regional
    one); None for a folder."""
    if not url.startswith("s3://"):
        return None
    region = os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return os.environ.get("AWS_ENDPOINT_URL") or f"https://s3.{region}.amazonaws.com"


class Storage:
    """Where a fleet's sessions travel: an fsspec URL (a local folder, ``s3://bucket/prefix``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        # path-style S3 requests: one host name for every bucket, the one the gateway routes
        options = {"config_kwargs": {"s3": {"addressing_style": "path"}}} if url.startswith("s3://") else {}
        self.fs, self.root = url_to_fs(url, **options)

    def path(self, key: str) -> str:
        return f"{self.root.rstrip('/')}/{key}"

    def exists(self, key: str) -> bool:
        self.fs.invalidate_cache()  # another machine writes here: a listing remembered may be stale
        return bool(self.fs.exists(self.path(key)))

    def put(self, local: Path, key: str) -> None:
        """Whole or not at all: a reader never sees half a file (written aside, then moved)."""
        partial = self.path(f"{key}.partial-{uuid.uuid4().hex}")
        self._folder_of(key)
        self.fs.put_file(str(local), partial)
        self.fs.mv(partial, self.path(key))

    def mark(self, key: str, text: str) -> None:
        self._folder_of(key)
        self.fs.pipe_file(self.path(key), text.encode())

    def _folder_of(self, key: str) -> None:
        self.fs.makedirs(self.path(key).rsplit("/", 1)[0], exist_ok=True)

    def read_mark(self, key: str) -> str | None:
        try:
            return bytes(self.fs.cat_file(self.path(key))).decode()
        except FileNotFoundError:
            return None

    def get(self, key: str, local: Path) -> None:
        self.fs.get_file(self.path(key), str(local))

    def size(self, key: str) -> int:
        return int(self.fs.size(self.path(key)))


def named_paths(request: AgentRequest) -> list[Path]:
    """Every folder (and the history file) a session reads: where its inputs travel from and to."""
    named = [
        request.resume,
        request.sandbox,
        request.home,
        str(Path(request.raw_stream).parent),
        request.skill_dir,
        request.plugin_dir,
        request.environment,
        *request.add_dirs,
        *(s.path for s in request.skills),
    ]
    return [Path(n) for n in named if n]


#: How long a session's signed URLs hold: its wait for a worker, its timeout and the grace, with room.
SIGNED_S = 24 * 3600


def signed_urls(store: Storage, key: str, inputs: str) -> dict[str, str] | None:
    """For an ``s3://`` storage: one session's part of it as URLs signed for that part alone (its
    inputs and its record to read; its mark, files and record to write), so its container needs no
    credential of the bucket. None for a folder (its part is mounted instead)."""
    if not store.url.startswith("s3://"):
        return None
    fs: Any = store.fs
    sync(fs.loop, fs.set_session)

    def sign(method: str, name: str) -> str:
        bucket, path, _ = fs.split_path(store.path(name))
        params = {"Bucket": bucket, "Key": path}
        return str(
            sync(
                fs.loop, fs.s3.generate_presigned_url, ClientMethod=method, Params=params, ExpiresIn=SIGNED_S
            )
        )

    reads = (f"inputs/{inputs}.tar", stored(key, RECORD))
    writes = (stored(key, STARTED), stored(key, FILES), stored(key, RECORD))
    return {f"GET {n}": sign("get_object", n) for n in reads} | {
        f"PUT {n}": sign("put_object", n) for n in writes
    }


class SignedStorage:
    """A container's view of its session's part of an ``s3://`` storage: only the signed URLs its
    flow run carries (the methods of :class:`Storage` that the session flow calls)."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls

    def _url(self, method: str, key: str) -> str:
        url = self.urls.get(f"{method} {key}")
        if url is None:
            raise ValueError(f"{method} {key}: not this session's part of the storage")
        return url

    def exists(self, key: str) -> bool:
        response = httpx.get(self._url("GET", key), headers={"Range": "bytes=0-0"}, timeout=60)
        return response.status_code in (200, 206)

    def get(self, key: str, local: Path) -> None:
        with httpx.stream("GET", self._url("GET", key), timeout=300) as response, open(local, "wb") as out:
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)

    def put(self, local: Path, key: str) -> None:
        with open(local, "rb") as body:  # one object appears whole: a reader never sees half of it
            httpx.put(self._url("PUT", key), content=body, timeout=300).raise_for_status()

    def mark(self, key: str, text: str) -> None:
        httpx.put(self._url("PUT", key), content=text.encode(), timeout=60).raise_for_status()


def input_paths(request: AgentRequest) -> list[Path]:
    """The folders (and the history file) a session reads, as the parent staged them (those that exist)."""
    paths = sorted({p for p in named_paths(request) if p.exists()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in paths:  # a folder inside another one travels with it (trigger mode: the sandbox in outputs/)
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def output_folders(request: AgentRequest) -> dict[str, Path]:
    """What a session leaves that grading reads: its outputs (the raw stream's folder) and its
    sandbox, unless the sandbox is inside the outputs."""
    outputs, sandbox = Path(request.raw_stream).parent, Path(request.sandbox)
    return {"outputs": outputs} | ({} if sandbox.is_relative_to(outputs) else {"sandbox": sandbox})


def pack(
    paths: dict[str, Path], archive: Path, skip: tuple[Path, ...] = (), limit: int = FILES_LIMIT
) -> None:
    """``paths`` (name in the archive -> folder or file) into one tar; links are kept as links;
    nothing under a ``skip`` folder. Refused (ValueError) before anything is written when what
    ``unpack`` would write passes ``limit`` (sparse files and hard links counted in full)."""
    size = sum(tree_size(p)[0] if p.is_dir() else p.stat().st_size for p in paths.values() if p.exists())
    if size > limit:
        raise ValueError(f"{size >> 20} MiB to pack, over {limit >> 20} MiB")
    with tarfile.open(archive, "w") as tar:
        for name, path in paths.items():
            if not path.exists():
                continue
            left_out = tuple(
                f"{name}/{s.relative_to(path)}" for s in skip if s.is_relative_to(path) and s != path
            )
            tar.add(path, arcname=name, recursive=True, filter=functools.partial(_kept, left_out=left_out))


def _kept(member: tarfile.TarInfo, left_out: tuple[str, ...]) -> tarfile.TarInfo | None:
    return None if any(member.name == o or member.name.startswith(o + "/") for o in left_out) else member


#: Where a session's inputs may never be unpacked in its container: the system, the image's Python
#: and CLIs, the kernel's and the runtime's folders (an ``etc/ld.so.preload`` or a ``.pth`` file there
#: would run before bubblewrap, beside the key).
SYSTEM_PATHS = tuple(Path(p) for p in (*SYSTEM_DIRS, "/opt", "/proc", "/sys", "/dev", "/run", "/boot"))
#: A session key or an inputs digest: hex, as the parent makes them (never a path).
HEX = re.compile(r"[0-9a-f]{32,64}")


def confined_paths(request: AgentRequest) -> tuple[PurePosixPath, ...]:
    """The paths a container unpacks a session's inputs under: those its request names, each an
    absolute path outside the system's folders; ValueError otherwise."""
    out = []
    for path in named_paths(request):
        clean = Path(os.path.normpath(path))
        if (
            not clean.is_absolute()
            or clean == Path("/")
            or any(clean.is_relative_to(s) for s in SYSTEM_PATHS)
        ):
            raise ValueError(f"the request names {str(path)!r}: not a place for a session's inputs")
        out.append(PurePosixPath(clean.as_posix().lstrip("/")))
    return tuple(out)


def unpack(
    archive: Path, dest: Path, limit: int = FILES_LIMIT, under: tuple[PurePosixPath, ...] | None = None
) -> None:
    """Extract an archive of ``pack`` into ``dest`` (a new or empty folder), treating it as hostile:
    uncompressed only; at most ``limit`` bytes written (a sparse file's full size, a hard link's
    copy counted in full, each checked before it is written) and the sandbox's file count; only
    folders, files and symbolic links (a hard link becomes a copy of a file already extracted here); a name that is
    absolute, climbs out, names an entry already there, or passes through a link is refused
    (ValueError); modes are masked and ownership is this process's. A symbolic link is written as
    the link it is, whatever it points at, and never followed: what the agent left, as it left it.
    ``under``: the only paths (relative to ``dest``) an entry may have or lie below.
    Written by hand, not with tarfile's extraction filters: the image's Debian Python (3.11.2)
    predates them."""
    dest.mkdir(parents=True, exist_ok=True)
    root = os.path.realpath(dest)
    total, count = 0, 0
    with tarfile.open(archive, "r:") as tar:
        for member in tar:
            count += 1
            total += member.size if member.isfile() else 0
            if total > limit or count > files_limit():
                raise ValueError(f"over {limit >> 20} MiB or {files_limit():,} entries")
            if under is not None and not any(PurePosixPath(member.name).is_relative_to(u) for u in under):
                raise ValueError(f"{member.name}: not under a path the request names")
            target = _target(member.name, dest, root)
            if target is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)  # no link on the way: _target checked
            if member.isdir():
                if not target.is_dir() or target.is_symlink():
                    os.mkdir(target, 0o755)
            elif member.issym():
                os.symlink(member.linkname, target)
            elif member.isfile():
                _write(tar, member, target)
            elif member.islnk():
                source = _target(member.linkname, dest, root, existing=True)
                if source is None or source.is_symlink() or not source.is_file():
                    raise ValueError(f"{member.name}: a hard link to {member.linkname}")
                total += source.stat().st_size  # a copy of it is what gets written
                if total > limit:
                    raise ValueError(f"over {limit >> 20} MiB or {files_limit():,} entries")
                shutil.copyfile(source, target, follow_symlinks=False)


def _target(name: str, dest: Path, root: str, existing: bool = False) -> Path | None:
    """Where a member named ``name`` goes under ``dest`` (None: the archive's own top, "."); with
    ``existing``, an entry already extracted (a hard link's source)."""
    parts = Path(name).parts
    if not parts or parts == (".",):
        return None
    if Path(name).is_absolute() or ".." in parts:
        raise ValueError(f"{name}: leaves the archive's folder")
    target = dest.joinpath(*parts)
    if os.path.realpath(target.parent) != os.path.join(root, *parts[:-1]):
        raise ValueError(f"{name}: written through a link")
    if existing:
        if not os.path.lexists(target):
            raise ValueError(f"{name}: not in the archive before")
    elif os.path.lexists(target) and not (target.is_dir() and not target.is_symlink()):
        raise ValueError(f"{name}: twice in the archive")
    return target


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    source = tar.extractfile(member)
    if source is None:
        raise ValueError(f"{member.name}: unreadable")
    mode = (member.mode & 0o755) | 0o600  # no set-id bits, no writes by others
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)


def digest_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@flow(name=SESSION_FLOW, flow_run_name="{label}", log_prints=False, persist_result=False)
async def container_session(
    request: dict[str, Any],
    storage: str,
    key: str,
    inputs: str,
    base_url: str | None,
    label: str,
    signed: dict[str, str] | None = None,
) -> str:
    """One session inside the fleet's container: its inputs unpacked at their own paths, the session
    run as a local one is, its result and files stored under ``key``. A result already stored is
    not run again (a flow run retried, or re-dispatched, after it was paid for)."""
    from prefect.runtime import flow_run as this_run

    from tasks.agent import run_agent_session

    if isolated():  # the container's own way out: its model endpoint and its storage, by the gateway
        where = list(signed.values()) if signed else [storage_endpoint(storage)]
        for url in {model_url(base_url, str(request.get("cli"))), *where}:
            if url:
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
        # from here on the session may cost: this flow run is never followed by another
        store.mark(stored(key, STARTED), str(this_run.id))
        session = await run_agent_session(session_request, base_url, label)
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
        record.write_text(
            json.dumps({"session": session.model_dump(mode="json"), "rate_limited": limited.seen}),
            encoding="utf-8",
        )
        store.put(record, result)
    return str(session.status)


class _RateLimited:
    seen = False

    def note(self, provider: str) -> None:
        self.seen = True


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
        self.allowed: set[str] = set()  # endpoints this run let through the gateways
        self.lock = asyncio.Lock()

    async def ready(self, base_url: str | None, cli: str) -> Storage:
        """The deployment and its storage, found once; the endpoints this run's containers need
        (its model's, its storage's) let through the pool's gateways."""
        async with self.lock:
            if self.storage is None:
                self.deployment, self.storage, self.keys = await _deployment(self.name)
            wanted = (model_url(base_url, cli), storage_endpoint(self.storage.url))
            if (urls := [u for u in wanted if u]) and not set(urls) <= self.allowed:
                await allow(urls)
                self.allowed |= set(urls)
            return self.storage

    async def session(self, request: AgentRequest, base_url: str | None, label: str) -> Dispatched:
        """The session run in a container of the pool, and restored here. Anything that goes wrong
        on the way (storage, the API, a refused archive) is this session's error, not the run's."""
        store = await self.ready(base_url, request.cli)
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
                """A flow run for ``idempotency`` (the one it already names), else a new one."""
                return await client.create_flow_run_from_deployment(
                    self.deployment.id,
                    parameters=parameters,
                    job_variables=key_variables(self.keys, request.cli) | {"volumes": mounts},
                    name=label,
                    idempotency_key=idempotency or f"{key}-{uuid.uuid4().hex}",
                    tags=["skillab", "fleet"],
                )

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


def storage_mounts(store: Storage, key: str, inputs: str) -> list[str]:
    """The volumes of one session's flow run, for a storage that is a local folder: its inputs
    read-only and its own results folder, nothing of any other session's (an s3:// storage: none)."""
    if store.fs.protocol not in ("file", ("file", "local")):
        return []
    store.fs.makedirs(store.path(f"sessions/{key}"), exist_ok=True)
    archive, results = store.path(f"inputs/{inputs}.tar"), store.path(f"sessions/{key}")
    return [f"{archive}:{archive}:ro", f"{results}:{results}:rw"]


def key_variables(keys: dict[str, str], cli: str) -> dict[str, Any]:
    """The job variables of one session's flow run: its own runner's provider key (a reference the
    worker resolves when it starts the container), none of any other provider."""
    provider = provider_of(cli)
    env = keys.get(provider.name) if provider is not None else None
    return {"env": {env: "{{ prefect.blocks.secret." + secret_block(env) + " }}"}} if env else {}


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
    the grace period to store its result."""
    loop = asyncio.get_running_loop()
    grace, no_worker = env_int(GRACE_ENV, GRACE_S), env_int(NO_WORKER_ENV, NO_WORKER_S)
    result = stored(key, RECORD)
    no_worker_since: float | None = None
    claimed: float | None = None  # when it was first seen claimed by a worker
    while True:
        if await asyncio.to_thread(store.exists, result):
            return None
        try:
            state = (await client.read_flow_run(run_id)).state
            if state is not None and state.is_final():
                if await asyncio.to_thread(store.exists, result):
                    return None
                began = await asyncio.to_thread(store.read_mark, stored(key, STARTED)) == str(run_id)
                why = f"its flow run ended {state.name} with no result ({state.message or 'no message'})"
                return Ended(why, unstarted=not began and not state.is_cancelled())
            if state is not None and (state.is_pending() or state.is_running()):
                claimed = claimed or loop.time()
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
        await asyncio.sleep(POLL_S)


def _transient(exc: Exception) -> bool:
    return isinstance(exc, httpx.TransportError | httpx.HTTPStatusError | OSError)


async def _online(client: Any, pool: str) -> bool:
    from prefect.client.schemas.objects import WorkerStatus

    workers = await client.read_workers_for_work_pool(pool)
    return any(w.status == WorkerStatus.ONLINE for w in workers)


async def _cancel(client: Any, run_id: Any) -> None:
    from prefect.states import Cancelling

    try:
        await client.set_flow_run_state(run_id, Cancelling(message="skillab: no result in time"), force=True)
    except Exception as exc:
        if not _transient(exc):
            raise
