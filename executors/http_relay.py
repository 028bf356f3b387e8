"""The server side of the two HTTP relays skillab runs: the model forwarder (``executors/egress.py``)
and the fleet gateway's Prefect API filter (``flows/engine/api_gate.py``).

Both read each request whole (bounded), decide, and stream the upstream's answer back as its raw
bytes, over one keep-alive connection: h11 parses, so nothing the client sends is passed on
unread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import h11

from executors.lean_httpx import httpx

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
     "transfer-encoding", "upgrade", "host", "content-length"}
)  # fmt: skip


class TooLarge(Exception):
    """A request body over the relay's bound (answered 413 before this is raised)."""


async def next_event(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(1 << 16))
            continue
        return event


async def requests(
    conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int, who: str
) -> AsyncIterator[tuple[h11.Request, bytes]]:
    """Each request on the connection with its whole body, until the client stops, breaks the
    protocol, or sends a body over ``limit`` bytes (answered 413). The consumer answers each one."""
    while True:
        request = await next_event(conn, reader)
        if not isinstance(request, h11.Request):
            return
        body = bytearray()
        while not isinstance(event := await next_event(conn, reader), h11.EndOfMessage):
            if not isinstance(event, h11.Data):
                return
            body += event.data
            if len(body) > limit:
                await reply(writer, conn, 413, f"request body too large for the {who}".encode())
                return
        yield request, bytes(body)
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return
        conn.start_next_cycle()


def forwarded_headers(request: h11.Request, drop: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The request's headers as they go upstream: hop-by-hop ones and those in ``drop`` left out."""
    pairs = ((k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers)
    return [(k, v) for k, v in pairs if k.lower() not in HOP_BY_HOP and k.lower() not in drop]


async def relay_response(
    writer: asyncio.StreamWriter, conn: h11.Connection, response: httpx.Response
) -> None:
    """The upstream's answer as its raw bytes: its content-length and -encoding hold."""
    out = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in HOP_BY_HOP or k.lower() == "content-length"
    ]
    writer.write(conn.send(h11.Response(status_code=response.status_code, headers=out)) or b"")
    async for chunk in response.aiter_raw():
        if chunk:
            writer.write(conn.send(h11.Data(data=chunk)) or b"")
            await writer.drain()
    writer.write(conn.send(h11.EndOfMessage()) or b"")
    await writer.drain()


async def reply(writer: asyncio.StreamWriter, conn: h11.Connection, status: int, text: bytes) -> None:
    """An answer of the relay's own: a JSON error both Anthropic-style and Prefect-style clients read."""
    message = json.dumps(text.decode("utf-8", "replace"))
    body = (
        '{"type":"error","error":{"type":"forwarder_error","message":'
        + message
        + '},"detail":'
        + message
        + "}"
    ).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    writer.write(conn.send(h11.Response(status_code=status, headers=headers)) or b"")
    writer.write(conn.send(h11.Data(data=body)) or b"")
    writer.write(conn.send(h11.EndOfMessage()) or b"")
    await writer.drain()


def close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
