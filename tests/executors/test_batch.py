"""Both batch protocols end to end over real HTTP against the fake provider, and resume by batch id."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from executors.base import ExecutorSettings
from executors.batch import (
    AnthropicBatchClient,
    BatchClient,
    BatchManifest,
    OpenAIBatchClient,
    batch_client,
    chunks,
    custom_id_for,
    uncovered,
)
from executors.registry import EXECUTORS
from executors.schema import RunRequest, RunResult
from tasks.store.batches import BatchStore, run_batches
from tests.fakes.provider import FakeProvider, Fault

PROVIDERS = ["anthropic", "openai"]
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o-mini"}
PRICES = {"anthropic": (3.0, 15.0), "openai": (0.15, 0.60)}  # input, output per 1M


def client(name: str, server: FakeProvider) -> BatchClient:
    base = f"{server.url}/v1" if name == "openai" else server.url
    made = batch_client(EXECUTORS[name](ExecutorSettings(base_url=base, timeout_s=5.0)), backoff_s=0.0)
    assert made is not None
    return made


def req(name: str, prompt: str) -> RunRequest:
    return RunRequest(executor=name, model=MODELS[name], system="be brief", prompt=prompt, max_tokens=50)


def items(name: str, n: int) -> dict[str, RunRequest]:
    return {f"unit-{i}": req(name, f"question {i}") for i in range(n)}


async def wait(c: BatchClient, batch_id: str) -> list[str]:
    statuses = []
    while True:
        status = await c.poll(batch_id)
        statuses.append(status.status)
        if status.ended:
            return statuses


@pytest.mark.parametrize("name", PROVIDERS)
async def test_submit_poll_results_at_half_price(name: str, provider: FakeProvider) -> None:
    provider.batch_item_error = lambda prompt: "prompt is too long" if prompt == "question 2" else None
    c = client(name, provider)
    assert isinstance(c, AnthropicBatchClient if name == "anthropic" else OpenAIBatchClient)
    batch_id = await c.submit(items(name, 4))
    statuses = await wait(c, batch_id)
    if name == "anthropic":
        assert statuses == ["in_progress", "in_progress", "ended"]
    else:  # every item done at the third poll, the output files at the fourth
        assert statuses == ["in_progress", "in_progress", "finalizing", "completed"]
    results = await c.results(batch_id, expected=items(name, 4))
    assert sorted(results) == ["unit-0", "unit-1", "unit-2", "unit-3"]
    for i in (0, 1, 3):
        r = results[f"unit-{i}"]
        assert r.ok and r.output == f"echo: question {i}" and r.price_multiplier == 0.5
        assert r.model == MODELS[name] and r.usage.input_tokens > 0
        price_in, price_out = PRICES[name]
        list_price = (r.usage.input_tokens * price_in + r.usage.output_tokens * price_out) / 1e6
        assert r.cost_usd == pytest.approx(list_price / 2)
    failed = results["unit-2"]
    assert not failed.ok and failed.error_kind == "permanent" and "prompt is too long" in (failed.error or "")
    # each item was sent as the body a direct call sends
    bodies = [c.body for c in provider.calls if c.protocol == f"{name}-batch-item"]
    assert len(bodies) == 4 and all(b["max_tokens"] == 50 and b["model"] == MODELS[name] for b in bodies)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_expired_batch_returns_what_finished_and_times_out_the_rest(
    name: str, provider: FakeProvider
) -> None:
    provider.batch_expire_after = 2  # one of three items is done at the first poll, then it expires
    c = client(name, provider)
    batch_id = await c.submit(items(name, 3))
    statuses = await wait(c, batch_id)
    assert statuses[-1] == ("ended" if name == "anthropic" else "expired")
    results = await c.results(batch_id, expected=items(name, 3))
    assert results["unit-0"].ok
    for key in ("unit-1", "unit-2"):
        assert not results[key].ok and results[key].error_kind == "timeout"
        assert "expire" in (results[key].error or "")


async def test_an_openai_batch_that_fails_validation_fails_every_item(provider: FakeProvider) -> None:
    c = client("openai", provider)
    line = {
        "custom_id": "unit-0",
        "method": "POST",
        "url": "/v1/embeddings",
        "body": {"model": "gpt-4o-mini"},
    }
    async with httpx.AsyncClient(base_url=provider.url) as http:
        upload = await http.post(
            "/v1/files", data={"purpose": "batch"}, files={"file": ("x.jsonl", json.dumps(line).encode())}
        )
        created = await http.post(
            "/v1/batches",
            json={
                "input_file_id": upload.json()["id"],
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
            },
        )
    batch_id = created.json()["id"]
    assert (await c.poll(batch_id)).status == "failed"
    results = await c.results(batch_id, expected=["unit-0"])
    assert results["unit-0"].error_kind == "permanent" and "url does not match" in (
        results["unit-0"].error or ""
    )


async def test_a_transient_error_while_polling_is_retried(provider: FakeProvider) -> None:
    c = client("anthropic", provider)
    batch_id = await c.submit(items("anthropic", 1))
    provider.faults = [Fault(status=503), Fault(status=429, headers={"Retry-After": "0"})]
    status = await c.poll(batch_id)
    assert status.status in ("in_progress", "ended") and not provider.faults


async def test_bad_batches_are_refused_before_anything_is_sent(provider: FakeProvider) -> None:
    openai = client("openai", provider)
    mixed = {"a": req("openai", "x"), "b": req("openai", "y").model_copy(update={"model": "gpt-4o"})}
    with pytest.raises(ValueError, match="one model"):
        await openai.submit(mixed)
    with pytest.raises(ValueError, match="custom id 'no spaces'"):
        await client("anthropic", provider).submit({"no spaces": req("anthropic", "x")})
    assert provider.batches == {} and provider.count() == 0
    assert batch_client(EXECUTORS["gemini"]()) is None


# ---------------------------------------------------------------- resume by batch id


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_killed_run_resumes_by_batch_id_and_never_resubmits(
    name: str, provider: FakeProvider, tmp_path: Path
) -> None:
    store = BatchStore(tmp_path / "cache")
    stored: dict[str, RunResult] = {}
    keys = [f"{i:064x}" for i in range(3)]  # unit cache keys: 64 hex digits
    requests = {key: req(name, f"question {i}") for i, key in enumerate(keys)}

    # First run: submits, polls once (a third of the batch done), and is "killed" (returns).
    got = await run_batches(client(name, provider), requests, store, stored.__setitem__, wait=False)
    assert got == {} and len(provider.batches) == 1
    (manifest,) = store.load(client(name, provider).provider, client(name, provider).endpoint)
    assert set(manifest.items.values()) == set(keys) and manifest.open
    assert manifest.batch_id in provider.batches

    # Second run, a fresh client and executor: the same units are asked for; nothing is resubmitted.
    got = await run_batches(client(name, provider), requests, store, stored.__setitem__, interval_s=0)
    assert len(provider.batches) == 1
    assert sorted(got) == sorted(keys) and all(r.ok for r in got.values()) and stored == got
    assert [c.prompt for c in provider.calls if c.protocol == f"{name}-batch-item"].count("question 0") == 1
    saved = BatchManifest.model_validate_json(store.path(manifest).read_text())
    assert saved.status == "collected" and store.load(manifest.provider, manifest.endpoint) == []

    # A later run with two new units (the old ones are in the result cache, so not asked for)
    # submits exactly those two.
    new = {f"{i:064x}": req(name, f"question {i}") for i in (3, 4)}
    got = await run_batches(client(name, provider), new, store, stored.__setitem__, interval_s=0)
    assert len(provider.batches) == 2 and sorted(got) == sorted(new)
    second = list(provider.batches.values())[-1]
    assert sorted(second.custom_ids) == sorted(new)


async def test_units_of_a_batch_still_open_are_not_submitted_again(
    provider: FakeProvider, tmp_path: Path
) -> None:
    store = BatchStore(tmp_path)
    first = {f"{i:064x}": req("anthropic", f"q{i}") for i in range(2)}
    await run_batches(client("anthropic", provider), first, store, lambda k, r: None, wait=False)
    # The flow asks again for both (not cached yet) plus one more: only the new one goes out.
    more = first | {f"{9:064x}": req("anthropic", "q9")}
    got = await run_batches(client("anthropic", provider), more, store, lambda k, r: None, interval_s=0)
    assert [len(b.items) for b in provider.batches.values()] == [2, 1]
    assert sorted(got) == sorted(more)


# ---------------------------------------------------------------- pure pieces


def test_uncovered_skips_open_manifests_only() -> None:
    open_ = BatchManifest.new("b1", "anthropic", "http://x", {"c1": "k1", "c2": "k2"})
    done = BatchManifest.new("b0", "anthropic", "http://x", {"c3": "k3"}).model_copy(
        update={"status": "collected"}
    )
    assert uncovered(["k1", "k3", "k4", "k4", "k2"], [open_, done]) == ["k3", "k4"]


def test_chunks_respect_count_and_size_limits() -> None:
    assert chunks([10] * 5, max_items=2, max_bytes=1000) == [range(0, 2), range(2, 4), range(4, 5)]
    assert chunks([400, 400, 400], max_items=10, max_bytes=1000) == [range(0, 2), range(2, 3)]
    assert chunks([], 10, 10) == []


def test_custom_ids_fit_both_providers() -> None:
    key = "a" * 64
    assert custom_id_for(key) == key
    odd = custom_id_for("call/with spaces")
    assert len(odd) == 64 and odd == custom_id_for("call/with spaces")
