"""Deployments validate: names, cron, timezone, and each suite's options against the config model."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, cast

import pytest

from deployments.suites import build, load
from executors.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, body: str, config: str = "variants: v1,v2\n") -> Path:
    (tmp_path / "suite").mkdir(exist_ok=True)
    (tmp_path / "suite" / "skillab.yaml").write_text(config)
    path = tmp_path / "deployments.yaml"
    path.write_text(body)
    return path


def test_the_repository_file_validates_and_builds() -> None:
    suites = load(ROOT / "deployments.yaml")
    assert [s.name for s in suites] == ["demo-nightly"]
    (deployment,) = build(ROOT / "deployments.yaml")
    assert deployment.name == "demo-nightly"
    assert deployment.parameters["suite"] == "demo-nightly"
    assert Path(deployment.parameters["config"]).is_absolute()
    assert deployment.schedules[0].schedule.cron == "0 3 * * *"


@pytest.mark.parametrize(
    ("body", "config", "expected"),
    [
        (
            "suites:\n  - {name: Bad_Name, config: suite/skillab.yaml, cron: '0 3 * * *'}\n",
            None,
            "suites[0].name",
        ),
        (
            "suites:\n  - {name: ok, config: suite/skillab.yaml, cron: '61 3 * * *'}\n",
            None,
            "invalid cron string",
        ),
        (
            "suites:\n  - {name: ok, config: suite/skillab.yaml, cron: '0 3 * * *', timezone: Mars/Base}\n",
            None,
            "invalid timezone",
        ),
        (
            "suites:\n  - {name: ok, config: suite/skillab.yaml, cron: '0 3 * * *', crn: x}\n",
            None,
            "suites[0].crn: unknown field (did you mean 'cron'?)",
        ),
        (
            "suites:\n  - {name: ok, config: suite/skillab.yaml, cron: '0 3 * * *'}\n",
            "concurrency: lots\n",
            "suite ok: ",
        ),
        (
            "suites:\n  - {name: ok, config: suite/skillab.yaml, cron: '0 3 * * *'}\n",
            "variant: v1\n",
            "variant: unknown option (did you mean 'variants'?)",
        ),
        (
            "suites:\n  - {name: ok, config: missing.yaml, cron: '0 3 * * *'}\n",
            None,
            "missing.yaml: file not found",
        ),
        (
            "suites:\n  - {name: a, config: suite/skillab.yaml, cron: '0 3 * * *'}\n"
            "  - {name: a, config: suite/skillab.yaml, cron: '0 4 * * *'}\n",
            None,
            "duplicate name 'a'",
        ),
    ],
)
def test_bad_deployments(tmp_path: Path, body: str, config: str | None, expected: str) -> None:
    path = write(tmp_path, body, config or "variants: v1,v2\n")
    with pytest.raises(InputError) as info:
        load(path)
    assert any(expected in line for line in info.value.lines), info.value.lines


def test_a_trigger_suite_validates_and_builds_the_trigger_flow(tmp_path: Path) -> None:
    body = "suites:\n  - {name: triggers, mode: trigger, config: suite/triggers.yaml, cron: '0 4 * * *'}\n"
    path = write(tmp_path, body)
    (tmp_path / "suite" / "triggers.yaml").write_text(
        "skill: [skills/greeting-files]\nqueries: queries.yaml\nruns: 3\nmin-recall: 0.8\n"
    )
    (suite,) = load(path)
    assert suite.mode == "trigger"
    (deployment,) = build(path)
    assert deployment.flow_name == "nightly-triggers" and deployment.parameters["suite"] == "triggers"
    # a trigger option file is checked against the trigger options, not the sample ones
    (tmp_path / "suite" / "triggers.yaml").write_text("skill: x\nmin_recal: 0.8\nruns: 0\n")
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.lines == [
        f"{path}: suite triggers: {tmp_path / 'suite' / 'triggers.yaml'}: min_recal: unknown option "
        "(did you mean 'min_recall'?)"
    ]


def test_a_sample_suite_may_run_through_the_batch_api(tmp_path: Path) -> None:
    path = write(
        tmp_path, "suites:\n  - {name: cheap, config: suite/skillab.yaml, cron: '0 3 * * *', batch: true}\n"
    )
    (deployment,) = build(path)
    assert deployment.parameters["batch"] is True
    from flows.modes.sample.nightly import suite_options

    options, _ = suite_options(deployment.parameters["config"], "cheap", batch=True)
    assert options.batch and options.suite == "cheap" and options.variants == ("v1", "v2")
    body = (
        "suites:\n  - {name: t, mode: trigger, config: suite/skillab.yaml, cron: '0 3 * * *', batch: true}\n"
    )
    with pytest.raises(InputError) as info:
        load(write(tmp_path, body))
    assert any("batch: only sample suites" in line for line in info.value.lines)


def test_building_the_image_without_uv_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fleet's extra brings uv; a Python without it gets one line and exit 2, not a traceback."""
    import importlib.util

    from deployments.__main__ import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uv" else real(name, *a)
    )
    assert main(["--build-image"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("skillab: error: uv: not installed in") and "[fleet]" in line
    fleet = tomllib.loads(Path("pyproject.toml").read_text())["project"]["optional-dependencies"]["fleet"]
    assert any(d.startswith("uv==") for d in fleet)


@pytest.mark.usefixtures("prefect_harness")
def test_a_fleet_worker_of_a_pool_that_is_not_the_fleets_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Prefect's worker would make a missing pool with prefect-docker's own template (no network
    isolation): the fleet's worker serves only a Docker pool --register-fleet made."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from deployments.__main__ import main

    async def process_pool() -> None:
        async with get_client() as client:
            await client.create_work_pool(WorkPoolCreate(name="skillab-test-process-pool", type="process"))

    asyncio.run(process_pool())
    assert main(["--fleet-worker", "skillab-test-no-such-pool"]) == 2
    assert main(["--fleet-worker", "skillab-test-process-pool"]) == 2
    assert main(["--fleet-worker", "skillab-test-no-such-pool", "--limit", "0"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "skillab: error: --fleet-worker skillab-test-no-such-pool: no such work pool (python -m deployments "
        "--register-fleet skillab-test-no-such-pool --fleet-storage URL makes it)",
        "skillab: error: --fleet-worker skillab-test-process-pool: a process pool, not a Docker pool",
        "skillab: error: --limit 0: a worker runs at least one flow run at once",
    ]


def test_fleet_workers_share_the_waiting_runs_without_a_word_to_each_other() -> None:
    """Each waiting run has one owner among the pool's online workers, the same whoever computes it;
    each worker prepares the first it owns, so no two prepare the same one, and claims its prepared
    run, then its own, then the others' (those their owners prepare last)."""
    import uuid

    from deployments.fleet_worker import claim_order, owner, place

    names = ["w-b", "w-a", "w-c"]
    places = [place(name, names) for name in names]
    assert places == [(1, 3), (0, 3), (2, 3)] and place("w-d", names) == (3, 4)
    waiting = [uuid.UUID(int=n * 7919 + 13) for n in range(30)]
    owners = [owner(run_id, 3) for run_id in waiting]
    assert sorted(set(owners)) == [0, 1, 2]
    firsts = {me: next(r for r, o in zip(waiting, owners, strict=True) if o == me) for me, _ in places}
    assert len(set(firsts.values())) == 3  # three workers, three different runs prepared

    me = 1
    order = claim_order(waiting, {waiting[-1]}, (me, 3))
    assert sorted(order) == sorted(waiting)
    assert order[0] == waiting[-1]  # prepared here
    mine = [r for r, o in zip(waiting, owners, strict=True) if o == me and r != waiting[-1]]
    assert order[1 : 1 + len(mine)] == mine  # then its own, in the queue's order
    assert set(order[-2:]) == {firsts[0], firsts[2]}  # the others' prepared runs last
    assert claim_order(waiting, set(), (0, 1)) == waiting  # one worker: the queue's order


def test_a_run_claimed_while_its_container_is_started_ahead_takes_that_container(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A slot that frees before the container started ahead for its run is up (a busy machine): the
    run waits for that container and tells it to go, and no second container is made for it."""
    import asyncio
    import logging
    import uuid
    from types import SimpleNamespace

    import anyio

    from deployments import fleet_worker
    from flows.engine.container_engine import AHEAD_ENV

    worker = fleet_worker.FleetWorker(work_pool_name="p", name="w")
    flow_run: Any = SimpleNamespace(id=uuid.uuid4())
    up, told, made = anyio.Event(), list[str](), list[str]()

    async def start(configuration: Any) -> tuple[Any, None]:
        ahead = AHEAD_ENV in configuration.env
        if ahead:
            await up.wait()
        made.append("ahead" if ahead else "fresh")
        return SimpleNamespace(id=made[-1], name=made[-1], attrs={"State": {"ExitCode": 0}}), None

    def tell(container: Any) -> bool:
        told.append(container.name)
        return True

    async def resolve(*args: Any, **kwargs: Any) -> Any:
        return SimpleNamespace(env={})

    async def online(pool: str) -> list[Any]:
        return [SimpleNamespace(name="w")]

    monkeypatch.setattr(worker, "_start", start)
    monkeypatch.setattr(worker, "job_configuration", SimpleNamespace(resolve_for_flow_run=resolve))
    monkeypatch.setattr(worker, "_client", SimpleNamespace(read_workers_for_work_pool=online))
    monkeypatch.setattr(worker, "_work_pool", SimpleNamespace())
    monkeypatch.setattr(worker, "_get_infrastructure_pid", lambda container_id: f"host:{container_id}")
    monkeypatch.setattr(worker, "_watch_container_safe", lambda container, *_: container)
    monkeypatch.setattr(worker, "get_flow_run_logger", lambda run: logging.getLogger("test"))
    monkeypatch.setattr(fleet_worker, "alive", lambda *_: True)
    monkeypatch.setattr(fleet_worker, "_tell", tell)

    async def main() -> Any:
        worker.preparing = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(worker._start_ahead, [flow_run], worker.preparing)
            while worker.preparing_for != flow_run.id:
                await asyncio.sleep(0)
            result = await asyncio.gather(worker.run(flow_run, cast(Any, SimpleNamespace())), up_later())
        return result[0]

    async def up_later() -> None:
        await asyncio.sleep(0.05)
        up.set()

    result = asyncio.run(asyncio.wait_for(main(), 30))  # a regression fails the test, never hangs it
    assert made == ["ahead"] and told == ["ahead"] and result.identifier == "host:ahead"
    assert worker.ahead == {} and worker.preparing is None
