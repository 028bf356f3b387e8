"""The lean HTTP client against a raw server on 127.0.0.1 that answers exactly what each test scripts:
chunked and compressed bodies, a kept-alive connection closed while idle, floods and garbage."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
from collections.abc import Callable

import pytest

from executors import http_client
from executors.base import ExecutorSettings, HttpExecutor
from executors.errors import TransientError
from executors.http_client import ConnectError, LeanClient, ReplyError, direct
from executors.registry import EXECUTORS

Answer = Callable[[int, bytes], bytes | None]  # (request number, request) -> raw reply; None: close


class Raw:
    """A TCP server that reads one request at a time and writes the scripted raw reply."""

    def __init__(self, answer: Answer, close_after: bool = False) -> None:
        self.answer = answer
        self.close_after = close_after
        self.requests: list[bytes] = []
        self.connections = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = self.answer(len(self.requests), request)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass
        writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat?x=1"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()


def ok(body: bytes, *extra: str) -> bytes:
    head = ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def post(url: str, client: LeanClient | None = None, body: object = None) -> http_client.Reply:
    async def go() -> http_client.Reply:
        lean = client or LeanClient(ssl.create_default_context)
        try:
            return await lean.post_json(
                url, {"x-api-key": "k", "content-type": "application/json"}, body or {"a": "é"}
            )
        finally:
            if client is None:
                lean.close()

    return asyncio.run(go())


def no_tls() -> ssl.SSLContext:
    raise AssertionError("an http origin built an SSL context (~25 ms before a run's first call)")


def served(answer: Answer, *posts: int, close_after: bool = False) -> tuple[Raw, list[http_client.Reply]]:
    raw = Raw(answer, close_after)

    async def go() -> list[http_client.Reply]:
        async with raw as url:
            lean = LeanClient(no_tls)
            replies = [await lean.post_json(url, {"x-api-key": "k"}, {"n": n}) for n in posts]
            lean.close()
            return replies

    return raw, asyncio.run(go())


def test_a_request_is_http_with_its_json_body_and_one_content_type() -> None:
    raw, (reply,) = served(lambda n, req: ok(b'{"ok": true}', "Content-Type: application/json"), 1)
    head, _, body = raw.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat?x=1 HTTP/1.1"
    assert [line.split(":")[0].lower() for line in lines].count("content-type") == 1
    assert "x-api-key: k" in lines and json.loads(body) == {"n": 1}
    assert reply.status_code == 200 and reply.json() == {"ok": True}
    assert reply.headers["content-type"] == "application/json"


def test_chunked_and_gzip_bodies_are_read_whole() -> None:
    body = gzip.compress(json.dumps({"text": "x" * 5000}).encode())
    chunks = b"".join(
        b"%x;ext=1\r\n%s\r\n" % (len(body[i : i + 700]), body[i : i + 700]) for i in range(0, len(body), 700)
    )
    raw_reply = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
        + chunks
        + b"0\r\nX-Trailer: 1\r\n\r\n"
    )
    raw, replies = served(lambda n, req: raw_reply, 1, 2)
    assert [r.json()["text"] for r in replies] == ["x" * 5000] * 2
    assert raw.connections == 1  # kept alive across both


def test_a_kept_alive_connection_closed_while_idle_is_replaced_once() -> None:
    # The server closes after every reply without saying so: the second post finds its kept
    # connection dead before any byte came back, and goes again on a new one.
    raw, replies = served(lambda n, req: ok(b'{"n": %d}' % n), 1, 2, 3, close_after=True)
    assert [r.json() for r in replies] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert raw.connections == 3


def test_connection_close_is_not_kept() -> None:
    raw, replies = served(lambda n, req: ok(b"{}", "Connection: close"), 1, 2)
    assert raw.connections == 2 and len(replies) == 2


def test_a_reply_cut_short_on_a_fresh_connection_is_an_error_not_a_retry() -> None:
    async def go() -> None:
        async with Raw(lambda n, req: None) as url:
            with pytest.raises(ReplyError, match="closed the connection before replying"):
                await LeanClient(ssl.create_default_context).post_json(url, {}, {})

    asyncio.run(go())


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x reply"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nshort", "cut short"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed reply body"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", "does not decompress"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000, "over 4096 bytes"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"1000\r\n"
            + b"x" * 4096
            + b"\r\n1\r\nx\r\n0\r\n\r\n",
            "over 4096 bytes",
        ),
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"y" * 70000 + b"\r\n\r\n", "head over"),
    ],
)
def test_garbage_and_floods_are_reply_errors(
    monkeypatch: pytest.MonkeyPatch, reply: bytes, words: str
) -> None:
    monkeypatch.setattr(http_client, "MAX_REPLY", 4096)

    async def go() -> None:
        async with Raw(lambda n, req: reply, close_after=True) as url:
            with pytest.raises(ReplyError, match=words):
                await LeanClient(ssl.create_default_context).post_json(url, {}, {})

    asyncio.run(go())


def test_a_reply_read_to_the_close_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "MAX_REPLY", 4096)
    _raw, (reply,) = served(lambda n, req: b"HTTP/1.1 200 OK\r\n\r\n" + b"[1]", 1, close_after=True)
    assert reply.json() == [1]

    async def go() -> None:
        async with Raw(lambda n, req: b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 9000, close_after=True) as url:
            with pytest.raises(ReplyError, match="over 4096"):
                await LeanClient(ssl.create_default_context).post_json(url, {}, {})

    asyncio.run(go())


def test_nothing_listening_is_a_connect_error() -> None:
    with pytest.raises(ConnectError):
        post("http://127.0.0.1:1/x")


def test_a_proxy_in_the_environment_leaves_the_request_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://example.test:8080/v1"
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert direct(url)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    assert not direct(url)
    monkeypatch.setenv("NO_PROXY", "example.test")
    assert direct(url)
    assert not direct("ftp://example.test/x")


def test_the_executor_maps_lean_failures_onto_its_error_tree() -> None:
    executor = EXECUTORS["openai"](ExecutorSettings(base_url="http://127.0.0.1:1/v1", timeout_s=5))
    assert isinstance(executor, HttpExecutor)

    async def go() -> None:
        with pytest.raises(TransientError, match="connection error"):
            await executor.send("POST", "http://127.0.0.1:1/v1", {}, json={})
        await executor.aclose()

    asyncio.run(go())
