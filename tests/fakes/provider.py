"""A scripted model server on 127.0.0.1 speaking the OpenAI, Anthropic and Gemini protocols.

Real HTTP, real sockets: the executors under test cannot tell it from a provider; or, for a unit
test, the same app in process (``transport()``). Tests script
faults (status codes with headers, slow replies, malformed bodies, dropped connections) and read
back every call it received.

Prompt caching: a Messages request whose system block carries ``cache_control`` writes the system
prompt to a per-model cache (``cache_creation_input_tokens``) and later ones read it
(``cache_read_input_tokens``). OpenAI's and Gemini's implicit caching is off unless
``implicit_cache_min`` is set: then a system prompt of at least that many tokens (words, here) seen
before comes back as ``cached_tokens`` / ``cachedContentTokenCount``.

Batch APIs: Anthropic's Message Batches and OpenAI's Files + Batches, see ``FakeBatch``. Items
complete over ``batch_polls`` retrievals; ``batch_expire_after`` ends a batch as expired after that
many; ``batch_item_error(prompt)`` makes an item fail. ``batches`` holds every submission.
"""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import hashlib
import itertools
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from executors.listing import SESSION_HEADER, skill_listing, text_blocks

if TYPE_CHECKING:  # the stub also runs as a program, where pytest may be absent
    import pytest


