"""Batch APIs for runs nobody waits on: the same calls at half price, answered within 24 hours.

Two protocols, one interface (``BatchClient``): ``submit`` a mapping of custom id -> RunRequest and
get a batch id, ``poll`` the batch id for its status, and once it has ended fetch ``results``
(custom id -> RunResult, priced at ``BATCH_PRICE_MULTIPLIER`` of the list price).

- Anthropic Message Batches: ``POST /v1/messages/batches`` with ``requests: [{custom_id, params}]``,
  ``GET /v1/messages/batches/{id}`` (``processing_status`` in_progress | canceling | ended), results
  as JSON lines from ``results_url``; each line's ``result.type`` is succeeded | errored | canceled |
  expired. Lines come in no particular order: they are matched by custom id.
- OpenAI Batch API: upload the requests as a JSONL file (``POST /v1/files``, purpose ``batch``),
  ``POST /v1/batches`` with ``input_file_id``, ``endpoint: /v1/chat/completions`` and
  ``completion_window: 24h``; ``GET /v1/batches/{id}`` (validating | in_progress | finalizing |
  completed | failed | expired | cancelling | cancelled); answers in ``output_file_id`` and failures
  in ``error_file_id``, both read with ``GET /v1/files/{id}/content``. One model per batch.

A failed item is data, as for a direct call: ``ok`` False with its reason. ``error_kind`` is
"permanent" for a request the provider rejected, "timeout" for an item the batch expired before
processing, "transient" for one canceled or failed on the provider's side (worth submitting again).

Resume (how a flow must use this, see ``tasks.store.batches.run_batches``): the batch id is persisted in
a ``BatchManifest`` (batch id, provider, endpoint, custom id -> unit cache key, created_at, status)
right after ``submit`` returns and before the first poll. A run that was killed loads the open
manifests, polls those batches again instead of resubmitting, and submits only the units no open
manifest covers (``uncovered``): a partly finished batch is never paid twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import Field

from executors.anthropic import AnthropicExecutor
from executors.base import Executor, HttpExecutor, json_of
from executors.errors import ExecutorError, TransientError, error_for_status
from executors.http_client import Reply
from executors.lean_httpx import httpx
from executors.openai import OpenAIExecutor
from executors.parsing import JsonObject, json_lines
from executors.schema import Frozen, RunRequest, RunResult

#: Both providers bill batch requests at half the list price (input and output alike; prompt-cache
#: prices are halved too).
BATCH_PRICE_MULTIPLIER = 0.5
#: Anthropic's rule for custom ids; OpenAI's is looser. A unit's cache key (64 hex digits) fits.
CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def custom_id_for(key: str) -> str:
    """A custom id both providers accept for a unit key: the key itself when it fits, else its hash."""
    return key if CUSTOM_ID.match(key) else hashlib.sha256(key.encode()).hexdigest()


class BatchStatus(Frozen):
    batch_id: str
    status: str = Field(description="the provider's own word for the batch's state")
    ended: bool = Field(description="no further progress: whatever results there are can be fetched")
    counts: dict[str, int] = Field(default_factory=dict)


class BatchManifest(Frozen):
    """What a flow persists in its result cache folder for each submitted batch, before polling."""

    batch_id: str
    provider: str = Field(description="'anthropic' | 'openai'")
    endpoint: str = Field(description="the API base URL: a batch id means nothing on another server")
    items: dict[str, str] = Field(description="custom id -> unit cache key")
    created_at: str = Field(description="ISO 8601, UTC")
    status: str = Field(
        default="submitted",
        description="submitted, then the provider's last status; 'collected' once every result is stored",
    )

    @property
    def open(self) -> bool:
        """Still owed results: its units must not be submitted again."""
        return self.status != "collected"

    @classmethod
    def new(cls, batch_id: str, provider: str, endpoint: str, items: Mapping[str, str]) -> BatchManifest:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return cls(batch_id=batch_id, provider=provider, endpoint=endpoint, items=dict(items), created_at=now)


def uncovered(keys: Iterable[str], manifests: Iterable[BatchManifest]) -> list[str]:
    """The unit keys no open manifest covers, in order, each once: the only ones to submit."""
    covered = {key for m in manifests if m.open for key in m.items.values()}
    out: list[str] = []
    for key in keys:
        if key not in covered:
            covered.add(key)
            out.append(key)
    return out


def chunks(sizes: Sequence[int], max_items: int, max_bytes: int) -> list[range]:
    """Consecutive index ranges that each stay within a provider's per-batch limits."""
    out: list[range] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        if i > start and (i - start >= max_items or total + size > max_bytes):
            out.append(range(start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


def failed_item(message: str, kind: str, model: str = "") -> RunResult:
    return RunResult(
        ok=False, error=message, error_kind=kind, model=model, price_multiplier=BATCH_PRICE_MULTIPLIER
    )


class BatchClient(ABC):
    """One provider's batch protocol, on top of that provider's executor (its URL, key, request
    bodies, response parsing and prices)."""

    provider: ClassVar[str]
    max_items: ClassVar[int]
    max_bytes: ClassVar[int]
    #: the batch object's field that tells its state, and the states in which it has ended
    status_field: ClassVar[str]
    ended_states: ClassVar[frozenset[str]]

    def __init__(self, executor: HttpExecutor, *, retries: int = 3, backoff_s: float = 1.0) -> None:
        self.executor = executor
        self.retries = retries
        self.backoff_s = backoff_s

    @property
    def endpoint(self) -> str:
        return self.executor.base_url

    def body(self, request: RunRequest) -> JsonObject:
        """The request body a direct call would send (a batch item carries exactly that)."""
        return self.executor.build(request)[1]

    @abstractmethod
    async def submit(self, items: Mapping[str, RunRequest]) -> str:
        """Create one batch of ``custom id -> request``; its id. Not retried: a create that timed
        out may still have created a batch, and a second one would be paid again."""

    @abstractmethod
    def batch_url(self, batch_id: str) -> str:
        """Where the batch object is read."""

    async def _batch(self, batch_id: str) -> JsonObject:
        data = json_of(await self.get(self.batch_url(batch_id)))
        if self.status_field not in data:
            raise TransientError(f"malformed batch object for {batch_id}")
        return data

    async def poll(self, batch_id: str) -> BatchStatus:
        data = await self._batch(batch_id)
        counts = {k: int(v) for k, v in (data.get("request_counts") or {}).items()}
        status = str(data[self.status_field])
        return BatchStatus(batch_id=batch_id, status=status, ended=status in self.ended_states, counts=counts)

    @abstractmethod
    async def results(self, batch_id: str, expected: Iterable[str] = ()) -> dict[str, RunResult]:
        """custom id -> RunResult for an ended batch; an ``expected`` id the batch has no line for
        is a failed item ("no result")."""

    async def wait(
        self, batch_id: str, *, interval_s: float = 60.0, max_polls: int | None = None
    ) -> BatchStatus:
        """Poll until the batch has ended (or ``max_polls`` polls were made)."""
        polls = 0
        while True:
            status = await self.poll(batch_id)
            polls += 1
            if status.ended or (max_polls is not None and polls >= max_polls):
                return status
            await asyncio.sleep(interval_s)

    async def get(self, url: str) -> httpx.Response | Reply:
        """A GET, retried on transient failures (polls and result downloads are idempotent)."""
        for attempt in range(self.retries + 1):
            try:
                return await self.executor.send("GET", url, self.headers())
            except TransientError as exc:
                if attempt == self.retries:
                    raise
                delay = self.backoff_s * 2**attempt * (1 + random.random() * 0.5)
                await asyncio.sleep(max(delay, min(exc.retry_after or 0.0, 120.0)))
        raise AssertionError("unreachable")

    def headers(self) -> dict[str, str]:
        return self.executor.headers()

    def answer(self, body: JsonObject, model: str = "") -> RunResult:
        """A succeeded item's response body as a RunResult at the batch price; latency is not
        measured in a batch (0)."""
        try:
            return self.executor.result_from(body, model, latency_ms=0.0, multiplier=BATCH_PRICE_MULTIPLIER)
        except ExecutorError as exc:
            return failed_item(str(exc), exc.kind, model)


def _missing(results: dict[str, RunResult], expected: Iterable[str], why: str) -> dict[str, RunResult]:
    for cid in expected:
        results.setdefault(cid, failed_item(f"batch item has no result ({why})", "transient"))
    return results


# Anthropic error types a resubmission cannot fix; anything else (api_error, overloaded_error,
# rate_limit_error) is the provider's side.
ANTHROPIC_PERMANENT = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "billing_error",
    }
)


