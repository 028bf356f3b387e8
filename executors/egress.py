"""The only way out of a sandbox: skillab's forwarder to a session's model endpoint.

An agent session never holds a key and never sees the network. Inside its sandbox the CLI is told
its endpoint is ``http://127.0.0.1:EGRESS_PORT`` (the relay, see ``executors/relay.py``) and its key
is a placeholder. The relay hands each connection to this forwarder's Unix socket on the host, which
parses the HTTP request, replaces whatever credential headers came with the runner's own key (read
from this process's environment, for that provider only), and sends it to the one upstream the
route was made for (``--base-url``, else the provider's public endpoint, TLS included). Responses
stream back unchanged, server-sent events as they arrive.

So the key exists only in this process; a suite that points the CLI elsewhere (``ANTHROPIC_BASE_URL``
in a case's env, a proxy variable) reaches nothing, and a session cannot talk to the Prefect API, the
judge or any other local port. With ``--no-os-sandbox`` there is no network namespace to enforce it;
the forwarder then listens on a loopback TCP port instead, and the key still stays out of the
session's environment.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import h11

from executors.http_relay import close, forwarded_headers, relay_response, reply, requests
from executors.lean_httpx import httpx
from executors.limits import alive
from executors.listing import (
    CODEX_SESSION_HEADER,
    OPENCODE_SESSION_HEADER,
    SESSION_HEADER,
    SkillListing,
    observe_any,
    observe_claude,
    observe_codex,
    observe_xml,
)

#: Headers that carry a credential in one provider's protocol or another: dropped when the route
#: has a key of its own to put in (the placeholder the session sent is never forwarded then).
AUTH_HEADERS = frozenset({"x-api-key", "authorization", "x-goog-api-key", "api-key"})
MAX_BODY = 64 * 1024 * 1024  # a request larger than this is no model call
PLACEHOLDER_KEY = "skillab-sandbox"  # what a session is given where its CLI insists on a key
PREFIX = "skillab-egress-"
OBSERVED_SESSIONS = 4096  # listings kept for sessions not yet collected (a crashed run's are forgotten)

T = TypeVar("T")


@dataclass(frozen=True)
class Credential:
    """Where a provider's key comes from on the host, and how it is sent."""

    env: str
    header: str
    prefix: str = ""


@dataclass(frozen=True)
class Provider:
    name: str
    default_url: str
    credentials: tuple[Credential, ...]
    #: The headers naming the agent session a request belongs to (a CLI that sends none is known by
    #: its working folder in the request, see Forwarder.expect), and what is read of the request body
    #: for that session (its skill listing): recorded once per session.
    session_headers: tuple[str, ...] = ()
    observe: Callable[[bytes], SkillListing | None] | None = None

    def headers(self) -> dict[str, str]:
        """The first credential set in this process's environment, as headers; {} when none is."""
        for c in self.credentials:
            value = os.environ.get(c.env)
            if value:
                return {c.header: f"{c.prefix}{value}"}
        return {}

    def secrets(self) -> tuple[str, ...]:
        return tuple(v for c in self.credentials if (v := os.environ.get(c.env)))


ANTHROPIC = Provider(
    "anthropic",
    "https://api.anthropic.com",
    (
        Credential("ANTHROPIC_API_KEY", "x-api-key"),
        Credential("ANTHROPIC_AUTH_TOKEN", "authorization", "Bearer "),
    ),
    (SESSION_HEADER,),
    observe_any(observe_claude, observe_xml),  # Claude Code's listing, or Copilot CLI's XML
)
OPENAI = Provider(
    "openai",
    "https://api.openai.com/v1",
    (
        Credential("OPENAI_API_KEY", "authorization", "Bearer "),
        Credential("CODEX_API_KEY", "authorization", "Bearer "),
    ),
    (CODEX_SESSION_HEADER, OPENCODE_SESSION_HEADER),
    observe_any(observe_codex, observe_xml),  # Codex's, or OpenCode's XML
)
GEMINI = Provider(
    "gemini",
    "https://generativelanguage.googleapis.com",
    (Credential("GEMINI_API_KEY", "x-goog-api-key"), Credential("GOOGLE_API_KEY", "x-goog-api-key")),
    observe=observe_xml,
)
#: Each provider by name: the API executors of the same name use the same accounts (a judge on
#: Anthropic's API and Claude Code share one key's rate limit).
PROVIDERS = {p.name: p for p in (ANTHROPIC, OPENAI, GEMINI)}


