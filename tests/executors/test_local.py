"""The embedded model, for real: it loads, decodes, honours its parameters, and survives concurrency."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("xllamacpp", reason="the 'local' extra is installed by scripts/setup.sh")

from executors.local import DEFAULT_MODEL, LocalExecutor, plain_prompt
from executors.schema import RunRequest

EXAMPLES = (
    "Answer with one word.\n\nQ: What is the capital of Italy?\nA: Rome\n\nQ: What colour is grass?\nA: Green"
)


def req(prompt: str, system: str | None = None, **kw) -> RunRequest:
    return RunRequest(
        executor="local",
        model=DEFAULT_MODEL,
        system=system,
        prompt=prompt,
        max_tokens=kw.pop("max_tokens", 24),
        temperature=kw.pop("temperature", 0.0),
        seed=0,
        **kw,
    )


def test_plain_prompt_for_a_base_model() -> None:
    assert plain_prompt("Be brief.", " Why? ") == "Be brief.\n\nQ: Why?\nA:"
    assert plain_prompt(None, "Why?") == "Q: Why?\nA:"


async def test_loads_and_decodes_with_tokens_counted() -> None:
    result = await LocalExecutor().run(req("What is the capital of France?", EXAMPLES))
    assert result.ok and "paris" in result.output.lower()
    assert result.usage.input_tokens > 10 and 0 < result.usage.output_tokens <= 24
    assert result.cost_usd == 0.0 and result.latency_ms > 0


async def test_max_tokens_is_honoured_and_temperature_0_is_deterministic() -> None:
    ex = LocalExecutor()
    a = await ex.run(req("Tell me a long story about the sea.", max_tokens=5))
    b = await ex.run(req("Tell me a long story about the sea.", max_tokens=5))
    assert a.usage.output_tokens <= 5 and a.output == b.output


async def test_concurrent_calls_neither_crash_nor_interleave() -> None:
    ex = LocalExecutor()
    questions = [
        "What is the capital of France?",
        "What is the capital of Japan?",
        "What is the capital of Egypt?",
    ]
    alone = [(await ex.run(req(q, EXAMPLES))).output for q in questions]
    together = await asyncio.gather(*(ex.run(req(q, EXAMPLES)) for q in questions * 3))
    assert [r.output for r in together] == alone * 3


QUESTIONS = ("What is the capital of France?", "What colour is the sky?", "Name a large animal.")


async def answers() -> list[str]:
    ex = LocalExecutor()
    return [(await ex.run(req(q, EXAMPLES, temperature=0.7))).output for q in QUESTIONS]


async def test_answers_are_stable_across_processes() -> None:
    """Seeded sampling (even at temperature 0.7) and one slot: a fresh process answers the same text."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = "import asyncio, json; from tests.executors.test_local import answers; print(json.dumps(asyncio.run(answers())))"
    fresh = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600, check=True
    )
    here = await answers()
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == here and here == await answers()
    assert "paris" in here[0].lower()


async def test_a_prompt_over_the_context_is_a_permanent_error() -> None:
    from executors.errors import PermanentError

    with pytest.raises(PermanentError, match="context"):
        await LocalExecutor().run(req("word " * 5000))