class AnthropicBatchClient(BatchClient):
    provider = "anthropic"
    max_items = 100_000
    max_bytes = 256 * 1024 * 1024
    status_field = "processing_status"
    ended_states = frozenset({"ended"})

    def _url(self, *parts: str) -> str:
        return "/".join([f"{self.endpoint}/v1/messages/batches", *parts])

    async def submit(self, items: Mapping[str, RunRequest]) -> str:
        _check_ids(items)
        requests = [{"custom_id": cid, "params": self.body(request)} for cid, request in items.items()]
        response = await self.executor.send("POST", self._url(), self.headers(), json={"requests": requests})
        return str(json_of(response)["id"])

    def batch_url(self, batch_id: str) -> str:
        return self._url(batch_id)

    async def results(self, batch_id: str, expected: Iterable[str] = ()) -> dict[str, RunResult]:
        data = await self._batch(batch_id)
        if data["processing_status"] != "ended":
            raise TransientError(f"batch {batch_id} has not ended ({data['processing_status']})")
        url = str(data.get("results_url") or "")
        # The key goes only to the server it belongs to: any other results_url is replaced by the
        # documented path on our own endpoint.
        if not url or urlsplit(url)[:2] != urlsplit(self.endpoint)[:2]:
            url = self._url(batch_id, "results")
        out: dict[str, RunResult] = {}
        for line in json_lines((await self.get(url)).text):
            cid, result = line.get("custom_id"), line.get("result") or {}
            if isinstance(cid, str):
                out[cid] = self._item(result)
        return _missing(out, expected, "not in the batch's results")

    def _item(self, result: JsonObject) -> RunResult:
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return self.answer(result["message"])
        if kind == "errored":
            error = (result.get("error") or {}).get("error") or result.get("error") or {}
            etype = str(error.get("type") or "error")
            return failed_item(
                f"batch item errored: {etype}: {error.get('message') or ''}".rstrip(": "),
                "permanent" if etype in ANTHROPIC_PERMANENT else "transient",
            )
        if kind == "expired":
            return failed_item("batch expired before this item was processed", "timeout")
        if kind == "canceled":
            return failed_item("batch item canceled", "transient")
        return failed_item(f"batch item with an unknown result type {kind!r}", "transient")


