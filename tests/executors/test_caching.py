"""Prompt caching: token counts from real exchanges, where the cache marker goes, and the prices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from executors.agent import usage_of
from executors.base import ExecutorSettings
from executors.codex_cli import parse_codex
from executors.pricing import PriceTable, caching_savings
from executors.registry import EXECUTORS
from executors.schema import RunRequest, RunResult, SessionMeta, Usage
from tasks.store.cache import ResultCache
from tests.fakes.provider import FakeProvider, Fault

LONG_SYSTEM = "Follow the house style guide closely. " * 120 + "\n"  # 4,561 chars: ~1,140 tokens
SHORT_SYSTEM = "be brief\n"


def make(name: str, server: FakeProvider, **settings):
    base = f"{server.url}/v1" if name == "openai" else server.url
    return EXECUTORS[name](ExecutorSettings(base_url=base, timeout_s=5.0, **settings))


def request(name: str, system: str, prompt: str = "What is 2+2?", **kw) -> RunRequest:
    model = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}[name]
    return RunRequest(**({"executor": name, "model": model, "system": system, "prompt": prompt} | kw))


def words(text: str) -> int:
    return len(text.split())


# ---------------------------------------------------------------- prices, hand-computed


def test_anthropic_cache_write_and_read_prices() -> None:
    table = PriceTable()
    # claude-sonnet-4: $3 in, $15 out, write 1.25 x 3 = $3.75, read 0.1 x 3 = $0.30 per 1M
    write = Usage(input_tokens=1000, output_tokens=200, cache_write_tokens=4000)
    read = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=4000)
    assert table.cost_of("claude-sonnet-4-5", write) == pytest.approx((3000 + 3000 + 15000) / 1e6)
    assert table.cost_of("claude-sonnet-4-5", read) == pytest.approx((3000 + 3000 + 1200) / 1e6)
    assert table.uncached_cost_of("claude-sonnet-4-5", read) == pytest.approx((15000 + 3000) / 1e6)


def test_openai_and_gemini_cached_input_prices() -> None:
    table = PriceTable()
    usage = Usage(input_tokens=500, output_tokens=100, cache_read_tokens=1500)
    # gpt-4o-mini: $0.15 in, $0.075 cached (0.5x), $0.60 out
    assert table.cost_of("gpt-4o-mini-2024-07-18", usage) == pytest.approx((75 + 112.5 + 60) / 1e6)
    # gpt-4.1: $2 in, $0.50 cached (0.25x), $8 out
    assert table.cost_of("gpt-4.1", usage) == pytest.approx((1000 + 750 + 800) / 1e6)
    # gemini-2.5-flash: $0.30 in, $0.03 cached (0.1x), $2.50 out
    assert table.cost_of("gemini-2.5-flash", usage) == pytest.approx((150 + 45 + 250) / 1e6)
    # a batch result: everything at half price
    assert table.cost_of("gemini-2.5-flash", usage, 0.5) == pytest.approx(445 / 2 / 1e6)


def test_savings_is_uncached_minus_actual() -> None:
    table = PriceTable()
    results = [
        RunResult(ok=True, model="claude-sonnet-4-5", usage=Usage(input_tokens=10, cache_write_tokens=4000)),
        RunResult(ok=True, model="claude-sonnet-4-5", usage=Usage(input_tokens=10, cache_read_tokens=4000)),
        RunResult(
            ok=True,
            model="gpt-4o-mini",
            usage=Usage(input_tokens=10, cache_read_tokens=2000),
            price_multiplier=0.5,
        ),
        RunResult(ok=True, model="mystery-model", usage=Usage(cache_read_tokens=50)),
        RunResult(ok=False, model="gpt-4o-mini", usage=Usage(cache_read_tokens=999)),
    ]
    s = caching_savings(results, table)
    # Anthropic: write costs 4000 x (3.75 - 3) more, read saves 4000 x (3 - 0.3): net 4000 x 1.95
    # OpenAI batch: 2000 x (0.15 - 0.075) x 0.5
    assert s.saved_usd == pytest.approx((4000 * 1.95 + 2000 * 0.075 * 0.5) / 1e6)
    assert s.uncached_usd == pytest.approx((8020 * 3 + 2010 * 0.15 * 0.5) / 1e6)
    assert (s.cache_write_tokens, s.cache_read_tokens, s.unpriced) == (4000, 6050, 1)


def test_price_file_cache_columns_are_optional(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        "my-claude: {input: 2.0, output: 10.0}\nmy-gpt: {input: 1.0, output: 2.0, cache_read: 0.2}\n"
    )
    anthropic = EXECUTORS["anthropic"](ExecutorSettings(prices_file=str(path))).prices
    assert anthropic.price("my-claude-v1") == (2.0, 10.0, 2.5, pytest.approx(0.2))  # Anthropic's ratios
    openai = EXECUTORS["openai"](ExecutorSettings(prices_file=str(path))).prices
    assert openai.price("my-claude") == (2.0, 10.0, 2.0, 1.0)  # OpenAI's: no write premium, half on read
    assert openai.price("my-gpt") == (1.0, 2.0, 1.0, 0.2)  # a listed cache price wins
    assert openai.lookup("my-gpt") == (1.0, 2.0)  # the two-column view callers already use


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{input: 1, output: 2, cache_read: -0.1}", "'my-model': field 'cache_read' must be a number >= 0"),
        ("{input: 1, output: cheap}", "'my-model': field 'output' must be a number >= 0"),
        ("{input: 1, output: 2, cached: 0.5}", "'my-model': unknown field 'cached'"),
    ],
)
def test_bad_price_file_names_file_model_and_field(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(f"my-model: {entry}\n")
    with pytest.raises(ValueError, match=message) as info:
        PriceTable.from_file(path)
    assert str(path) in str(info.value)


# ---------------------------------------------------------------- the schema


def test_an_old_cache_entry_still_loads(tmp_path: Path) -> None:
    old = {
        "ok": True,
        "output": "4",
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "cost_usd": 0.0001,
        "latency_ms": 40.0,
        "model": "gpt-4o-mini",
        "error": None,
        "error_kind": None,
        "attempts": 1,
        "cached": False,
    }
    cache = ResultCache(tmp_path)
    cache.put("k" * 64, old)
    value = cache.get("k" * 64)
    assert value is not None
    result = RunResult(**{**value, "cached": True})
    assert result.usage == Usage(input_tokens=12, output_tokens=3)
    assert result.usage.cache_read_tokens == result.usage.cache_write_tokens == 0
    assert result.price_multiplier == 1.0 and result.usage.total_tokens == 15


def test_negative_counts_and_costs_become_zero_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    usage = Usage(input_tokens=-5, output_tokens=7, cache_read_tokens=-1)
    result = RunResult(ok=True, cost_usd=-0.25)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (0, 7, 0)
    assert result.cost_usd == 0.0
    err = capsys.readouterr().err
    assert "input_tokens = -5" in err and "cost_usd = -0.25" in err


async def test_negative_counts_from_a_server_are_clamped(
    provider: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {
        "model": "gpt-4o-mini",
        "choices": [{"message": {"role": "assistant", "content": "4"}}],
        "usage": {"prompt_tokens": -40, "completion_tokens": -2},
    }
    provider.faults = [Fault(malformed=True, body=json.dumps(body))]  # a 200 with this body
    result = await make("openai", provider).run(request("openai", SHORT_SYSTEM))
    assert result.ok and result.usage == Usage() and result.cost_usd == 0.0
    err = capsys.readouterr().err
    assert "input_tokens = -40" in err and "output_tokens = -2" in err


# ---------------------------------------------------------------- where the marker goes


async def test_cache_control_only_on_a_system_prompt_above_the_minimum(provider: FakeProvider) -> None:
    executor = make("anthropic", provider)
    await executor.run(request("anthropic", LONG_SYSTEM))
    system = provider.calls[-1].body["system"]
    assert system == [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]

    await executor.run(request("anthropic", SHORT_SYSTEM))
    assert provider.calls[-1].body["system"] == SHORT_SYSTEM

    # Haiku 3.5 caches from 2,048 tokens: ~1,110 is below its minimum
    await executor.run(request("anthropic", LONG_SYSTEM, model="claude-3-5-haiku-20241022"))
    assert provider.calls[-1].body["system"] == LONG_SYSTEM

    await make("anthropic", provider, prompt_cache=False).run(request("anthropic", LONG_SYSTEM))
    assert provider.calls[-1].body["system"] == LONG_SYSTEM


# ---------------------------------------------------------------- counts from real exchanges


async def test_anthropic_cache_write_then_read(provider: FakeProvider) -> None:
    executor = make("anthropic", provider)
    first = await executor.run(request("anthropic", LONG_SYSTEM))
    second = await executor.run(request("anthropic", LONG_SYSTEM, prompt="And 3+3?"))
    n = words(LONG_SYSTEM)
    assert first.usage == Usage(input_tokens=3, output_tokens=words(first.output), cache_write_tokens=n)
    assert second.usage == Usage(input_tokens=2, output_tokens=words(second.output), cache_read_tokens=n)
    out1, out2 = first.usage.output_tokens, second.usage.output_tokens
    assert first.cost_usd == pytest.approx((3 * 3 + out1 * 15 + n * 3.75) / 1e6)
    assert second.cost_usd == pytest.approx((2 * 3 + out2 * 15 + n * 0.30) / 1e6)


@pytest.mark.parametrize("name", ["openai", "gemini"])
async def test_implicit_cache_counts_are_taken_out_of_the_prompt(name: str, provider: FakeProvider) -> None:
    provider.implicit_cache_min = 100
    executor = make(name, provider)
    first = await executor.run(request(name, LONG_SYSTEM))
    second = await executor.run(request(name, LONG_SYSTEM))
    prompt_tokens = words(LONG_SYSTEM + "What is 2+2?")
    assert first.usage.input_tokens == prompt_tokens and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == words(LONG_SYSTEM)
    assert second.usage.input_tokens == prompt_tokens - words(LONG_SYSTEM)
    assert second.usage.prompt_tokens == first.usage.prompt_tokens  # the same prompt, billed differently
    cached, full = {"openai": (0.075, 0.15), "gemini": (0.03, 0.30)}[name]
    out = {"openai": 0.60, "gemini": 2.50}[name]
    expected = (second.usage.input_tokens * full + words(LONG_SYSTEM) * cached) / 1e6
    assert second.cost_usd == pytest.approx(expected + second.usage.output_tokens * out / 1e6)


# ---------------------------------------------------------------- warm-up


async def test_warm_up_writes_the_cache_once_before_the_fan_out(provider: FakeProvider) -> None:
    executor = make("anthropic", provider)
    real = request("anthropic", LONG_SYSTEM, temperature=0.0, max_tokens=200)
    warm = executor.warm_up_request(real)
    assert warm is not None and warm.max_tokens == 1
    assert (warm.system, warm.model, warm.temperature) == (real.system, real.model, real.temperature)
    warmed = await executor.run(warm)
    fan_out = [await executor.run(real.model_copy(update={"prompt": f"case {i}"})) for i in range(3)]
    assert warmed.usage.cache_write_tokens == words(LONG_SYSTEM)
    assert all(r.usage.cache_write_tokens == 0 and r.usage.cache_read_tokens > 0 for r in fan_out)


def test_no_warm_up_where_caching_cannot_apply(provider: FakeProvider) -> None:
    assert make("anthropic", provider).warm_up_request(request("anthropic", SHORT_SYSTEM)) is None
    assert make("anthropic", provider).warm_up_request(request("anthropic", "")) is None
    assert (
        make("anthropic", provider, prompt_cache=False).warm_up_request(request("anthropic", LONG_SYSTEM))
        is None
    )
    # gemini-2.0 has no implicit cache; 2.5 caches from 2,048 tokens
    gemini = make("gemini", provider)
    assert gemini.warm_up_request(request("gemini", LONG_SYSTEM * 3, model="gemini-2.0-flash")) is None
    assert gemini.warm_up_request(request("gemini", LONG_SYSTEM)) is None
    assert gemini.warm_up_request(request("gemini", LONG_SYSTEM * 2)) is not None
    assert make("openai", provider).warm_up_request(request("openai", LONG_SYSTEM)) is not None
    local = EXECUTORS["local"]()
    assert (
        local.warm_up_request(request("openai", LONG_SYSTEM).model_copy(update={"executor": "local"})) is None
    )


# ---------------------------------------------------------------- agent CLI sessions


def test_claude_session_usage_keeps_anthropic_counts() -> None:
    meta = {
        "usage": {
            "input_tokens": 40,
            "cache_creation_input_tokens": 5000,
            "cache_read_input_tokens": 20000,
            "output_tokens": 300,
        }
    }
    usage = usage_of(SessionMeta.model_validate(meta))
    assert usage == Usage(
        input_tokens=40, output_tokens=300, cache_write_tokens=5000, cache_read_tokens=20000
    )
    cost = EXECUTORS["claude"]().prices.cost_of("claude-sonnet-4-5", usage)
    assert cost == pytest.approx((40 * 3 + 300 * 15 + 5000 * 3.75 + 20000 * 0.3) / 1e6)


def test_codex_cached_input_is_taken_out_of_input() -> None:
    events: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 9000, "cached_input_tokens": 8000, "output_tokens": 50},
        },
        {"type": "turn.started"},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 9500, "cached_input_tokens": 9000, "output_tokens": 20},
        },
    ]
    usage = usage_of(parse_codex(events).meta)
    assert usage == Usage(input_tokens=1500, output_tokens=70, cache_read_tokens=17000)
    cost = EXECUTORS["codex"]().prices.cost_of("gpt-4.1", usage)
    assert cost == pytest.approx((1500 * 2.0 + 70 * 8.0 + 17000 * 0.5) / 1e6)
