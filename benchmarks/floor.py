"""The floor a Python tool stands on: the same calls as skillab's, and nothing else.

    python -m benchmarks.floor --samples eval-samples.json --base-url http://127.0.0.1:PORT/v1 --concurrency 32

One process sends each sample's prompt (after --system) to the OpenAI-compatible
endpoint through httpx, at most --concurrency at a time, and checks each answer's ``contains``: no
validation, cache, orchestration, report or retry. ``benchmarks.peers`` runs it as the tool "floor"
beside the others, timed the same way, so skillab's wall clock over it is its own overhead on this
machine and this stub, the interpreter's start and the transport counted on both sides (the ideal,
units x latency / concurrency, counts neither).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx


async def run(samples: list[dict[str, Any]], base_url: str, model: str, system: str, concurrency: int) -> int:
    """How many answers contain their sample's value (every call made, each at most once)."""
    slots = asyncio.Semaphore(concurrency)
    headers = {"authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, limits=limits, timeout=60) as client:

        async def one(sample: dict[str, Any]) -> bool:
            body = {
                "model": model,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": sample["prompt"]},
                ],
            }
            async with slots:
                response = await client.post("/chat/completions", json=body)
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"] or ""
            return all(a["value"] in text for a in sample["assertions"] if a["type"] == "contains")

        return sum(await asyncio.gather(*(one(s) for s in samples)))


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
    passed = asyncio.run(run(samples, args.base_url, args.model, args.system, args.concurrency))
    print(f"{passed}/{len(samples)} answers pass")
    sys.exit(0)


if __name__ == "__main__":
    main()
