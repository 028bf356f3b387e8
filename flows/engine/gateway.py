"""The fleet's gateway: the only way out of a session's container, to its model and the Prefect API.

A container of the fleet's pool has no network at all (``network_mode: none``). On each worker
machine, ``python -m deployments --fleet-gateway POOL`` listens on one Unix socket, which the pool's
template binds into every container read-only at ``/run/skillab-gateway``. The gateway knows which
container a connection comes from (the kernel's peer process, its pid namespace, the container of
the pool whose first process shares it, Docker's labels of that container: nothing the container
can say) and so the one flow run it was started for. A connection
names its destination in its first line:

- ``prefect``: the Prefect API, through the filter of ``flows/engine/api_gate.py``: only that flow
  run's own calls, under the gateway's credential (the container holds none);
- ``host:port``: one of the endpoints that flow run's parameters name (its model endpoint, its
  storage's), then a byte pipe (TLS passes through untouched). Anything else is closed at once.

So a container reaches its model, its storage and its own part of the API, and nothing else of the
worker's machine or the network: not the Docker bridge, not another local port, not the internet.
Inside it, ``flows.engine.container_net`` gives each destination a loopback address of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from executors.lean_httpx import httpx
from executors.parsing import JsonObject
from flows.engine.api_gate import ApiGate, Caller
from flows.engine.fleet import provider_of

#: Where the gateway's socket is bound inside every container of the pool.
INSIDE = Path("/run/skillab-gateway")
SOCKET = "gateway.sock"
#: The destination name of the Prefect API (the gateway knows where it is; a container cannot name it).
PREFECT = "prefect"
FIRST_LINE = 300  # bytes: a destination, not a request
KNOWN = 1024  # flow runs remembered


def host_folder(pool: str) -> Path:
    """The gateway's folder on a worker machine: root's, so no other user can plant a socket there."""
    return Path("/run/skillab-fleet") / pool


def address(url: str) -> str:
    """``host:port`` of an endpoint URL, its scheme's port when it names none."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
    return f"{parts.hostname}:{port}"


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


def session_endpoints(parameters: JsonObject) -> set[str]:
    """What a session's flow run reaches through the gateway, from its parameters: its model's
    endpoint and its storage's (the gateway lets its container reach these and nothing else)."""
    signed = parameters.get("signed")
    where = list(signed.values()) if signed else [storage_endpoint(str(parameters.get("storage") or ""))]
    cli = str((parameters.get("request") or {}).get("cli"))
    return {url for url in (model_url(parameters.get("base_url"), cli), *where) if url}


def peer_pid(writer: asyncio.StreamWriter) -> int:
    """The process at the other end of a Unix socket, as the kernel says."""
    sock = writer.get_extra_info("socket")
    size = struct.calcsize("3i")
    pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size))
    return int(pid)


def pid_namespace(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


class DockerPeers:
    """The flow run a process was started for: the label its worker gave the running container of
    the pool whose first process shares the process's pid namespace. Not its cgroup: root in a
    container (it has SYS_ADMIN) can mount the cgroup tree and move itself into another
    container's. Another container's pid namespace cannot be joined (the pool's seccomp profile
    refuses setns), and a new one matches no container."""

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.known: dict[int, tuple[str, int]] = {}  # pid namespace -> (flow run, container's first process)

    def __call__(self, pid: int) -> str | None:
        namespace = pid_namespace(pid)
        if namespace is None:
            return None
        known = self.known.get(namespace)
        if known is None or pid_namespace(known[1]) != namespace:  # a container gone, a namespace reused
            self.known = self._running()
            known = self.known.get(namespace)
        return known[0] if known else None

    def _running(self) -> dict[int, tuple[str, int]]:
        import docker

        found: dict[int, tuple[str, int]] = {}
        try:
            client = docker.from_env()
            try:
                for c in client.containers.list(filters={"label": f"io.prefect.work-pool-name={self.pool}"}):
                    first = int((c.attrs.get("State") or {}).get("Pid") or 0)
                    run = (c.labels or {}).get("io.prefect.flow-run-id")
                    if run and first and (namespace := pid_namespace(first)) is not None:
                        found[namespace] = (run, first)
            finally:
                client.close()
        except Exception:  # the daemon unreachable (requests' errors too): no container known
            return {}
        return found


class Gateway:
    """One worker machine's gateway for one pool; ``serve`` runs until cancelled. A connection's
    flow run is found by ``flow_run`` from the peer's pid (the kernel's and Docker's word, see
    :class:`DockerPeers`; a test gives its own)."""

    def __init__(
        self,
        pool: str,
        gate: ApiGate,
        flow_run: Callable[[int], str | None] | None = None,
        path: Path | None = None,
    ) -> None:
        self.pool = pool
        self.path = path or host_folder(pool) / SOCKET
        self.gate = gate
        self.flow_run = flow_run or DockerPeers(pool)
        self.callers: OrderedDict[str, Caller] = OrderedDict()

    async def serve(self) -> None:
        """Until SIGTERM or SIGINT, then its socket removed."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.parent.chmod(0o755)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a gateway killed before it removed its socket
        server = await asyncio.start_unix_server(self._handle, str(self.path))
        self.path.chmod(0o666)  # containers connect as their own root
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        try:
            async with server:
                await stop.wait()
        finally:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            await self.gate.aclose()

    async def caller(self, run_id: str) -> Caller | None:
        """The flow run as the API has it (remembered: a run's parameters never change)."""
        if (known := self.callers.get(run_id)) is not None:
            return known
        run = await self.gate.flow_run(run_id)
        if run is None or run.get("work_pool_name") != self.pool:
            return None
        endpoints = frozenset(address(u) for u in session_endpoints(run.get("parameters") or {}))
        caller = Caller(run_id, str(run["flow_id"]), run.get("deployment_id"), endpoints)
        self.callers[run_id] = caller
        while len(self.callers) > KNOWN:
            self.callers.popitem(last=False)
        return caller

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_writer = None
        try:
            run_id = await asyncio.to_thread(self.flow_run, peer_pid(writer))
            caller = await self.caller(run_id) if run_id else None
            line = await asyncio.wait_for(reader.readuntil(b"\n"), timeout=10)
            name = line[:FIRST_LINE].decode("ascii", "replace").strip()
            if caller is None:
                return  # not a container of this pool's flow runs: closed at once
            if name == PREFECT:
                await self.gate.serve(reader, writer, caller)
                return
            if name not in caller.endpoints:
                return  # a destination its flow run does not name
            host, _, port = name.rpartition(":")
            up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (
            TimeoutError, OSError, ValueError, httpx.HTTPError, asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):  # fmt: skip
            return  # the API unreachable (its run not found) or the connection broken: closed
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()


def run(pool: str) -> int:
    """``python -m deployments --fleet-gateway POOL``: serve until stopped (SIGTERM, Ctrl-C)."""
    from prefect.settings import get_current_settings

    api = str(get_current_settings().api.url or "")
    if not api:
        print("skillab: error: --fleet-gateway: no Prefect API configured (PREFECT_API_URL)", file=sys.stderr)
        return 2
    api_settings = get_current_settings().api
    auth = api_settings.auth_string.get_secret_value() if api_settings.auth_string else None
    key = api_settings.key.get_secret_value() if api_settings.key else None
    gateway = Gateway(pool, ApiGate(api, auth, key))
    print(f"skillab: fleet gateway for {pool} at {gateway.path} (pid {os.getpid()})", flush=True)
    asyncio.run(gateway.serve())
    return 0
