"""The floor a Python tool stands on: the same calls as skillab's, and nothing else.

    python -m benchmarks.floor --samples eval-samples.json --base-url http://127.0.0.1:PORT/v1 --concurrency 32

One process keeps --concurrency HTTP/1.1 connections to the OpenAI-compatible endpoint (plain http)
and sends each sample's prompt (after --system) on the next free one, as soon as it is free; each
answer's ``contains`` is checked. No validation, cache, orchestration, report, retry or HTTP library:
the standard library's streams and JSON. ``benchmarks.peers`` runs it as the tool "floor" beside the
others, timed the same way, so skillab's wall clock over it is skillab's own overhead on this
machine and this stub (the interpreter's start and the transport on both sides; the ideal, units x
latency / concurrency, counts neither). httpx in its place was no floor: at 10,000 calls and 64
connections its pool took 42.5 s, skillab 34.4 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import deque
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


async def worker(todo: deque[dict[str, Any]], url: str, model: str, system: str, key: str) -> tuple[int, int]:
    """One connection, its calls back to back until none is left: (answers, answers that pass)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        raise SystemExit(f"floor: {url}: a plain http:// endpoint only")
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    target = parts.path.rstrip("/") + "/chat/completions"
    head = (
        f"POST {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: application/json\r\nContent-Length: "
    ).encode()
    answers = passed = 0
    try:
        while todo:
            sample = todo.popleft()
            messages = [{"role": "system", "content": system}, {"role": "user", "content": sample["prompt"]}]
            body = json.dumps({"model": model, "messages": messages}).encode()
            writer.write(head + b"%d\r\n\r\n" % len(body) + body)
            status, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines if ": " in line)
            if status.split(" ")[1:2] != ["200"] or "content-length" not in headers:
                raise SystemExit(f"floor: {status!r} (a 200 with a Content-Length expected)")
            reply = json.loads(await reader.readexactly(int(headers["content-length"])))
            text = reply["choices"][0]["message"]["content"] or ""
            answers += 1
            passed += all(a["value"] in text for a in sample["assertions"] if a["type"] == "contains")
    finally:
        writer.close()
    return answers, passed


async def run(
    samples: list[dict[str, Any]], url: str, model: str, system: str, concurrency: int
) -> tuple[int, int]:
    todo = deque(samples)
    key = os.environ.get("OPENAI_API_KEY", "")
    done = await asyncio.gather(*(worker(todo, url, model, system, key) for _ in range(concurrency)))
    return sum(a for a, _ in done), sum(p for _, p in done)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--system", default="", help="the system prompt every call carries")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    samples = json.loads(args.samples.read_text())
    answers, passed = asyncio.run(run(samples, args.base_url, args.model, args.system, args.concurrency))
    print(f"{answers} answers, {passed} pass")
    sys.exit(0 if answers == len(samples) else 1)


if __name__ == "__main__":
    main()
