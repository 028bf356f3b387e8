"""The fleet's gateway: the only way out of a session's container, to its model and the Prefect API.

A container of the fleet's pool has no network at all (``network_mode: none``). On each worker
machine, ``python -m deployments --fleet-gateway POOL`` listens on one Unix socket, which the pool's
template binds into every container read-only at ``/run/skillab-gateway``. A connection names its
destination in its first line and is then a byte pipe (TLS passes through untouched):

- ``prefect``: the Prefect API the gateway itself is configured with (what the worker protocol needs:
  the session flow reports its state and logs, and reads its flow run);
- ``host:port``: one of the endpoints a run named before it dispatched its sessions (its model
  endpoint, an S3 storage's), kept in the Prefect variable ``skillab-fleet-endpoints``, which only
  an authenticated client can write. Anything else is closed at once.

So a container reaches its model, its storage and the API, and nothing else of the worker's machine
or the network: not the Docker bridge, not another local port, not the internet. Inside it,
``flows.engine.container_net`` gives each destination a loopback address and port of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

#: Where the gateway's socket is bound inside every container of the pool.
INSIDE = Path("/run/skillab-gateway")
SOCKET = "gateway.sock"
#: The destination name of the Prefect API (the gateway knows where it is; a container cannot name it).
PREFECT = "prefect"
#: The Prefect variable listing the endpoints runs dispatched sessions to reach ("host:port" each).
ENDPOINTS = "skillab-fleet-endpoints"
REFRESH_S = 1.0  # how often, at most, an unknown destination makes the gateway read the list again
FIRST_LINE = 300  # bytes: a destination, not a request


def host_folder(pool: str) -> Path:
    """The gateway's folder on a worker machine: root's, so no other user can plant a socket there."""
    return Path("/run/skillab-fleet") / pool


def address(url: str) -> str:
    """``host:port`` of an endpoint URL, its scheme's port when it names none."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
    return f"{parts.hostname}:{port}"


async def allow(urls: list[str]) -> None:
    """Before a run dispatches sessions: let its containers reach these endpoints (added to the list)."""
    from prefect.variables import Variable

    wanted = {address(u) for u in urls}
    for _ in range(5):  # two runs adding at once: the later write may drop the earlier's, read again
        known: set[str] = set(await Variable.aget(ENDPOINTS, default=[]) or [])
        if wanted <= known:
            return
        await Variable.aset(ENDPOINTS, sorted(known | wanted), overwrite=True)
        await asyncio.sleep(0.05)


class Gateway:
    """One worker machine's gateway for one pool; ``serve`` runs until cancelled."""

    def __init__(self, pool: str, api_url: str) -> None:
        self.path = host_folder(pool) / SOCKET
        self.api = address(api_url)
        self.allowed: set[str] = set()
        self.read_at = 0.0

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

    async def destination(self, name: str) -> str | None:
        """Where a named destination leads, or None when no run asked for it."""
        if name == PREFECT:
            return self.api
        if name not in self.allowed and time.monotonic() - self.read_at > REFRESH_S:
            from prefect.variables import Variable

            self.read_at = time.monotonic()
            self.allowed = set(await Variable.aget(ENDPOINTS, default=[]) or [])
        return name if name in self.allowed else None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_writer = None
        try:
            line = await asyncio.wait_for(reader.readuntil(b"\n"), timeout=10)
            target = await self.destination(line[:FIRST_LINE].decode("ascii", "replace").strip())
            if target is None:
                return  # a destination no run named: closed at once
            host, _, port = target.rpartition(":")
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (TimeoutError, OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
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
    gateway = Gateway(pool, api)
    print(f"skillab: fleet gateway for {pool} at {gateway.path} (pid {os.getpid()})", flush=True)
    asyncio.run(gateway.serve())
    return 0
