"""The executor interface and the HTTP plumbing every API provider shares."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import ssl
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from executors.errors import PermanentError, TransientError, error_for_status
from executors.http_client import LeanClient, Reply, ReplyError, direct
from executors.lean_httpx import httpx
from executors.parsing import JsonObject
from executors.pricing import NO_DISCOUNT, VENDOR_RATIOS, PriceTable
from executors.sandbox import Isolation
from executors.schema import RunRequest, RunResult, Usage

POOL_SIZE = 8  # connections per httpx client (see HttpExecutor._client)
#: Characters per token when deciding whether a system prompt is long enough to cache. About right
#: for English prose; code runs nearer 3, so a code-heavy artifact just above a provider's minimum
#: may go unmarked: a missed saving, never an extra cost (a marker below the minimum is ignored).
CACHE_CHARS_PER_TOKEN = 4
WARM_UP_PROMPT = "Reply with OK."


def estimated_tokens(text: str) -> int:
    return len(text) // CACHE_CHARS_PER_TOKEN


def min_tokens_for(model: str, table: dict[str, int | None], default: int | None) -> int | None:
    """The longest-prefix entry of a per-model table of minimum cacheable prompt lengths."""
    best = max((p for p in table if model.startswith(p)), key=len, default=None)
    return default if best is None else table[best]


class Parsed(NamedTuple):
    """What a provider's response body says: text, token counts, and the model that answered."""

    text: str
    usage: Usage
    model: str | None


@dataclass(frozen=True)
class ExecutorSettings:
    """Per-process settings of one executor. Holds no secret: keys are read from the environment."""

    base_url: str | None = None
    timeout_s: float = 120.0
    prices_file: str | None = None
    max_connections: int = 256
    #: Mark the artifact (system prompt) for the provider's prompt cache where that takes a marker
    #: (Anthropic). Off: no marker, and no warm-up call.
    prompt_cache: bool = True
    isolation: Isolation = "bubblewrap"  # agent CLIs in sample mode: the OS sandbox of their sessions
    allow_network: bool = False  # agent CLIs in sample mode: the host's network, not only the model
    #: Where API requests go instead of the network: an in-process transport (a unit test's fake
    #: provider, ``FakeProvider.transport()``); None, the default, is real HTTP.
    transport: httpx.AsyncBaseTransport | None = None


class Executor(ABC):
    """Turns a RunRequest into a RunResult or raises TransientError / PermanentError."""

    name: ClassVar[str]
    #: Part of every cache key: bump when a change alters what the executor sends or returns.
    version: ClassVar[str] = "1"
    default_model: ClassVar[str]
    #: True when one call may write into a sandbox (agent CLIs); API executors only answer text.
    agentic: ClassVar[bool] = False
    #: Who makes the models it serves, when its API says (the judge's self-preference check); its
    #: cache prices as ratios to the input price fill a price file's missing cache prices.
    vendor: ClassVar[str | None] = None

    @classmethod
    def cache_version(cls) -> str:
        """This executor's part of every cache key: what it sends and returns may differ by it."""
        return cls.version

    def __init__(self, settings: ExecutorSettings | None = None) -> None:
        self.settings = settings or ExecutorSettings()
        ratios = VENDOR_RATIOS.get(self.vendor or "", NO_DISCOUNT)
        self.prices = (
            PriceTable.from_file(Path(self.settings.prices_file), ratios=ratios)
            if self.settings.prices_file
            else PriceTable(ratios=ratios)
        )

    def problem(self) -> str | None:
        """A one-line reason this executor cannot run here (missing key, missing binary), or None."""
        return None

    def describe(self, model: str) -> str:
        return f"{self.name}:{model}"

    @abstractmethod
    async def run(self, request: RunRequest) -> RunResult: ...

    def cache_min_tokens(self, model: str) -> int | None:
        """The provider's minimum cacheable prompt prefix for ``model``; None: no prompt caching."""
        return None

    def caches(self, request: RunRequest) -> bool:
        """True when the request's system prompt is long enough for the provider to cache it."""
        minimum = self.cache_min_tokens(request.model)
        return (
            self.settings.prompt_cache
            and minimum is not None
            and bool(request.system)
            and estimated_tokens(request.system or "") >= minimum
        )

    def warm_up_request(self, request: RunRequest) -> RunRequest | None:
        """A one-token call that puts ``request``'s system prompt in the provider's cache, or None
        when caching cannot apply (no system prompt, too short, a provider without a cache).

        Concurrent calls that start before the first one has written the cache all miss it (and on
        Anthropic each pays the cache-write premium), so the flow runs this once per variant, waits
        for it, then fans out: every call after it reads the artifact at the cache-read price.
        Everything that can be part of the cached prefix (model, system, parameters, schema) is
        kept; only the prompt and the output cap change."""
        return self.warm_up_of(request) if self.caches(request) else None

    def warm_up_of(self, request: RunRequest) -> RunRequest:
        """``warm_up_request`` for a request already known to be cached (``caches``)."""
        return request.model_copy(update={"prompt": WARM_UP_PROMPT, "max_tokens": 1})

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


