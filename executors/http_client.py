"""The API executors' HTTP/1.1 client for their one hot path: a JSON body posted, a JSON body back.

httpx spends about 1.6 ms of CPU on each such exchange here (its request and response models, auth
and redirect flows, anyio's locks), which at a few hundred calls a second is most of a run's CPU
(benchmarks/RESULTS.md). This client writes the request and reads the reply on kept-alive asyncio
streams (TLS through the same SSL context httpx would use) for a small fraction of that. It serves
only what it can serve as httpx would: a direct connection (no proxy in the environment for the
host), no test transport; anything else, and every other request, goes through httpx.

A reply is bounded (``MAX_REPLY``); a kept-alive connection the server closed while idle is
replaced once, before any byte of the reply arrived (as browsers and httpcore do).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_REPLY = 64 * 1024 * 1024  # no model answer is larger; a flood is cut there
MAX_HEAD = 64 * 1024
IDLE_KEPT = 64  # kept-alive connections per origin
_DEFAULTS = {"Accept": "application/json", "Content-Type": "application/json"}  # unless the caller names them


class ReplyError(Exception):
    """The reply was cut short or was not HTTP (httpx calls it a remote protocol error)."""


class ConnectError(ReplyError):
    """No connection could be made (refused, unreachable, a failed TLS handshake): httpx's name."""


@dataclass
class Reply:
    """A response as the executors read one (httpx.Response's names, for what they use)."""

    status_code: int
    reason_phrase: str
    headers: dict[str, str]  # lower-case names
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def direct(url: str) -> bool:
    """True when a request to ``url`` would go straight to its host (no proxy in the environment)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return True
    return bool(urllib.request.proxy_bypass(parts.hostname))


@dataclass
class Origin:
    """Kept-alive connections to one scheme, host and port."""

    scheme: str
    host: str
    port: int
    tls: ssl.SSLContext | None
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = field(default_factory=list)

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.open_connection(
                self.host,
                self.port,
                ssl=self.tls,
                server_hostname=self.host if self.tls else None,
                limit=MAX_HEAD,
            )
        except OSError as exc:  # ssl.SSLError is one
            raise ConnectError(f"{type(exc).__name__}: {exc}") from None

    async def exchange(self, head: bytes, body: bytes) -> Reply:
        reused = bool(self.idle)
        conn = self.idle.pop() if reused else await self._open()
        try:
            reply, keep = await _exchange(conn, head, body)
        except _Stale:
            _close(conn)
            if not reused:
                raise ReplyError("the server closed the connection before replying") from None
            conn = await self._open()  # a kept-alive connection the server had closed: once more
            try:
                reply, keep = await _exchange(conn, head, body)
            except BaseException:
                _close(conn)
                raise
        except BaseException:
            _close(conn)
            raise
        if keep and len(self.idle) < IDLE_KEPT:
            self.idle.append(conn)
        else:
            _close(conn)
        return reply

    def close(self) -> None:
        while self.idle:
            _close(self.idle.pop())


class _Stale(Exception):
    """Nothing came back on the connection (closed by the server while it was idle)."""


def _close(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    conn[1].close()


async def _exchange(
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], head: bytes, body: bytes
) -> tuple[Reply, bool]:
    reader, writer = conn
    try:
        writer.write(head + body)
        await writer.drain()
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            raise _Stale from None
        raise ReplyError("the reply's head was cut short") from None
    except (ConnectionResetError, BrokenPipeError):
        raise _Stale from None
    except asyncio.LimitOverrunError:
        raise ReplyError(f"a reply head over {MAX_HEAD} bytes") from None
    status, reason, headers = _head(raw)
    content = await _body(reader, headers)
    keep = headers.get("connection", "").lower() != "close" and (
        "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
    )
    return Reply(status, reason, headers, content), keep


def _head(raw: bytes) -> tuple[int, str, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ReplyError(f"not an HTTP/1.x reply: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(code), reason, headers


async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            content = await _chunks(reader)
        elif "content-length" in headers:
            length = int(headers["content-length"])
            if length > MAX_REPLY:
                raise ReplyError(f"a reply over {MAX_REPLY} bytes")
            content = await reader.readexactly(length)
        else:  # to the end: the server closes
            content = await reader.read(MAX_REPLY + 1)
            while len(content) <= MAX_REPLY and (more := await reader.read(MAX_REPLY + 1 - len(content))):
                content += more
            if len(content) > MAX_REPLY:
                raise ReplyError(f"a reply over {MAX_REPLY} bytes")
    except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
        raise ReplyError(f"the reply's body was cut short ({type(exc).__name__})") from None
    except (ValueError, asyncio.LimitOverrunError) as exc:
        raise ReplyError(f"a malformed reply body ({exc})") from None
    encoding = headers.get("content-encoding", "identity").lower()
    if encoding in ("gzip", "deflate"):  # not asked for, yet a server may send it
        try:
            return zlib.decompress(content, 47)  # gzip or zlib headers, detected
        except zlib.error as exc:
            raise ReplyError(f"a reply body that does not decompress ({exc})") from None
    return content


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        length = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip() or b"0", 16)
        if length == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, then the blank line
                pass
            return b"".join(parts)
        size += length
        if size > MAX_REPLY:
            raise ReplyError(f"a reply over {MAX_REPLY} bytes")
        parts.append(await reader.readexactly(length))
        await reader.readexactly(2)


class LeanClient:
    """Per event loop: an ``Origin`` per scheme, host and port. ``tls`` gives the SSL context, asked
    for at the first https origin only: building one costs ~25 ms of CPU before a run's first call."""

    def __init__(self, tls: Callable[[], ssl.SSLContext]) -> None:
        self.tls = tls
        self.origins: dict[tuple[str, str, int], Origin] = {}
        self.is_closed = False

    async def post_json(self, url: str, headers: dict[str, str], body: Any) -> Reply:
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        origin = self.origins.get((scheme, host, port))
        if origin is None:
            origin = Origin(scheme, host, port, self.tls() if scheme == "https" else None)
            self.origins[(scheme, host, port)] = origin
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        default = (scheme == "https" and port == 443) or (scheme == "http" and port == 80)
        given = {k.lower() for k in headers}
        lines = [
            f"POST {target} HTTP/1.1",
            f"Host: {host if default else f'{host}:{port}'}",
            f"Content-Length: {len(payload)}",
            *(f"{k}: {v}" for k, v in _DEFAULTS.items() if k.lower() not in given),
            *(f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "content-length")),
        ]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return await origin.exchange(head, payload)

    def close(self) -> None:
        self.is_closed = True
        for origin in self.origins.values():
            origin.close()
