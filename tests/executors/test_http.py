"""Each API executor against a real local server speaking its protocol."""

from __future__ import annotations

import json

import pytest

from executors.base import ExecutorSettings
from executors.errors import PermanentError, TransientError
from executors.registry import EXECUTORS
from executors.schema import RunRequest
from tests.fakes.provider import FakeProvider, Fault

PROVIDERS = ["openai", "anthropic", "gemini"]


def make(name: str, server: FakeProvider, timeout: float = 5.0):
    base = f"{server.url}/v1" if name == "openai" else server.url
    return EXECUTORS[name](ExecutorSettings(base_url=base, timeout_s=timeout))


def request(name: str, **kw) -> RunRequest:
    defaults = {
        "executor": name,
        "model": "gpt-4o-mini" if name == "openai" else "m",
        "system": "be brief",
        "prompt": "What is 2+2?",
        "temperature": 0.0,
        "max_tokens": 20,
        "seed": 7,
    }
    return RunRequest(**(defaults | kw))


@pytest.mark.parametrize("name", PROVIDERS)
async def test_success_records_text_tokens_latency_cost_model(name: str, provider: FakeProvider) -> None:
    provider.answer = lambda system, prompt: f"[{system}] four"
    result = await make(name, provider).run(request(name))
    assert result.ok and result.output == "[be brief] four"
    assert result.usage.input_tokens > 0 and result.usage.output_tokens == 3
    assert result.latency_ms > 0
    assert result.model
    call = provider.calls[-1]
    assert call.protocol == name and call.system == "be brief" and call.prompt == "What is 2+2?"


async def test_openai_passes_parameters_through(provider: FakeProvider) -> None:
    result = await make("openai", provider).run(request("openai"))
    body = provider.calls[-1].body
    assert body["temperature"] == 0.0 and body["max_tokens"] == 20 and body["seed"] == 7
    assert result.cost_usd == pytest.approx(
        (result.usage.input_tokens * 0.15 + result.usage.output_tokens * 0.60) / 1e6
    )


async def test_gemini_and_anthropic_pass_parameters(provider: FakeProvider) -> None:
    await make("gemini", provider).run(request("gemini"))
    config = provider.calls[-1].body["generationConfig"]
    assert config == {"temperature": 0.0, "maxOutputTokens": 20, "seed": 7}
    await make("anthropic", provider).run(request("anthropic", max_tokens=None))
    assert provider.calls[-1].body["max_tokens"] == 1024


@pytest.mark.parametrize("name", PROVIDERS)
async def test_429_is_transient_with_retry_after(name: str, provider: FakeProvider) -> None:
    provider.faults = [Fault(status=429, headers={"Retry-After": "3"})]
    with pytest.raises(TransientError) as info:
        await make(name, provider).run(request(name))
    assert info.value.status == 429 and info.value.retry_after == 3.0


@pytest.mark.parametrize("name", PROVIDERS)
async def test_500_is_transient(name: str, provider: FakeProvider) -> None:
    provider.faults = [Fault(status=503)]
    with pytest.raises(TransientError, match="503"):
        await make(name, provider).run(request(name))


@pytest.mark.parametrize("name", PROVIDERS)
async def test_4xx_is_permanent_with_server_message(name: str, provider: FakeProvider) -> None:
    provider.faults = [
        Fault(status=400, body=json.dumps({"error": {"message": "model 'nope' does not exist"}}))
    ]
    with pytest.raises(PermanentError, match="model 'nope' does not exist") as raised:
        await make(name, provider).run(request(name))
    assert f"({provider.url}/" in str(raised.value)  # which endpoint refused: a wrong path, key or model


@pytest.mark.parametrize("name", PROVIDERS)
async def test_timeout_is_transient(name: str, provider: FakeProvider) -> None:
    provider.faults = [Fault(delay=2.0)]
    with pytest.raises(TransientError, match="timeout"):
        await make(name, provider, timeout=0.3).run(request(name))


@pytest.mark.parametrize("name", PROVIDERS)
async def test_malformed_body_is_transient(name: str, provider: FakeProvider) -> None:
    provider.faults = [Fault(malformed=True)]
    with pytest.raises(TransientError, match="malformed"):
        await make(name, provider).run(request(name))


@pytest.mark.parametrize("name", PROVIDERS)
async def test_connection_cut_mid_body_is_transient(name: str, provider: FakeProvider) -> None:
    provider.faults = [Fault(drop=True)]
    with pytest.raises(TransientError):
        await make(name, provider).run(request(name))


async def test_valid_json_of_the_wrong_shape_is_transient(provider: FakeProvider) -> None:
    provider.faults = [Fault(malformed=True, body='{"unexpected": true}')]
    with pytest.raises(TransientError, match="malformed response body: missing"):
        await make("openai", provider).run(request("openai"))


def test_public_endpoint_without_key_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert "OPENAI_API_KEY" in (EXECUTORS["openai"]().problem() or "")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert EXECUTORS["openai"]().problem() is None


def test_closing_leaves_another_live_loops_clients_open(provider: FakeProvider) -> None:
    """A run's head start calls from its own thread and loop: the flow's loop closing the executor
    must not close a client that thread is still using (nor keep a dead loop's client)."""
    import asyncio
    import threading

    executor = make("openai", provider)
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(executor.run(request("openai")), other).result(30)

        async def here() -> None:
            await executor.run(request("openai"))
            await executor.aclose()

        asyncio.run(here())
        (theirs,) = (client for loop, client in executor._lean.values() if loop is other)  # its posts' client
        assert len(executor._lean) == 1 and not theirs.is_closed
        assert asyncio.run_coroutine_threadsafe(executor.run(request("openai")), other).result(30).ok
        asyncio.run(executor.run(request("openai")))  # a loop that ends without closing its client
        asyncio.run_coroutine_threadsafe(executor.aclose(), other).result(30)
        assert theirs.is_closed and not executor._lean
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(10)
        other.close()