@dataclass
class Fault:
    """What the server does instead of answering: ``status`` (with headers/body), ``delay`` seconds
    before anything, ``malformed`` 200 body, or ``drop`` the connection without a reply."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    delay: float = 0.0
    malformed: bool = False
    drop: bool = False


@dataclass
class Call:
    protocol: str
    path: str
    body: dict[str, Any]
    system: str
    prompt: str
    t: float
    #: the credential headers the request came with (the model forwarder's key, for one)
    auth: dict[str, str] = field(default_factory=dict)


def _auth(request: Request) -> dict[str, str]:
    names = ("x-api-key", "authorization", "x-goog-api-key")
    return {k: request.headers[k] for k in names if k in request.headers}


def default_answer(system: str, prompt: str) -> str:
    return f"echo: {prompt}"


@dataclass
class FakeBatch:
    """One submitted batch. ``items`` are (custom_id, request body); ``lines`` the result line of
    each item once processed (Anthropic: a results line; OpenAI: an output or error file line)."""

    id: str
    protocol: str  # "anthropic" | "openai"
    items: list[tuple[str, dict[str, Any]]]
    created: float
    endpoint: str = ""
    input_file_id: str = ""
    polls: int = 0
    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: bool = False
    expired: bool = False
    failed: list[dict[str, Any]] = field(default_factory=list)  # OpenAI validation errors
    finalizing_seen: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def custom_ids(self) -> list[str]:
        return [cid for cid, _ in self.items]


HOLD_S = 120.0


class FakeProvider:
    def __init__(
        self,
        answer: Callable[..., str] = default_answer,
        *,
        delay: float = 0.0,
        faults: list[Fault] | None = None,
        fault_for: Callable[[Call], Fault | None] | None = None,
        agent: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None,
        claude_agent: Callable[[dict[str, Any], Mapping[str, str]], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.answer = answer
        self.delay = delay
        self.faults = list(faults or [])
        self.fault_for = fault_for
        self.agent = agent  # streaming Messages requests (agent CLIs): body -> content blocks
        # The same with the request's headers (Claude Code sends its session id in one): see SkillScript.
        self.claude_agent = claude_agent
        self.gemini_agent: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        self.responses_agent: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        # Streaming chat completions (OpenCode): body -> items, {"text": ...} or {"tool": name, "arguments": {...}}
        self.chat_agent: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        # The model id a response reports for the one asked for: a provider moving an alias to a new model.
        self.answered_as: dict[str, str] = {}
        self.calls: list[Call] = []
        self.lock = threading.RLock()  # re-entered while a batch retrieval processes items
        self.implicit_cache_min: int | None = None  # OpenAI/Gemini implicit caching: off
        self.prompt_cache: set[tuple[str, str, str]] = set()  # (protocol, model, system) cached
        self.batch_polls = 3
        self.batch_expire_after: int | None = None
        self.batch_item_error: Callable[[str], str | None] | None = None
        self.batches: dict[str, FakeBatch] = {}
        self.files: dict[str, bytes] = {}
        self._ids = itertools.count(1)
        self.active = self.peak = 0  # requests being answered now, and the most at once
        # A request is not answered while this says so (for at most HOLD_S): a test makes the server
        # wait for what it does meanwhile (freeze a container, stop a server) instead of racing it.
        self.held: Callable[[Call], bool] | None = None
        self.port = _free_port()
        self.app = app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/", self._root, methods=["GET", "HEAD"]),
                Route("/v1beta/models/{model:path}", self._gemini, methods=["POST"]),
                Route("/v1/messages/batches", self._anthropic_batch_create, methods=["POST"]),
                Route("/v1/messages/batches/{batch_id}", self._anthropic_batch_get, methods=["GET"]),
                Route(
                    "/v1/messages/batches/{batch_id}/results", self._anthropic_batch_results, methods=["GET"]
                ),
                Route("/v1/files", self._file_upload, methods=["POST"]),
                Route("/v1/files/{file_id}/content", self._file_content, methods=["GET"]),
                Route("/v1/batches", self._openai_batch_create, methods=["POST"]),
                Route("/v1/batches/{batch_id}", self._openai_batch_get, methods=["GET"]),
            ]
        )
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="error",
            lifespan="off",
            backlog=2048,
            timeout_keep_alive=30,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    # ------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def transport(self) -> httpx.AsyncBaseTransport:
        """The same server without a socket: an executor given it (``ExecutorSettings.transport``)
        is answered in process, for a unit test that needs no server started."""
        return httpx.ASGITransport(app=self.app)

    def start(self) -> FakeProvider:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake provider did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def anthropic_env(self, monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
        """Point the test's Anthropic clients and agent CLIs here, with a test key (set before the start:
        the port is chosen already)."""
        monkeypatch.setenv("ANTHROPIC_BASE_URL", self.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def count(self, predicate: Callable[[Call], bool] = lambda c: True) -> int:
        with self.lock:
            return sum(1 for c in self.calls if predicate(c))

    # ------------------------------------------------------------ handling

    def reply(self, system: str, prompt: str, model: str) -> str:
        """The scripted answer: ``answer(system, prompt)``, or ``answer(system, prompt, model)``."""
        import inspect

        if len(inspect.signature(self.answer).parameters) >= 3:
            return self.answer(system, prompt, model)
        return self.answer(system, prompt)

    async def _fault(self, call: Call) -> Response | None:
        with self.lock:
            self.calls.append(call)
            self.active += 1
            self.peak = max(self.peak, self.active)
            fault = self.faults.pop(0) if self.faults else None
        try:
            return await self._scripted(call, fault)
        finally:
            with self.lock:
                self.active -= 1

    async def _scripted(self, call: Call, fault: Fault | None) -> Response | None:
        while self.held is not None and self.held(call) and time.time() - call.t < HOLD_S:
            await asyncio.sleep(0.05)
        if fault is None and self.fault_for is not None:
            fault = self.fault_for(call)
        if fault is None:
            if self.delay:
                await asyncio.sleep(self.delay)
            return None
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.drop:
            # Declares more bytes than it sends: the connection closes mid-body, as on a reset.
            return Response(
                '{"choices": [',
                status_code=200,
                media_type="application/json",
                headers={"content-length": "4096"},
            )
        if fault.status is not None:
            return Response(
                fault.body or json.dumps({"error": {"message": f"scripted {fault.status}"}}),
                status_code=fault.status,
                headers=fault.headers,
                media_type="application/json",
            )
        if fault.malformed:
            return Response(fault.body or '{"choices": [', status_code=200, media_type="application/json")
        return None

    async def _openai(self, request: Request) -> Response:
        body = await request.json()
        system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
        prompt = body["messages"][-1]["content"]
        fault = await self._fault(
            Call("openai", request.url.path, body, system, prompt, time.time(), _auth(request))
        )
        if fault is not None:
            return fault
        if body.get("stream"):
            return self._chat_stream(body, system, str(prompt))
        return JSONResponse(self._completion(body, system, prompt))

    def _chat_stream(self, body: dict[str, Any], system: str, prompt: str) -> Response:
        """Chat completions as server-sent chunks, as OpenAI-compatible clients stream them: text
        deltas, or tool calls whose arguments come in pieces, then the usage, then [DONE]."""
        items = (
            self.chat_agent(body)
            if self.chat_agent
            else [{"text": self.reply(system, prompt, body["model"])}]
        )
        cid = f"chatcmpl-{len(self.calls)}"

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> str:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "model": self.reported(body),
                "choices": choices,
            }
            return f"data: {json.dumps(data | extra)}\n\n"

        parts = [chunk({"role": "assistant", "content": ""})]
        calls = [i for i in items if "tool" in i]
        for item in items:
            if "text" in item:
                parts.append(chunk({"content": item["text"]}))
        for index, item in enumerate(calls):
            arguments = json.dumps(item.get("arguments") or {})
            call = {"index": index, "id": f"call_{len(self.calls)}_{index}", "type": "function"}
            parts.append(
                chunk({"tool_calls": [call | {"function": {"name": item["tool"], "arguments": ""}}]})
            )
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                parts.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        parts.append(chunk({}, "tool_calls" if calls else "stop"))
        tokens = len(json.dumps(body)) // 4
        usage = {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}
        parts += [chunk(None, usage=usage), "data: [DONE]\n\n"]
        return Response("".join(parts), media_type="text/event-stream")

    def reported(self, body: dict[str, Any]) -> str:
        """The model id a response names: the one asked for, unless ``answered_as`` moved its alias."""
        return self.answered_as.get(body["model"], body["model"])

    def _completion(self, body: dict[str, Any], system: str, prompt: str) -> dict[str, Any]:
        text = self.reply(system, prompt, body["model"])
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": self.reported(body),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": len((system + prompt).split()),
                "completion_tokens": len(text.split()),
                "total_tokens": len((system + prompt).split()) + len(text.split()),
                "prompt_tokens_details": {
                    "cached_tokens": self._implicit_cached("openai", body["model"], system)
                },
            },
        }

    def _implicit_cached(self, protocol: str, model: str, system: str) -> int:
        """Tokens of ``system`` served from an implicit cache: all of them once seen, if long enough."""
        tokens = len(system.split())
        if self.implicit_cache_min is None or not system or tokens < self.implicit_cache_min:
            return 0
        key = (protocol, model, system)
        with self.lock:
            hit = key in self.prompt_cache
            self.prompt_cache.add(key)
        return tokens if hit else 0

    async def _root(self, request: Request) -> Response:
        return Response("ok")

    async def _count_tokens(self, request: Request) -> Response:
        body = await request.body()
        return JSONResponse({"input_tokens": max(1, len(body) // 4)})

    async def _anthropic(self, request: Request) -> Response:
        body = await request.json()
        if body.get("stream"):
            return await self._anthropic_stream(request, body)
        system, prompt = anthropic_text(body)
        fault = await self._fault(
            Call("anthropic", request.url.path, body, system, prompt, time.time(), _auth(request))
        )
        if fault is not None:
            return fault
        return JSONResponse(self._message(body, system, prompt))

    def _message(self, body: dict[str, Any], system: str, prompt: str) -> dict[str, Any]:
        text = self.reply(system, prompt, body["model"])
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": self.reported(body),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": self._anthropic_usage(body, system, prompt) | {"output_tokens": len(text.split())},
        }

    def _anthropic_usage(self, body: dict[str, Any], system: str, prompt: str) -> dict[str, int]:
        """Messages usage: a system block marked with cache_control is written to the cache on first
        sight and read afterwards; input_tokens is then what was neither written nor read."""
        marked = isinstance(body.get("system"), list) and any(
            isinstance(b, dict) and b.get("cache_control") for b in body["system"]
        )
        if not marked:
            return {"input_tokens": len((system + prompt).split())}
        key = ("anthropic", body["model"], system)
        with self.lock:
            hit = key in self.prompt_cache
            self.prompt_cache.add(key)
        tokens = len(system.split())
        return {
            "input_tokens": len(prompt.split()),
            "cache_creation_input_tokens": 0 if hit else tokens,
            "cache_read_input_tokens": tokens if hit else 0,
        }

    async def _anthropic_stream(self, request: Request, body: dict[str, Any]) -> Response:
        """Server-sent events of the Messages API, as Claude Code expects them."""
        system, prompt = anthropic_text(body)
        fault = await self._fault(
            Call("anthropic", request.url.path, body, system, prompt, time.time(), _auth(request))
        )
        if fault is not None:
            return fault
        blocks = (
            self.claude_agent(body, request.headers)
            if self.claude_agent
            else self.agent(body)
            if self.agent
            else [{"type": "text", "text": self.reply(system, prompt, body["model"])}]
        )
        events = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": f"msg_{len(self.calls)}",
                        "type": "message",
                        "role": "assistant",
                        "model": self.reported(body),
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 1},
                    },
                },
            )
        ]
        for i, block in enumerate(blocks):
            start: dict[str, Any]
            delta: dict[str, Any]
            if block["type"] == "tool_use":
                start = {
                    "type": "tool_use",
                    "id": block.get("id") or f"toolu_{len(self.calls)}_{i}",
                    "name": block["name"],
                    "input": {},
                }
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            block_events: list[tuple[str, dict[str, Any]]] = [
                ("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": i}),
            ]
            events += block_events
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 20},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        return Response(payload, media_type="text/event-stream")

    async def _responses(self, request: Request) -> Response:
        """The Responses API as a stream of server-sent events, as the Codex CLI expects it.
        ``responses_agent(body)`` gives output items (messages or function calls)."""
        body = await request.json()
        items_in = body.get("input") or []
        last = next((i for i in reversed(items_in) if isinstance(i, dict) and i.get("role") == "user"), {})
        content = last.get("content")
        prompt = (
            content
            if isinstance(content, str)
            else " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
        )
        system = str(body.get("instructions") or "")
        fault = await self._fault(
            Call("responses", request.url.path, body, system, prompt, time.time(), _auth(request))
        )
        if fault is not None:
            return fault
        items = (
            self.responses_agent(body)
            if self.responses_agent
            else [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": self.reply(system, prompt, body["model"])}],
                }
            ]
        )
        rid = f"resp_{len(self.calls)}"
        events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid}}]
        for i, item in enumerate(items):
            item = {"id": f"item_{rid}_{i}", "status": "completed", **item}
            events.append({"type": "response.output_item.done", "output_index": i, "item": item})
        events.append(
            {
                "type": "response.completed",
                "response": {
                    "id": rid,
                    "usage": {
                        "input_tokens": len(json.dumps(body)) // 4,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 12,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": len(json.dumps(body)) // 4 + 12,
                    },
                },
            }
        )
        payload = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return Response(payload, media_type="text/event-stream")

    async def _gemini_stream(self, request: Request, body: dict[str, Any]) -> Response:
        """streamGenerateContent?alt=sse, as the Gemini CLI expects it. ``gemini_agent(body)`` gives parts."""
        system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
        prompt = " ".join(p.get("text", "") for p in body["contents"][-1].get("parts", []) if "text" in p)
        fault = await self._fault(
            Call("gemini", request.url.path, body, system, prompt, time.time(), _auth(request))
        )
        if fault is not None:
            return fault
        model = request.path_params["model"].split(":")[0]
        parts = (
            self.gemini_agent(body) if self.gemini_agent else [{"text": self.reply(system, prompt, model)}]
        )
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": len(json.dumps(body)) // 4,
                "candidatesTokenCount": 10,
                "totalTokenCount": len(json.dumps(body)) // 4 + 10,
            },
            "modelVersion": model,
        }
        return Response(f"data: {json.dumps(chunk)}\r\n\r\n", media_type="text/event-stream")

    async def _gemini(self, request: Request) -> Response:
        body = await request.json()
        if request.path_params["model"].endswith(":streamGenerateContent"):
            return await self._gemini_stream(request, body)
        system = " ".join(p["text"] for p in (body.get("systemInstruction") or {}).get("parts", []))
        prompt = " ".join(p["text"] for p in body["contents"][-1]["parts"])
        fault = await self._fault(
            Call("gemini", request.url.path, body, system, prompt, time.time(), _auth(request))
        )
        if fault is not None:
            return fault
        model = request.path_params["model"].split(":")[0]
        text = self.reply(system, prompt, model)
        usage = {
            "promptTokenCount": len((system + prompt).split()),
            "candidatesTokenCount": len(text.split()),
        }
        cached = self._implicit_cached("gemini", model, system)
        if cached:  # the API leaves the field out when nothing was cached
            usage["cachedContentTokenCount"] = cached
        return JSONResponse(
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
                ],
                "usageMetadata": usage,
                "modelVersion": model,
            }
        )

    # ------------------------------------------------------------ batch APIs

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    async def _batch_call(self, request: Request, body: dict[str, Any] | None = None) -> Response | None:
        """Batch API requests are recorded (protocol "batch-api") and take scripted faults too."""
        return await self._fault(Call("batch-api", request.url.path, body or {}, "", "", time.time()))

    def _advance(self, batch: FakeBatch) -> None:
        """One retrieval: process the items due by now, or end the batch as expired."""
        batch.polls += 1
        if batch.ended or batch.failed:
            return
        if self.batch_expire_after is not None and batch.polls >= self.batch_expire_after:
            for cid, _ in batch.items:
                if cid not in batch.lines:
                    batch.lines[cid] = self._expired_line(batch, cid)
            batch.ended = batch.expired = True
            return
        due = min(len(batch.items), math.ceil(len(batch.items) * batch.polls / max(1, self.batch_polls)))
        for cid, params in batch.items[:due]:
            if cid not in batch.lines:
                batch.lines[cid] = self._process(batch, cid, params)
        batch.ended = len(batch.lines) == len(batch.items)

    def _process(self, batch: FakeBatch, cid: str, params: dict[str, Any]) -> dict[str, Any]:
        if batch.protocol == "anthropic":
            system, prompt = anthropic_text(params)
        else:
            system = " ".join(m["content"] for m in params["messages"] if m["role"] == "system")
            prompt = params["messages"][-1]["content"]
        with self.lock:
            self.calls.append(
                Call(f"{batch.protocol}-batch-item", batch.id, params, system, prompt, time.time())
            )
        error = self.batch_item_error(prompt) if self.batch_item_error else None
        if batch.protocol == "anthropic":
            if error:
                failure = {"type": "invalid_request_error", "message": error}
                return {
                    "custom_id": cid,
                    "result": {"type": "errored", "error": {"type": "error", "error": failure}},
                }
            message = self._message(params, system, prompt)
            return {"custom_id": cid, "result": {"type": "succeeded", "message": message}}
        line_id = self._new_id("batch_req_")
        if error:
            response = {
                "status_code": 400,
                "request_id": line_id,
                "body": {"error": {"message": error, "type": "invalid_request_error"}},
            }
            return {"id": line_id, "custom_id": cid, "response": response, "error": None}
        completion = self._completion(params, system, prompt)
        return {
            "id": line_id,
            "custom_id": cid,
            "response": {"status_code": 200, "request_id": line_id, "body": completion},
            "error": None,
        }

    def _expired_line(self, batch: FakeBatch, cid: str) -> dict[str, Any]:
        if batch.protocol == "anthropic":
            return {"custom_id": cid, "result": {"type": "expired"}}
        message = "This request could not be executed before the completion window expired."
        return {
            "id": self._new_id("batch_req_"),
            "custom_id": cid,
            "response": None,
            "error": {"code": "batch_expired", "message": message},
        }

    # Anthropic Message Batches

    def _anthropic_batch(self, batch: FakeBatch) -> dict[str, Any]:
        kinds = [line["result"]["type"] for line in batch.lines.values()]
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created))
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if batch.ended else "in_progress",
            "request_counts": {
                "processing": len(batch.items) - len(kinds),
                "succeeded": kinds.count("succeeded"),
                "errored": kinds.count("errored"),
                "canceled": kinds.count("canceled"),
                "expired": kinds.count("expired"),
            },
            "created_at": created,
            "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created + 86400)),
            "ended_at": created if batch.ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if batch.ended else None,
        }

    async def _anthropic_batch_create(self, request: Request) -> Response:
        body = await request.json()
        fault = await self._batch_call(request, body)
        if fault is not None:
            return fault
        requests = body.get("requests") or []
        ids = [r.get("custom_id") for r in requests]
        if not requests or len(set(ids)) != len(ids):
            return JSONResponse(
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "custom_id not unique"},
                },
                status_code=400,
            )
        batch = FakeBatch(
            self._new_id("msgbatch_"),
            "anthropic",
            [(r["custom_id"], r["params"]) for r in requests],
            time.time(),
        )
        with self.lock:
            self.batches[batch.id] = batch
        return JSONResponse(self._anthropic_batch(batch))

    async def _batch_asked(self, request: Request, protocol: str, advance: bool) -> FakeBatch | Response:
        """The batch a request names (a fault or a 404 as the response instead), advanced by a poll."""
        fault = await self._batch_call(request)
        if fault is not None:
            return fault
        batch_id = request.path_params["batch_id"]
        batch = self.batches.get(batch_id)
        if batch is None or batch.protocol != protocol:
            return JSONResponse({"error": {"message": f"no batch {batch_id}"}}, status_code=404)
        if advance:
            with self.lock:
                self._advance(batch)
        return batch

    async def _anthropic_batch_get(self, request: Request) -> Response:
        batch = await self._batch_asked(request, "anthropic", advance=True)
        if isinstance(batch, Response):
            return batch
        return JSONResponse(self._anthropic_batch(batch))

    async def _anthropic_batch_results(self, request: Request) -> Response:
        batch = await self._batch_asked(request, "anthropic", advance=False)
        if isinstance(batch, Response):
            return batch
        if not batch.ended:
            return JSONResponse({"error": {"message": "batch still in progress"}}, status_code=400)
        # Results come in no particular order: reversed, so a client relying on order would fail.
        text = "".join(json.dumps(line) + "\n" for line in reversed(list(batch.lines.values())))
        return Response(text, media_type="application/binary")

    # OpenAI Files + Batches

    async def _file_upload(self, request: Request) -> Response:
        raw = await request.body()
        fault = await self._batch_call(request)
        if fault is not None:
            return fault
        header = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(header + raw)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            fields[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
        if "file" not in fields or fields.get("purpose", (None, b""))[1] != b"batch":
            return JSONResponse({"error": {"message": "need a file and purpose=batch"}}, status_code=400)
        file_id = self._new_id("file-")
        with self.lock:
            self.files[file_id] = fields["file"][1]
        return JSONResponse(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(fields["file"][1]),
                "created_at": int(time.time()),
                "filename": fields["file"][0] or "upload.jsonl",
                "purpose": "batch",
            }
        )

    async def _file_content(self, request: Request) -> Response:
        fault = await self._batch_call(request)
        if fault is not None:
            return fault
        data = self.files.get(request.path_params["file_id"])
        if data is None:
            return JSONResponse({"error": {"message": "no such file"}}, status_code=404)
        return Response(data, media_type="application/octet-stream")

    def _openai_batch(self, batch: FakeBatch) -> dict[str, Any]:
        if batch.failed:
            status = "failed" if batch.polls else "validating"
        elif batch.expired:
            status = "expired"
        elif batch.ended and batch.finalizing_seen:
            status = "completed"
        elif batch.ended:
            status, batch.finalizing_seen = "finalizing", True
        else:
            status = "in_progress" if batch.polls else "validating"
        if (
            status in ("completed", "expired")
            and batch.output_file_id is None
            and batch.error_file_id is None
        ):
            good = [
                line
                for line in batch.lines.values()
                if (line.get("response") or {}).get("status_code") == 200
            ]
            bad = [line for line in batch.lines.values() if line not in good]
            if good:
                batch.output_file_id = self._new_id("file-")
                self.files[batch.output_file_id] = "".join(json.dumps(x) + "\n" for x in good).encode()
            if bad:
                batch.error_file_id = self._new_id("file-")
                self.files[batch.error_file_id] = "".join(json.dumps(x) + "\n" for x in bad).encode()
        done = len(batch.lines)
        failed = sum(
            1 for line in batch.lines.values() if (line.get("response") or {}).get("status_code") != 200
        )
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": int(batch.created),
            "errors": {"object": "list", "data": batch.failed} if batch.failed else None,
            "request_counts": {"total": len(batch.items), "completed": done - failed, "failed": failed},
        }

    async def _openai_batch_create(self, request: Request) -> Response:
        body = await request.json()
        fault = await self._batch_call(request, body)
        if fault is not None:
            return fault
        data = self.files.get(str(body.get("input_file_id")))
        if data is None or body.get("completion_window") != "24h":
            return JSONResponse(
                {"error": {"message": "bad input_file_id or completion_window"}}, status_code=400
            )
        items: list[tuple[str, dict[str, Any]]] = []
        failed: list[dict[str, Any]] = []
        for number, line in enumerate(data.decode().splitlines(), start=1):
            entry = json.loads(line)
            if entry.get("url") != body.get("endpoint") or entry.get("method") != "POST":
                failed.append(
                    {"code": "invalid_request", "message": "url does not match endpoint", "line": number}
                )
            items.append((entry["custom_id"], entry["body"]))
        if len({m for _, b in items for m in [b.get("model")]}) > 1:
            failed.append({"code": "invalid_request", "message": "one model per batch", "line": None})
        batch = FakeBatch(
            self._new_id("batch_"),
            "openai",
            items,
            time.time(),
            endpoint=str(body.get("endpoint")),
            input_file_id=str(body["input_file_id"]),
            failed=failed,
        )
        with self.lock:
            self.batches[batch.id] = batch
        return JSONResponse(self._openai_batch(batch))

    async def _openai_batch_get(self, request: Request) -> Response:
        batch = await self._batch_asked(request, "openai", advance=True)
        if isinstance(batch, Response):
            return batch
        with self.lock:
            return JSONResponse(self._openai_batch(batch))


def anthropic_text(body: dict[str, Any]) -> tuple[str, str]:
    """(system text, last user turn) of a Messages request. Claude Code may end the messages with
    a role "system" message, so the prompt is the last user turn, not the last message."""
    system = body.get("system") or ""
    if isinstance(system, list):
        system = " ".join(b.get("text", "") for b in system if isinstance(b, dict))
    content = next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"]
    prompt = (
        content
        if isinstance(content, str)
        else " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    )
    return str(system), prompt


# ------------------------------------------------------------ scripted skill triggering (Claude Code)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a Messages request carries, in order, each as text."""
    return [
        b["content"] if isinstance(b.get("content"), str) else json.dumps(b.get("content"))
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def session_id(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> str:
    """Claude Code's session id: the X-Claude-Code-Session-Id header, else metadata.user_id's JSON."""
    if headers is not None and headers.get(SESSION_HEADER):
        return str(headers[SESSION_HEADER])
    raw = (body.get("metadata") or {}).get("user_id")
    try:
        data = json.loads(raw) if isinstance(raw, str) else {}
    except json.JSONDecodeError:
        data = {}
    return str(data.get("session_id") or raw or "")


def user_query(body: dict[str, Any]) -> str:
    """The session's prompt: the first user message's text without Claude Code's system reminders."""
    first: dict[str, Any] = next((m for m in body.get("messages") or [] if m.get("role") == "user"), {})
    return "\n".join(
        t for t in text_blocks(first.get("content")) if not t.lstrip().startswith("<system-reminder>")
    )


def latest_query(body: dict[str, Any]) -> str:
    """The prompt of a session's first request: the last user message's text without Claude Code's
    system reminders (a resumed session's earlier turns come before it)."""
    last: dict[str, Any] = next(
        (m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), {}
    )
    return "\n".join(
        t for t in text_blocks(last.get("content")) if not t.lstrip().startswith("<system-reminder>")
    )


def coin(seed: int, *parts: str) -> float:
    """A uniform number in [0, 1) fixed by the seed and the parts (the same on every run)."""
    digest = hashlib.sha256("\0".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class SkillScript:
    """A Claude model that decides once per session, by a seeded coin on (session id, query), whether
    to call the Skill tool for ``skill``; install with :meth:`install`.

    - ``p``: the chance of firing; ``p_by_query`` overrides it for a query (the prompt text).
    - ``boost``: (phrase, chance): when the description the request lists for ``skill`` contains the
      phrase, that chance is used instead (a description A/B with a known effect).
    - ``before``: tools called first, in order ("Read", "Bash"), whatever the coin says.
    - ``mode``: "call" calls Skill; "prose" only names the skill in its final text; "error" answers
      every request with HTTP ``status``.
    - ``key``: "session" tosses the coin on (session id, query); "order" on (query, how many sessions
      of that query came before), so the number of firings per query is fixed by the seed even though
      Claude Code draws a random session id (each session still decides once, on its first request).

    ``decisions`` records each session's coin (session id -> fires), ``listings`` what it was shown.
    """

    skill: str
    p: float = 1.0
    p_by_query: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    before: tuple[str, ...] = ()
    mode: str = "call"
    boost: tuple[str, float] | None = None
    status: int = 500
    key: str = "session"
    decisions: dict[str, bool] = field(default_factory=dict)
    listings: dict[str, dict[str, str]] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, server: FakeProvider) -> SkillScript:
        server.claude_agent = self
        if self.mode == "error":
            server.fault_for = self.fault
        return self

    def chance(self, query: str, listing: Mapping[str, str]) -> float:
        if self.boost is not None and self.boost[0] in listing.get(self.skill, ""):
            return self.boost[1]
        return self.p_by_query.get(query, self.p)

    def fires(self, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> bool:
        sid, query, listing = session_id(body, headers), user_query(body), skill_listing(body)
        with self.lock:
            if sid not in self.decisions:
                earlier = sum(1 for q in self.queries.values() if q == query)
                draw = (
                    coin(self.seed, query, str(earlier))
                    if self.key == "order"
                    else coin(self.seed, sid, query)
                )
                self.decisions[sid] = self.skill in listing and draw < self.chance(query, listing)
                self.listings[sid], self.queries[sid] = listing, query
            return self.decisions[sid]

    def fault(self, call: Call) -> Fault | None:
        return Fault(status=self.status) if self.mode == "error" else None

    def __call__(self, body: dict[str, Any], headers: Mapping[str, str]) -> list[dict[str, Any]]:
        fires = self.fires(body, headers)
        done = sum(
            1
            for m in body.get("messages") or []
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        steps = [self._tool(name, body) for name in self.before]
        if fires and self.mode == "call":
            steps.append({"type": "tool_use", "name": "Skill", "input": {"skill": self.skill}})
        if done < len(steps):
            return [steps[done]]
        if fires and self.mode == "prose":
            return [{"type": "text", "text": f"The {self.skill} skill would fit here; I answered directly."}]
        return [{"type": "text", "text": "Done." if fires else "Answered without a skill."}]

    @staticmethod
    def _tool(name: str, body: dict[str, Any]) -> dict[str, Any]:
        system, _ = anthropic_text(body)
        cwd = next(
            (
                line.split(":", 1)[1].strip()
                for line in system.splitlines()
                if "Primary working directory:" in line
            ),
            "/tmp",
        )
        if name == "Read":
            return {"type": "tool_use", "name": "Read", "input": {"file_path": f"{cwd}/README.md"}}
        if name == "Bash":
            return {
                "type": "tool_use",
                "name": "Bash",
                "input": {"command": "ls -a", "description": "List files"},
            }
        raise ValueError(f"SkillScript: no scripted call for tool {name!r}")


@dataclass
class RouteScript:
    """A Claude model that routes among many skills the way the listing lets it: once per session it
    picks the first skill of the query's preference list whose description the request lists in
    full (a description cut or dropped was not seen) and whose seeded coin comes up, and calls
    Skill for it; install with :meth:`install`.

    - ``prefs``: query text -> [(skill, chance), ...] in order of preference.
    - ``crowded``: (characters, factor): when the request is larger than that (a filled window),
      every chance is multiplied by the factor.
    - ``needs``: query text -> a phrase its skill's listed description must contain to be picked
      (a description that fits some queries and not others).

    ``picks`` records each session's choice, ``listings`` what it was shown, ``sizes`` its first
    request's size."""

    prefs: dict[str, list[tuple[str, float]]]
    seed: int = 0
    crowded: tuple[int, float] | None = None
    needs: dict[str, str] = field(default_factory=dict)
    picks: dict[str, str | None] = field(default_factory=dict)
    listings: dict[str, dict[str, str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, server: FakeProvider) -> RouteScript:
        server.claude_agent = self
        return self

    def pick(self, body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
        sid = session_id(body, headers)
        with self.lock:
            if sid in self.picks:
                return self.picks[sid]
            listing, size = skill_listing(body), len(json.dumps(body))
            factor = self.crowded[1] if self.crowded and size > self.crowded[0] else 1.0
            query = latest_query(body)
            choice = next(
                (
                    skill
                    for skill, chance in self.prefs.get(query, [])
                    if listing.get(skill)
                    and not listing[skill].endswith("\u2026")
                    and self.needs.get(query, "") in listing[skill]
                    and coin(self.seed, sid, query, skill) < chance * factor
                ),
                None,
            )
            self.picks[sid], self.listings[sid], self.sizes[sid] = choice, listing, size
            return choice

    def __call__(self, body: dict[str, Any], headers: Mapping[str, str]) -> list[dict[str, Any]]:
        choice = self.pick(body, headers)
        answered = any(
            isinstance(b, dict) and b.get("type") == "tool_result"
            for m in body.get("messages") or []
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"]
        )
        if choice is not None and not answered:
            return [{"type": "tool_use", "name": "Skill", "input": {"skill": choice}}]
        return [{"type": "text", "text": "Done." if choice else "Answered without a skill."}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_forever(argv: list[str] | None = None) -> None:
    """``python -m tests.fakes.provider --delay 0.2``: serve until killed; GET /stats gives the call count.

    Used by the benchmark scripts, so that the server's CPU is not the client's."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = FakeProvider(delay=args.delay)
    if args.port:
        server.port = args.port
        server.server.config.port = args.port

    async def stats(request: Request) -> Response:
        with server.lock:
            first = server.calls[0].t if server.calls else None
            last = server.calls[-1].t if server.calls else None
        # first/last: wall-clock times of the first and last request (a command's start-up is measured
        # from its launch to the first one); POST /stats/reset forgets the calls between measurements.
        return JSONResponse({"calls": server.count(), "first": first, "last": last, "peak": server.peak})

    async def reset(request: Request) -> Response:
        with server.lock:
            server.calls.clear()
            server.peak = 0
        return JSONResponse({"calls": 0})

    server.app.router.routes.append(Route("/stats", stats, methods=["GET"]))
    server.app.router.routes.append(Route("/stats/reset", reset, methods=["POST"]))
    print(server.url, flush=True)
    server.server.run()


if __name__ == "__main__":
    serve_forever()
