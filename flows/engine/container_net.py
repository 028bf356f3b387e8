"""Inside a fleet container (no network): each destination its own loopback address, through the gateway.

The container's command (``python -m flows.engine.container_engine``) gives the Prefect API the
worker configured (``PREFECT_API_URL``) a route and talks to it over plain HTTP (the gateway's
filter speaks to the real one, TLS and credential included); the session adds routes for its model
endpoint and storage (:func:`route`). A route maps the URL's host to a loopback address in ``/etc/hosts`` (an IP address host is bound as it is),
and a relay there hands each connection to the gateway's socket with the destination's name. The
model's and storage's URLs stay as the parent wrote them, TLS and host names included.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import threading
from pathlib import Path

from executors.relay import accept
from flows.engine.gateway import INSIDE, SOCKET, address

HOSTS = Path("/etc/hosts")
LOOPBACK = "127.77.0.{}"  # addresses given to host names, one each


def isolated() -> bool:
    """This process runs in a container of the fleet's pool whose only way out is the gateway."""
    return (INSIDE / SOCKET).exists()


def _host_address(host: str) -> str:
    """The loopback address ``host`` resolves to here: the one it has in /etc/hosts, else a new one
    (any other line naming it loses the name: Docker maps ``host.docker.internal`` to the bridge)."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    lines = HOSTS.read_text(encoding="utf-8").splitlines() if HOSTS.exists() else []
    ours = {f[0] for line in lines if (f := line.split()) and f[0].startswith(LOOPBACK[:-2])}
    kept, found = [], None
    for line in lines:
        fields = line.split()
        if len(fields) >= 2 and host in fields[1:]:
            if fields[0] in ours:
                found = fields[0]
            else:
                line = (
                    "\t".join([fields[0], *(n for n in fields[1:] if n != host)]) if len(fields) > 2 else ""
                )
        kept.append(line)
    if found is not None:
        return found
    mine = LOOPBACK.format(len(ours) + 1)
    # written in place: Docker binds the file, it cannot be replaced
    HOSTS.write_text("\n".join([*kept, f"{mine}\t{host}"]) + "\n", encoding="utf-8")
    return mine


def route(url: str, name: str | None = None) -> str:
    """Make ``url``'s host and port reachable from this container: ``name`` is what the gateway is
    asked for (default ``host:port``). Returns the local address."""
    return _route(address(url), name or address(url))


@functools.cache
def _route(destination: str, name: str) -> str:
    """One relay per destination (``host:port``), however many URLs lead there."""
    host, _, port_text = destination.rpartition(":")
    port = int(port_text)
    local = _host_address(host.strip("[]"))
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((local, port))
    server.listen(64)
    preamble = f"{name}\n".encode()
    threading.Thread(target=accept, args=(server, str(INSIDE / SOCKET), preamble), daemon=True).start()
    return f"{local}:{port}"
