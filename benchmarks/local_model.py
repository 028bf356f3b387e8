"""The embedded model through skillab's executor against xllamacpp (llama.cpp) called directly.

    .venv/bin/python -m benchmarks.local_model

Prints generated tokens per second both ways on the same prompt and settings, their ratio (target
>= 0.9), and the wall time of the demo that `init` scaffolds (run end to end in a fresh process,
with a fresh cache, as a user would run it).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Write a short story about a lighthouse keeper and a storm."
TOKENS = 64
ROUNDS = 5


def direct(server: Any) -> float:
    """Tokens per second of llama.cpp's server API itself, with the executor's prompt and sampling."""
    from executors.local import plain_prompt

    total_tokens, total_s = 0, 0.0
    for _ in range(ROUNDS):
        start = time.perf_counter()
        out = server.handle_completions(
            {"prompt": plain_prompt(None, PROMPT), "max_tokens": TOKENS, "temperature": 0.0, "seed": 0}
            | {"stop": ["\nQ:"]}
        )
        total_s += time.perf_counter() - start
        total_tokens += out["usage"]["completion_tokens"]
    return total_tokens / total_s


def through_executor() -> float:
    from executors.local import DEFAULT_MODEL, LocalExecutor
    from executors.schema import RunRequest

    ex = LocalExecutor()
    request = RunRequest(
        executor="local", model=DEFAULT_MODEL, prompt=PROMPT, max_tokens=TOKENS, temperature=0.0, seed=0
    )
    total_tokens, total_s = 0, 0.0
    for _ in range(ROUNDS):
        start = time.perf_counter()
        result = asyncio.run(ex.run(request))
        total_s += time.perf_counter() - start
        total_tokens += result.usage.output_tokens
    return total_tokens / total_s


def demo_wall() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = os.environ | {
            "SKILLAB_HOME": str(Path(tmp) / "home"),
            "PREFECT_HOME": str(Path(tmp) / "prefect"),
        }
        env.pop("PREFECT_API_URL", None)
        subprocess.run(
            [sys.executable, "-m", "flows.bench", "init", "demo"],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
        )
        start = time.perf_counter()
        try:
            subprocess.run(
                [sys.executable, "-m", "flows.bench", "run", "--variants", "v1,v2", "--quiet"],
                cwd=Path(tmp) / "demo",
                env=env,
                check=True,
                capture_output=True,
            )
            return time.perf_counter() - start
        finally:  # `init` started a Prefect server in these homes: it goes with them
            subprocess.run(
                [sys.executable, "-m", "flows.bench", "server", "stop"],
                cwd=ROOT,
                env=env,
                capture_output=True,
            )


def measure(way: str) -> float:
    """One measurement in this (fresh) process: llama.cpp's OpenMP thread team belongs to the
    calling thread, and two teams in one process spin against each other on 2 cores."""
    from executors.local import DEFAULT_MODEL, load_model

    if way == "direct":
        server = load_model(DEFAULT_MODEL)
        server.handle_completions({"prompt": "Q: Hi\nA:", "max_tokens": 4})  # the first decode is slow
        return direct(server)
    from executors.local import LocalExecutor
    from executors.schema import RunRequest

    asyncio.run(
        LocalExecutor().run(RunRequest(executor="local", model=DEFAULT_MODEL, prompt="Hi", max_tokens=4))
    )
    return through_executor()


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        print(measure(sys.argv[2]))
        return
    rates: dict[str, list[float]] = {"direct": [], "executor": []}
    for _ in range(3):  # interleaved, so drift on a shared machine favours neither
        for way in rates:
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.local_model", "--measure", way],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            rates[way].append(float(out.stdout.strip().splitlines()[-1]))
    d, e = max(rates["direct"]), max(rates["executor"])
    print(
        f"generated tokens/s: executor {e:.1f}, xllamacpp direct {d:.1f}, ratio {e / d:.3f} (target >= 0.9)"
    )
    print(
        f"demo (init + run, 28 calls, fresh cache and homes, the Prefect server init starts): {demo_wall():.1f} s wall"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