@dataclass(frozen=True)
class Route:
    """One forwarder listener: a Unix socket for sandboxes, or a loopback port without one."""

    upstream: str
    socket: Path | None
    port: int | None

    def url(self, inner_port: int) -> str:
        """The endpoint a session is configured with: the relay's port inside a sandbox, or this
        route's loopback port; the upstream's path kept (``/v1`` for OpenAI-style endpoints)."""
        path = httpx.URL(self.upstream).raw_path.decode().rstrip("/")
        return f"http://127.0.0.1:{self.port if self.port is not None else inner_port}{path}"


class Forwarder:
    """The process's forwarder: one event loop in a daemon thread, one listener per route."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="skillab-egress")
        self._thread.start()
        self._dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=_socket_root()))
        self._dir.chmod(0o700)
        self._routes: dict[tuple[str, str, bool], Route] = {}
        self._lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None
        self._listings: OrderedDict[str, SkillListing] = OrderedDict()
        self._expected: set[str] = set()  # working folders of sessions whose CLI sends no session header
        self._throttled: list[weakref.WeakMethod[Callable[[str], None]]] = []
        self._listings_lock = threading.Lock()  # not _lock: route() holds that while the loop works
        atexit.register(shutil.rmtree, self._dir, True)

    def _call(self, coro: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()  # type: ignore[arg-type]

    def route(self, provider: Provider, base_url: str | None, *, tcp: bool = False) -> Route:
        upstream = (base_url or provider.default_url).rstrip("/")
        key = (provider.name, upstream, tcp)
        with self._lock:
            if key not in self._routes:
                self._routes[key] = self._call(self._listen(provider, upstream, tcp, len(self._routes)))
            return self._routes[key]

    async def _listen(self, provider: Provider, upstream: str, tcp: bool, index: int) -> Route:
        def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Awaitable[None]:
            return self._serve(reader, writer, provider, upstream)

        if tcp:
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
            return Route(upstream, None, server.sockets[0].getsockname()[1])
        path = self._dir / f"{provider.name}-{index}.sock"
        await asyncio.start_unix_server(handler, str(path))
        path.chmod(0o600)
        return Route(upstream, path, None)

    def on_rate_limited(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(provider name)`` (a bound method, held weakly) on every 429 an upstream
        answers a session with: the fleet's pace slows every run (flows/engine/fleet.py)."""
        with self._listings_lock:
            self._throttled = [w for w in self._throttled if w() is not None]
            self._throttled.append(weakref.WeakMethod(listener))  # type: ignore[arg-type]

    def _rate_limited(self, provider: Provider) -> None:
        with self._listings_lock:
            listeners = [f for w in self._throttled if (f := w()) is not None]
        for listener in listeners:
            listener(provider.name)

    def expect(self, workdir: str) -> None:
        """A session is about to start in ``workdir`` (a path no other session shares): a request that
        names no session but holds that path is its (a CLI that sends no session header names its
        working folder in its prompt)."""
        with self._listings_lock:
            self._expected.add(workdir)

    def listing(self, session_id: str | None, workdir: str | None = None) -> SkillListing | None:
        """The first skill listing a session's requests carried, by its id or its working folder
        (taken: asked once per session)."""
        with self._listings_lock:
            self._expected.discard(workdir or "")
            found = self._listings.pop(session_id, None) if session_id else None
            by_folder = self._listings.pop(workdir, None) if workdir else None
            return found or by_folder

    def _observe(self, provider: Provider, request: h11.Request, body: bytes) -> None:
        if provider.observe is None:
            return
        names = {h.encode() for h in provider.session_headers}
        session = next((v.decode("latin-1") for k, v in request.headers if k.lower() in names), None)
        with self._listings_lock:
            if session is None:  # known by the working folder its request names
                session = next((w for w in self._expected if w.encode() in body), None)
            if not session or session in self._listings:
                return
        listing = provider.observe(body)
        if listing is not None:
            with self._listings_lock:
                self._listings.setdefault(session, listing)
                while len(self._listings) > OBSERVED_SESSIONS:
                    self._listings.popitem(last=False)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(connect=30.0, read=900.0, write=60.0, pool=60.0)
            self._client = httpx.AsyncClient(timeout=timeout, trust_env=True, follow_redirects=False)
        return self._client

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, provider: Provider, upstream: str
    ) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=256 * 1024)
        try:
            async for request, body in requests(conn, reader, writer, MAX_BODY, "model forwarder"):
                await self._forward(writer, conn, provider, upstream, request, body)
        except Exception:  # a session must never make the host print a traceback: the connection ends
            return
        finally:
            close(writer)

    async def _forward(
        self,
        writer: asyncio.StreamWriter,
        conn: h11.Connection,
        provider: Provider,
        upstream: str,
        request: h11.Request,
        body: bytes,
    ) -> None:
        self._observe(provider, request, body)
        credential = provider.headers()
        headers = forwarded_headers(request, AUTH_HEADERS if credential else frozenset())
        headers += list(credential.items())
        base = httpx.URL(upstream)
        raw = request.target.decode("latin-1")
        prefix = base.raw_path.decode("latin-1").rstrip("/")
        target = normalised_target(raw)
        if target is None or (prefix and not (target == prefix or target.startswith(prefix + "/"))):
            # only the endpoint the route was made for: an absolute URL, CONNECT, or another path of
            # the upstream host (which would receive the key) is refused, however it is spelled
            await reply(
                writer, conn, 403, f"model forwarder: {raw[:200]!r} is not under {prefix or '/'}".encode()
            )
            return
        try:
            url = base.copy_with(raw_path=target.encode("latin-1"))
        except (httpx.InvalidURL, ValueError) as exc:
            await reply(writer, conn, 400, f"model forwarder: {exc}".encode())
            return
        try:
            async with self._http().stream(
                request.method.decode(), url, headers=headers, content=body
            ) as response:
                if response.status_code == 429:
                    self._rate_limited(provider)
                await relay_response(writer, conn, response)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            if conn.our_state is h11.SEND_RESPONSE:
                await reply(writer, conn, 502, f"model forwarder: {type(exc).__name__}: {exc}".encode())


