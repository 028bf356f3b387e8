"""Scale-out: shards dispatched with run_deployment to two process workers give the single-process report."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import Workers, answer, make_project, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")
POOL = "skillab-test-pool"


async def create_pool() -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    async with get_client() as client:
        with contextlib.suppress(ObjectAlreadyExists):
            await client.create_work_pool(WorkPoolCreate(name=POOL, type="process"))


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    from deployments.shards import register

    asyncio.run(create_pool())
    register(POOL)
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        workers = Workers(POOL, "process")
        for i in range(2):
            workers.start(f"worker-{i}")
        try:
            yield server
        finally:
            workers.stop()


def comparable(report: dict) -> dict:
    """The figures that must match, without timings, ids and call counts."""
    return {
        "summary": {
            v: {
                k: s[k]
                for k in (
                    "avgCompositeScore",
                    "avgAssertionScore",
                    "errorCount",
                    "passRate",
                    "compositeCI95",
                    "pass@k",
                )
            }
            for v, s in report["summary"].items()
        },
        "comparisons": [{k: c[k] for k in ("paired", "verdict", "perCase")} for c in report["comparisons"]],
        "cases": {
            r["sample_id"]: {v: (e["compositeScore"], e["output"]) for v, e in r["variants"].items()}
            for r in report["results"]
        },
    }


def test_sharded_run_matches_single_process(
    tmp_path: Path, workers: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=8)
    monkeypatch.chdir(project)
    base = ["run", "--executor", "openai", "--quiet"]
    assert main([*base, "--output-dir", str(tmp_path / "r1"), "--cache-dir", str(tmp_path / "c1")]) == 0
    single_calls = workers.count()
    started = time.monotonic()
    assert (
        main(
            [
                *base,
                "--output-dir",
                str(tmp_path / "r2"),
                "--cache-dir",
                str(tmp_path / "c2"),
                "--shards",
                "2",
            ]
        )
        == 0
    )
    assert time.monotonic() - started < 300
    single = json.loads(next((tmp_path / "r1").glob("*.json")).read_text())
    sharded = json.loads(next((tmp_path / "r2").glob("*.json")).read_text())
    assert comparable(sharded) == comparable(single)
    shards = sharded["meta"]["shards"]
    assert [s["state"] for s in shards] == ["Completed", "Completed"]
    # the workers made every call; the parent found everything in the shared cache
    assert workers.count() - single_calls == 16
    assert sharded["meta"]["calls"] == 0 and sharded["meta"]["cacheHits"] == 16
