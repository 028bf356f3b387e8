"""--fleet-sessions bounds judge calls too: two runs judging at once on one account share the slots."""

from __future__ import annotations

import asyncio

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