def shown(url: str) -> str:
    """An endpoint as messages show it: without its query, which could carry a credential."""
    return str(httpx.URL(url).copy_with(query=None))


def json_of(response: httpx.Response | Reply) -> JsonObject:
    """A response's JSON object; TransientError when the body is not one (a proxy's error page)."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TransientError(f"malformed response body: {response.text[:120]!r}") from exc
    if not isinstance(data, dict):
        raise TransientError(f"malformed response body: expected an object, got {type(data).__name__}")
    return data


class HttpExecutor(Executor):
    """Shared httpx client (one per event loop) and the one mapping of HTTP failures to the error tree."""

    env_base_url: ClassVar[str]
    default_base_url: ClassVar[str]
    env_keys: ClassVar[tuple[str, ...]]

    def __init__(self, settings: ExecutorSettings | None = None) -> None:
        super().__init__(settings)
        # Keyed by the loop's id; the loop itself is held, so its id cannot be reused by a new loop.
        self._clients: dict[tuple[int, int], tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}
        self._lean: dict[int, tuple[asyncio.AbstractEventLoop, LeanClient]] = {}
        self._direct: dict[str, bool] = {}  # origin -> no proxy in the environment for it
        self._turn = itertools.count()
        self._ssl: ssl.SSLContext | None = None

    @property
    def base_url(self) -> str:
        return (self.settings.base_url or os.environ.get(self.env_base_url) or self.default_base_url).rstrip(
            "/"
        )

    @property
    def api_key(self) -> str | None:
        return next((os.environ[k] for k in self.env_keys if os.environ.get(k)), None)

    def problem(self) -> str | None:
        # A custom base URL (a local server) may need no key; the public endpoint always does.
        if self.api_key is None and self.base_url == self.default_base_url.rstrip("/"):
            return f"executor {self.name!r} needs {' or '.join(self.env_keys)} set (or {self.env_base_url})"
        return None

    def _client(self) -> httpx.AsyncClient:
        """Round-robin over small clients: httpcore scans every pooled connection for every request
        (measured: ~1,000 idle checks per call at concurrency 32), so several pools of
        POOL_SIZE connections cost far less CPU than one large pool."""
        loop = asyncio.get_running_loop()
        key = (id(loop), next(self._turn) % max(1, self.settings.max_connections // POOL_SIZE))
        entry = self._clients.get(key)
        if entry is not None and not entry[1].is_closed:
            return entry[1]
        limits = httpx.Limits(max_connections=POOL_SIZE, max_keepalive_connections=POOL_SIZE)
        client = httpx.AsyncClient(
            timeout=self.settings.timeout_s,
            limits=limits,
            verify=self.tls(),
            transport=self.settings.transport,
        )
        self._clients[key] = (loop, client)
        return client

    def tls(self) -> ssl.SSLContext:
        """One context for every client of the executor: each costs ~25 ms of CPU to build."""
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    def lean(self, url: str) -> LeanClient | None:
        """The lean client of this event loop, where it serves ``url`` as httpx would (a direct
        connection, no test transport); None: httpx."""
        if self.settings.transport is not None:
            return None
        origin = "/".join(url.split("/", 3)[:3])
        if origin not in self._direct:
            self._direct[origin] = direct(url)
        if not self._direct[origin]:
            return None
        loop = asyncio.get_running_loop()
        entry = self._lean.get(id(loop))
        if entry is None:
            entry = self._lean[id(loop)] = (loop, LeanClient(self.tls))
        return entry[1]

    def headers(self) -> dict[str, str]:
        """Authentication and version headers every request to this provider carries."""
        return {}

    async def send(
        self, method: str, url: str, headers: dict[str, str], **kwargs: Any
    ) -> httpx.Response | Reply:
        """One HTTP exchange with every failure mapped onto the error tree; a 2xx response. A JSON
        body posted goes through the lean client where it can (see ``lean``), all else through httpx."""
        client = self.lean(url) if method == "POST" and set(kwargs) == {"json"} else None
        try:
            if client is not None:
                response: httpx.Response | Reply = await asyncio.wait_for(
                    client.post_json(url, headers, kwargs["json"]), self.settings.timeout_s
                )
            else:
                response = await self._client().request(method, url, headers=headers, **kwargs)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TransientError(
                f"timeout after {self.settings.timeout_s:g}s ({type(exc).__name__})", timeout=True
            ) from exc
        except (httpx.TransportError, ReplyError, OSError) as exc:
            raise TransientError(f"connection error ({shown(url)}): {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise error_for_status(
                response.status_code,
                _error_message(response),
                response.headers.get("retry-after"),
                shown(url),
            )
        return response

    async def post_json(self, url: str, body: JsonObject, headers: dict[str, str]) -> JsonObject:
        return json_of(await self.send("POST", url, headers, json=body))

    async def run(self, request: RunRequest) -> RunResult:
        started = time.perf_counter()
        data = await self.post_json(*self.build(request))
        return self.result_from(data, request.model, latency_ms=(time.perf_counter() - started) * 1000)

    def result_from(
        self, data: JsonObject, model: str, *, latency_ms: float, multiplier: float = 1.0
    ) -> RunResult:
        """A RunResult from a response body (``model``: the id asked for, if the body names none),
        priced at ``multiplier`` x the list price (a batch API's results: 0.5)."""
        try:
            text, usage, answered_by = self.parse(data)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response body: missing {exc}") from exc
        model = answered_by or model
        return RunResult(
            ok=True,
            output=text,
            usage=usage,
            cost_usd=self.prices.cost_of(model, usage, multiplier),
            latency_ms=latency_ms,
            model=model,
            price_multiplier=multiplier,
        )

    @abstractmethod
    def build(self, request: RunRequest) -> tuple[str, JsonObject, dict[str, str]]:
        """(url, body, headers) for one request."""

    @abstractmethod
    def parse(self, data: JsonObject) -> Parsed:
        """Text, token counts (``Usage``: uncached input apart from cache writes and reads) and
        the model id, from a response body."""

    async def aclose(self) -> None:
        """Close the running loop's clients and forget those of closed loops. A client of another
        live loop (a run's head start, in its own thread) is that loop's to close."""
        loop = asyncio.get_running_loop()
        for key, (owner, client) in list(self._clients.items()):
            if owner is loop or owner.is_closed():
                self._clients.pop(key, None)
            if owner is loop:
                await client.aclose()
        for loop_id, (owner, lean) in list(self._lean.items()):
            if owner is loop:
                lean.close()
            if owner is loop or owner.is_closed():  # a closed loop's connections went with it
                self._lean.pop(loop_id, None)


def _error_message(response: httpx.Response | Reply) -> str:
    """The server's own words, from the usual error envelopes, else the raw body start."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:300] or response.reason_phrase
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err)[:300]
        return str(err)[:300]
    return str(data)[:300]


def require(condition: bool, message: str) -> None:
    if not condition:
        raise PermanentError(message)
