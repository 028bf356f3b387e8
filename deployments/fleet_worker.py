"""The fleet's worker (``python -m deployments --fleet-worker POOL``): prefect-docker's Docker worker
that starts the next flow run's container while the current one runs.

A container's start is most of what the fleet adds to a session (``docker create`` and start, then
Python and the container engine's imports: 0.5-0.8 s here). While a worker's one slot is busy and a
flow run waits in the pool, this worker creates and starts that run's container ahead, from the
same job configuration Prefect's worker would build when it claims the run (its session's storage
mounts, its provider key, nothing more), marked with ``AHEAD_ENV``: the container imports what it
needs and waits (flows/engine/container_engine.py). When the worker claims the run (Prefect's
PENDING, then the run's infrastructure), it tells that container to go (SIGUSR1) instead of making
one, and looks ahead again. A slot that frees takes the next waiting run at once, not at the
worker's next poll. Each container still serves one flow run and holds that one session's key and
storage, as with Prefect's own worker; the pool stays a Docker pool, which Prefect's ``prefect
worker start --type docker`` serves too (without any of this).

Workers looking at the same queue prepare different runs without a word to each other: the pool's
online workers, in order of name, share the waiting runs by their ids (:func:`owner`), and each
prepares the first waiting run it owns and, when a slot frees, claims its prepared run first, then
its own runs, then the others' (which their owners are likely preparing). Where two workers see the
pool differently for a moment (one joining, one gone), two may prepare the same run: its
infrastructure (set by the worker that claims it) names the container that runs it, and the others
end without touching the run (they read it every second). (Marking the run a worker prepares, with a
label, cost more than it saved: two writes to the server per run, and on a busy server the run was
often claimed before the mark was read back.) A container started ahead whose run was claimed
elsewhere, cancelled or deleted is removed at the worker's next poll; the worker's stop removes
those it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import sys
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID

import anyio.abc
import docker.errors
from docker.models.containers import Container
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from prefect.client.schemas.responses import WorkerFlowRunResponse
from prefect.events import Event
from prefect.exceptions import ObjectNotFound
from prefect.logging.configuration import setup_logging
from prefect.settings import PREFECT_WORKER_HEARTBEAT_SECONDS
from prefect.utilities.asyncutils import run_sync_in_worker_thread
from prefect.utilities.processutils import setup_signal_handlers_worker
from prefect_docker.worker import DockerWorker, DockerWorkerJobConfiguration, DockerWorkerResult

from executors.errors import InputError
from flows.engine.container_engine import AHEAD_ENV, CLAIMED_SIGNAL
from flows.engine.remote import alive


class FleetWorker(DockerWorker):
    """prefect-docker's worker, a container ahead for the pool's next waiting run."""

    @classmethod
    def __dispatch_key__(cls) -> str:
        # Prefect's registry of worker types keeps "docker" for prefect-docker's own class: this one
        # serves Docker pools too (its ``type``) without taking that name over in the registry
        return "skillab-fleet"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ahead: dict[UUID, tuple[Container, Event]] = {}  # flow run -> its container, started ahead
        # the container being started ahead (its run's id once chosen) and the event its start sets
        self.preparing: anyio.Event | None = None
        self.preparing_for: UUID | None = None
        self.polling = False
        self.place = (0, 1)  # this worker's place among the pool's online workers, and their number

    async def run(
        self,
        flow_run: FlowRun,
        configuration: DockerWorkerJobConfiguration,
        task_status: anyio.abc.TaskStatus[str] | None = None,
    ) -> DockerWorkerResult:
        """As prefect-docker's ``run``, with the container started ahead for this run if there is
        one still waiting (else a new one, as Prefect's worker makes it). A run whose container is
        being started ahead waits for that start: on a busy machine a slot can free before the start
        ends, and a second container for the same run would cost the start again."""
        if self.preparing is not None and self.preparing_for == flow_run.id:
            await self.preparing.wait()
        started = self.ahead.pop(flow_run.id, None)
        if started is not None and await run_sync_in_worker_thread(_tell, started[0]):
            container, created = started
            self.get_flow_run_logger(flow_run).info(f"Container {container.name!r} was started ahead")
        else:
            if started is not None:
                await run_sync_in_worker_thread(_remove, started[0])
            container, created = await self._start(configuration)
        pid = self._get_infrastructure_pid(container_id=container.id)
        if task_status:
            task_status.started(pid)
        container = cast(
            "Container",
            await run_sync_in_worker_thread(self._watch_container_safe, container, configuration, created),
        )
        exit_code = container.attrs["State"].get("ExitCode")
        return DockerWorkerResult(status_code=exit_code if exit_code is not None else -1, identifier=pid)

    async def _start(self, configuration: DockerWorkerJobConfiguration) -> tuple[Container, Event]:
        """A container made and started as prefect-docker makes them (in a thread: its client blocks)."""
        started = await run_sync_in_worker_thread(self._create_and_start_container, configuration)
        return cast("tuple[Container, Event]", started)

    async def _submit_scheduled_flow_runs(
        self, flow_run_response: list[WorkerFlowRunResponse]
    ) -> list[FlowRun]:
        """Prefect's submission of what the slots take, in :func:`claim_order`; then a container ahead
        for the first waiting run this worker owns. A container ahead whose run no longer waits
        (claimed elsewhere, cancelled, deleted) is removed first."""
        ahead = {*self.ahead, *([self.preparing_for] if self.preparing_for else [])}
        order = claim_order([r.flow_run.id for r in flow_run_response], ahead, self.place)
        by_id = {r.flow_run.id: r for r in flow_run_response}
        submitted = await super()._submit_scheduled_flow_runs([by_id[run_id] for run_id in order])
        waiting = [
            r.flow_run for r in flow_run_response if r.flow_run.id not in self._submitting_flow_run_ids
        ]
        still = {run.id for run in waiting} | self._submitting_flow_run_ids
        for run_id in [run_id for run_id in self.ahead if run_id not in still]:
            await run_sync_in_worker_thread(_remove, self.ahead.pop(run_id)[0])
        if waiting and not self.ahead and self.preparing is None and self._runs_task_group is not None:
            self.preparing = anyio.Event()
            self._runs_task_group.start_soon(self._start_ahead, waiting, self.preparing)
        return submitted

    async def _start_ahead(self, waiting: list[FlowRun], done: anyio.Event) -> None:
        """A container ahead for the first of ``waiting`` this worker owns (none if it owns none: its
        owner prepares it); ``done`` is set once it is started, or could not be."""
        try:
            workers = await self.client.read_workers_for_work_pool(self._work_pool_name)
            now = datetime.now(UTC)
            self.place = place(self.name, [w.name for w in workers if alive(w, now)])
            flow_run = next((r for r in waiting if owner(r.id, self.place[1]) == self.place[0]), None)
            if flow_run is None:
                return
            self.preparing_for = flow_run.id
            configuration = await self.job_configuration.resolve_for_flow_run(
                flow_run,
                client=self.client,
                work_pool=copy.deepcopy(self.work_pool),
                worker_name=self.name,
                worker_id=self.backend_id,
            )
            configuration.env[AHEAD_ENV] = "1"
            started = await self._start(configuration)
            self.ahead[flow_run.id] = started
            self._logger.info(f"Started container {started[0].name!r} ahead for flow run {flow_run.id}")
        except Exception as exc:  # the run is still claimed and started the usual way
            self._logger.warning(f"Could not start a container ahead: {exc}")
        finally:
            self.preparing, self.preparing_for = None, None
            done.set()

    def _release_limit_slot(self, flow_run_id: UUID) -> None:
        super()._release_limit_slot(flow_run_id)
        # the slot takes the next waiting run now: at Prefect's pace it would wait for the next poll
        # (PREFECT_WORKER_QUERY_SECONDS, 10 s by default), idle
        if self.is_setup and not self.polling and self._runs_task_group is not None:
            self.polling = True
            self._runs_task_group.start_soon(self._poll_now)

    async def _poll_now(self) -> None:
        try:
            await self.get_and_submit_flow_runs()
        except Exception as exc:  # the next poll tries again
            self._logger.warning(f"Could not look for waiting flow runs: {exc}")
        finally:
            self.polling = False

    async def teardown(self, *exc_info: Any) -> None:
        for container, _ in self.ahead.values():
            await run_sync_in_worker_thread(_remove, container)
        self.ahead.clear()
        await super().teardown(*exc_info)


def place(name: str, online: list[str]) -> tuple[int, int]:
    """``name``'s place among the ``online`` workers' names and its own, in order, and their number
    (a worker whose last heartbeat the busy server failed to record is still one of them)."""
    names = sorted({*online, name})
    return names.index(name), len(names)


def owner(run_id: UUID, workers: int) -> int:
    """The place of the worker that prepares flow run ``run_id`` among ``workers`` online workers: its
    id's number, modulo (ids are random: each worker owns about as many runs as the others)."""
    return run_id.int % workers


def claim_order(waiting: list[UUID], ahead: Collection[UUID], place: tuple[int, int]) -> list[UUID]:
    """The waiting runs (in the queue's order) in the order the worker at ``place`` claims them: its
    run with a container ahead, its own runs, the others' runs, and last the runs the others are
    likely preparing (each owner prepares the first waiting run it owns)."""
    me, workers = place
    firsts: dict[int, UUID] = {}
    for run_id in waiting:
        firsts.setdefault(owner(run_id, workers), run_id)

    def rank(run_id: UUID) -> tuple[bool, bool, bool]:
        theirs = owner(run_id, workers) != me
        return run_id not in ahead, theirs, theirs and firsts[owner(run_id, workers)] == run_id

    return sorted(waiting, key=rank)


def _tell(container: Container) -> bool:
    """Tell a container started ahead that its run is claimed; False if it is not running (ended
    on its own, or removed)."""
    try:
        container.reload()
        if container.status != "running":
            return False
        container.kill(signal=CLAIMED_SIGNAL)
    except docker.errors.APIError:
        return False
    return True


def _remove(container: Container) -> None:
    with contextlib.suppress(docker.errors.APIError):  # removed already (auto-remove, once it ended)
        container.remove(force=True)


async def docker_pool(pool: str) -> None:
    """The pool must exist and be a Docker pool: made by ``--register-fleet``, with the fleet's job
    template. (Prefect's worker would make a missing pool with prefect-docker's own template: no
    network isolation, no seccomp profile, the capabilities Docker grants by default.)"""
    async with get_client() as client:
        try:
            found = await client.read_work_pool(pool)
        except ObjectNotFound:
            raise InputError(
                f"--fleet-worker {pool}: no such work pool (python -m deployments --register-fleet {pool} "
                "--fleet-storage URL makes it)"
            ) from None
    if found.type != "docker":
        raise InputError(f"--fleet-worker {pool}: a {found.type} pool, not a Docker pool")


def run_worker(pool: str, limit: int, name: str | None) -> int:
    """Run the worker until SIGINT or SIGTERM (then it removes its containers started ahead)."""
    setup_logging()  # as Prefect's command line does: the worker's log here, a flow run's in its run

    def say(*args: Any, **kwargs: Any) -> None:
        print(*args, file=sys.stderr)

    # as `prefect worker start`: the first SIGTERM or SIGINT stops polling and ends the worker
    setup_signal_handlers_worker(os.getpid(), "the fleet worker", say)

    async def main() -> None:
        await docker_pool(pool)
        async with FleetWorker(
            name=name,
            work_pool_name=pool,
            limit=limit,
            heartbeat_interval_seconds=int(PREFECT_WORKER_HEARTBEAT_SECONDS.value()),
            create_pool_if_not_found=False,
        ) as worker:
            await worker.start(printer=say)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0