#: Percent-encodings an upstream may decode into path syntax: dots, slashes and backslashes.
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)
#: What a model API's path is made of once those are decoded: no other escape (a double-encoded or
#: overlong dot, a NUL), no ';' parameter (servers that strip them read "..;" as ".."), no space.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._~!$&'()*+,=:@/-]*")


def normalised_target(target: str) -> str | None:
    """The request target as the upstream will resolve it, or None when it is no origin-form path.

    The prefix check must see what the upstream sees: ``/v1/../admin``, ``/v1/%2e%2e/admin``,
    ``/v1%2f..%2fadmin``, ``//admin`` and ``\\admin`` all name ``/admin`` to some server. Encoded dots,
    slashes and backslashes are decoded, backslashes read as slashes, empty segments dropped and dot
    segments resolved (RFC 3986 5.2.4); a path that still holds an escape or a ';' (``%252e``,
    ``%c0%ae``, ``..;``, ``..%00``), a space, or a segment of three or more dots is no model's and
    is refused. What is forwarded is this normalised path, so nothing the check passed
    can be read differently upstream. Its query string is kept as sent."""
    path, mark, query = target.partition("?")
    if not path.startswith("/"):
        return None
    path = _ENCODED.sub(lambda m: chr(int(m.group(1), 16)), path).replace("\\", "/")
    if not _PLAIN_PATH.fullmatch(path):
        return None  # any other escape (%25, %00, an overlong %c0%ae), a ';' parameter: no model's path
    segments: list[str] = []
    for segment in path.split("/"):
        if set(segment) == {"."} and len(segment) > 2:  # "...": upward to some servers
            return None
        if segment == "..":
            if not segments:
                return None  # above the root: no server's path
            segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    trailing = "/" if path.endswith(("/", "/.", "/..")) and segments else ""
    return "/" + "/".join(segments) + trailing + mark + query


_FORWARDER: Forwarder | None = None
_FORWARDER_LOCK = threading.Lock()


def forwarder() -> Forwarder:
    """The process's forwarder, started at its first use."""
    global _FORWARDER
    with _FORWARDER_LOCK:
        if _FORWARDER is None:
            _FORWARDER = Forwarder()
        return _FORWARDER


def _socket_root() -> str:
    """Where the forwarder's sockets go: the temporary folder, unless its path is too long for a
    Unix socket's (108 bytes on Linux, the file name included), then /tmp."""
    root = tempfile.gettempdir()
    return root if len(root) <= 60 else "/tmp"


def sweep() -> None:
    """Remove forwarder folders whose process is gone (a run killed with -9)."""
    roots = {Path(_socket_root()), Path(tempfile.gettempdir())}
    for folder in (f for root in roots for f in root.glob(f"{PREFIX}*")):
        owner = folder.name.removeprefix(PREFIX).split("-", 1)[0]
        if owner.isdigit() and not alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)
