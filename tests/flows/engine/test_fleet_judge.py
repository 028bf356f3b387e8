"""The fleet's limits: --fleet-sessions bounds judge calls too (two runs judging at once on one account
share the slots); --fleet-rpm paces starts, and a 429 pauses every run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prefect import flow

from executors.schema import RunRequest
from flows.engine.fleet import provider_of
from flows.engine.progress import Progress
from flows.engine.runner import RunnerConfig, UnitRunner
from tasks.schema import CallPolicy, Unit, UnitKind
from tests.fakes.provider import FakeProvider

pytestmark = pytest.mark.usefixtures("prefect_harness")


@flow
async def judging(url: str, run: str, calls: int, fleet: int | None) -> int:
    runner = UnitRunner(
        RunnerConfig(calls, None, fleet_sessions=fleet), Progress(calls, "calls", enabled=False)
    )
    units = [
        Unit(
            kind=UnitKind.JUDGE,
            sample_id=f"s{i}",
            variant="v",
            run=1,
            request=RunRequest(executor="anthropic", model="claude-judge", prompt=f"{run}: judge answer {i}"),
            key=f"{run}-{i}",
            label=f"judge {run} {i}",
        )
        for i in range(calls)
    ]
    results = await runner.run(units, CallPolicy(base_url=url, retries=0, timeout_s=60))
    return sum(1 for r in results.values() if r.ok)


async def two_runs(url: str, fleet: int | None) -> list[int]:
    return list(await asyncio.gather(judging(url, "a", 3, fleet), judging(url, "b", 3, fleet)))


def test_judge_calls_of_two_runs_share_the_fleet_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fleet-judge")
    assert provider_of("anthropic") is provider_of("claude") and provider_of("local") is None
    with FakeProvider(delay=0.5) as server:
        assert asyncio.run(two_runs(server.url, 1)) == [3, 3]
        limited, server.peak = server.peak, 0
        assert asyncio.run(two_runs(server.url, None)) == [3, 3]
        free = server.peak
    assert limited == 1 and free > 1, (limited, free)


def test_a_429_of_one_session_takes_a_minute_of_starts_from_every_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--fleet-rpm: each start takes a slot of a limit whose slots decay at rpm/60 a second; a 429 that
    comes back through the model forwarder makes the next start take the whole minute's slots, so
    every run on the account waits while they decay."""
    import httpx
    from prefect.client.orchestration import get_client

    from executors.egress import ANTHROPIC, forwarder
    from flows.engine.fleet import RATE_PREFIX, Fleet, fleet_name
    from tests.fakes.provider import Fault

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fleet-rate")

    async def go(url: str) -> Any:
        fleet = Fleet(None, rpm=6000)
        async with fleet.slot("claude"):  # a session's start: one slot
            pass
        route = forwarder().route(ANTHROPIC, url, tcp=True)
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                route.url(0) + "/v1/messages",
                json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]},
            )
        assert answer.status_code == 429 and fleet.cooling == {"anthropic"}
        async with fleet.slot("claude"):  # the next start takes the pause for every run
            pass
        async with get_client() as client:
            return await client.read_global_concurrency_limit_by_name(fleet_name("claude", RATE_PREFIX))

    with FakeProvider() as server:
        server.fault_for = lambda call: Fault(status=429)
        gcl = asyncio.run(go(server.url))
    assert gcl.limit == 6000 and gcl.slot_decay_per_second == 100 and "sk-fleet-rate" not in gcl.name
    assert gcl.active_slots > 3000  # a minute's starts taken at once (decaying by 100 a second)


def test_a_server_that_would_forget_its_leases_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    """Servers skillab starts keep concurrency leases on disk (the harness's is one of them): no
    warning. A server with Prefect's in-memory default gets one line saying what to set."""
    import httpx
    from prefect.client.orchestration import get_client

    from flows.engine.fleet import MEMORY_LEASES, warn_of_forgotten_leases

    class InMemory:
        async def request(self, method: str, path: str) -> httpx.Response:
            return httpx.Response(200, json={"server": {"concurrency": {"lease_storage": MEMORY_LEASES}}})

    async def check(client: Any) -> list[str]:
        caplog.clear()
        await warn_of_forgotten_leases(client)
        return [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]

    async def both() -> tuple[Any, list[str], list[str]]:
        async with get_client() as client:
            settings = (await client.request("GET", "/admin/settings")).json()
            return settings["server"]["concurrency"], await check(client), await check(InMemory())

    with caplog.at_level("WARNING"):
        server, real, in_memory = asyncio.run(both())
    assert server["lease_storage"].endswith(".filesystem") and real == []
    assert len(in_memory) == 1 and "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE=" in in_memory[0]
