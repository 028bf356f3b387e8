"""The executor interface and the HTTP plumbing every API provider shares."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import ssl
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx

from executors.errors import PermanentError, TransientError, error_for_status
from executors.pricing import PriceTable
from executors.sandbox import Isolation
from executors.schema import RunRequest, RunResult

POOL_SIZE = 8  # connections per httpx client (see HttpExecutor._client)


@dataclass(frozen=True)
class ExecutorSettings:
    """Per-process settings of one executor. Holds no secret: keys are read from the environment."""

    base_url: str | None = None
    timeout_s: float = 120.0
    prices_file: str | None = None
    max_connections: int = 256
    isolation: Isolation = "bubblewrap"  # agent CLIs in sample mode: the OS sandbox of their sessions


class Executor(ABC):
    """Turns a RunRequest into a RunResult or raises TransientError / PermanentError."""

    name: ClassVar[str]
    #: Part of every cache key: bump when a change alters what the executor sends or returns.
    version: ClassVar[str] = "1"
    default_model: ClassVar[str]
    #: True when one call may write into a sandbox (agent CLIs); API executors only answer text.
    agentic: ClassVar[bool] = False

    def __init__(self, settings: ExecutorSettings | None = None) -> None:
        self.settings = settings or ExecutorSettings()
        self.prices = (
            PriceTable.from_file(Path(self.settings.prices_file))
            if self.settings.prices_file
            else PriceTable()
        )

    def problem(self) -> str | None:
        """A one-line reason this executor cannot run here (missing key, missing binary), or None."""
        return None

    def describe(self, model: str) -> str:
        return f"{self.name}:{model}"

    @abstractmethod
    async def run(self, request: RunRequest) -> RunResult: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


class HttpExecutor(Executor):
    """Shared httpx client (one per event loop) and the one mapping of HTTP failures to the error tree."""

    env_base_url: ClassVar[str]
    default_base_url: ClassVar[str]
    env_keys: ClassVar[tuple[str, ...]]

    def __init__(self, settings: ExecutorSettings | None = None) -> None:
        super().__init__(settings)
        self._clients: dict[tuple[int, int], httpx.AsyncClient] = {}
        self._turn = itertools.count()
        self._ssl: ssl.SSLContext | None = None

    @property
    def base_url(self) -> str:
        import os

        return (self.settings.base_url or os.environ.get(self.env_base_url) or self.default_base_url).rstrip(
            "/"
        )

    @property
    def api_key(self) -> str | None:
        import os

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
        loop_id = id(asyncio.get_running_loop())
        index = next(self._turn) % max(1, self.settings.max_connections // POOL_SIZE)
        client = self._clients.get((loop_id, index))
        if client is None or client.is_closed:
            limits = httpx.Limits(max_connections=POOL_SIZE, max_keepalive_connections=POOL_SIZE)
            if self._ssl is None:  # one context for all clients: each costs ~25 ms of CPU to build
                self._ssl = httpx.create_ssl_context()
            client = httpx.AsyncClient(timeout=self.settings.timeout_s, limits=limits, verify=self._ssl)
            self._clients[(loop_id, index)] = client
        return client

    async def post_json(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        try:
            response = await self._client().post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise TransientError(
                f"timeout after {self.settings.timeout_s:g}s ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientError(f"connection error: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise error_for_status(
                response.status_code, _error_message(response), response.headers.get("retry-after")
            )
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TransientError(f"malformed response body: {response.text[:120]!r}") from exc
        if not isinstance(data, dict):
            raise TransientError(f"malformed response body: expected an object, got {type(data).__name__}")
        return data

    async def run(self, request: RunRequest) -> RunResult:
        started = time.perf_counter()
        data = await self.post_json(*self.build(request))
        try:
            text, input_tokens, output_tokens, model = self.parse(data)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise TransientError(f"malformed response body: missing {exc}") from exc
        from executors.schema import Usage

        model = model or request.model
        return RunResult(
            ok=True,
            output=text,
            usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            cost_usd=self.prices.cost(model, input_tokens, output_tokens),
            latency_ms=(time.perf_counter() - started) * 1000,
            model=model,
        )

    @abstractmethod
    def build(self, request: RunRequest) -> tuple[str, dict[str, Any], dict[str, str]]:
        """(url, body, headers) for one request."""

    @abstractmethod
    def parse(self, data: dict[str, Any]) -> tuple[str, int, int, str | None]:
        """(text, input tokens, output tokens, model id) from a response body."""

    async def aclose(self) -> None:
        for client in self._clients.values():
            with contextlib.suppress(RuntimeError):  # its event loop is gone already
                await client.aclose()
        self._clients.clear()


def _error_message(response: httpx.Response) -> str:
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