OPENAI_ENDPOINT = "/v1/chat/completions"
OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatchClient(BatchClient):
    provider = "openai"
    max_items = 50_000
    max_bytes = 200 * 1024 * 1024
    status_field = "status"
    ended_states = OPENAI_ENDED

    async def submit(self, items: Mapping[str, RunRequest]) -> str:
        _check_ids(items)
        models = {request.model for request in items.values()}
        if len(models) > 1:
            raise ValueError(f"an OpenAI batch holds one model, got {sorted(models)}")
        lines = [
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": OPENAI_ENDPOINT, "body": self.body(request)}
            )
            for cid, request in items.items()
        ]
        upload = await self.executor.send(
            "POST",
            f"{self.endpoint}/files",
            self.headers(),
            data={"purpose": "batch"},
            files={"file": ("skillab-batch.jsonl", ("\n".join(lines) + "\n").encode(), "application/jsonl")},
        )
        created = await self.executor.send(
            "POST",
            f"{self.endpoint}/batches",
            self.headers(),
            json={
                "input_file_id": json_of(upload)["id"],
                "endpoint": OPENAI_ENDPOINT,
                "completion_window": "24h",
            },
        )
        return str(json_of(created)["id"])

    def batch_url(self, batch_id: str) -> str:
        return f"{self.endpoint}/batches/{batch_id}"

    async def results(self, batch_id: str, expected: Iterable[str] = ()) -> dict[str, RunResult]:
        data = await self._batch(batch_id)
        status = str(data["status"])
        if status not in OPENAI_ENDED:
            raise TransientError(f"batch {batch_id} has not ended ({status})")
        out: dict[str, RunResult] = {}
        if status == "failed":  # the input was rejected as a whole: nothing ran, nothing is billed
            errors = (data.get("errors") or {}).get("data") or []
            reason = "; ".join(str(e.get("message") or e.get("code")) for e in errors) or "batch failed"
            for expected_id in expected:
                out[expected_id] = failed_item(f"batch failed validation: {reason}", "permanent")
            return out
        for file_id in (data.get("output_file_id"), data.get("error_file_id")):
            if file_id:
                for line in json_lines((await self.get(f"{self.endpoint}/files/{file_id}/content")).text):
                    cid = line.get("custom_id")
                    if isinstance(cid, str):
                        out[cid] = self._item(line)
        why = "the batch expired" if status == "expired" else f"batch {status}"
        return _missing(out, expected, why)

    def _item(self, line: JsonObject) -> RunResult:
        response, error = line.get("response") or {}, line.get("error") or {}
        if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
            return self.answer(response["body"])
        if error:
            code = str(error.get("code") or "error")
            kind = "timeout" if code == "batch_expired" else "transient"
            return failed_item(f"batch item failed: {code}: {error.get('message') or ''}".rstrip(": "), kind)
        body = response.get("body") or {}
        message = str((body.get("error") or {}).get("message") or body or "no response")
        exc = error_for_status(int(response.get("status_code") or 500), message)
        return failed_item(f"batch item failed: {exc}", exc.kind)


def _check_ids(items: Mapping[str, RunRequest]) -> None:
    if not items:
        raise ValueError("a batch needs at least one request")
    bad = next((cid for cid in items if not CUSTOM_ID.match(cid)), None)
    if bad is not None:
        raise ValueError(f"custom id {bad!r} is not 1-64 characters of [A-Za-z0-9_-]")


BATCH_CLIENTS: dict[type[HttpExecutor], type[BatchClient]] = {
    AnthropicExecutor: AnthropicBatchClient,
    OpenAIExecutor: OpenAIBatchClient,
}


def batch_client(executor: Executor, **kwargs: Any) -> BatchClient | None:
    """The batch client for an executor's provider, or None where there is no batch API
    (Gemini's is not implemented; local models and agent CLIs have none)."""
    for executor_type, client_type in BATCH_CLIENTS.items():
        if isinstance(executor, executor_type):
            return client_type(executor, **kwargs)
    return None
