"""One Prefect task run per unit, without Prefect's task engine: each model call is a task run in the
UI (its name, its states Running, AwaitingRetry, Retrying, Completed or Failed with why, its times),
made the way the engine makes one, by the ``prefect.task-run.<State>`` events the server's task run
recorder turns into task runs, but built as plain data and sent in batches to ``POST /api/events``.

The engine's own task run costs the command about 3.5 ms of CPU a unit (its state machine, the
pydantic models of each state and event, a websocket message each) and the server more; these cost
about 0.08 ms here and two events a unit, so a 1,000-call run is the ideal plus little (measured:
benchmarks/RESULTS.md). What the engine added and skillab keeps itself: the retries of a transient
failure, with the run's backoff and a server's Retry-After (Prefect's own retry policy is not used),
and the result, which skillab's cache already keeps.

The events are telemetry: a failure to send them is logged and never fails the run. Outside a flow
run (a unit test calling the runner alone) nothing is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import random
import uuid
from typing import Any

import orjson

from executors.errors import TransientError
from executors.schema import ErrorKind, RunResult
from tasks.calls import attempt
from tasks.context import current
from tasks.schema import CallPolicy, Unit
from tasks.unit_label import UNIT_LABEL

log = logging.getLogger("skillab.unit_runs")
#: The task key every unit's task run carries (the engine's would be the task function's).
TASK_KEY = "call_model"
FLUSH_S = 0.5  # how late the UI may see a state
BATCH = 1_000  # events a request (about 1.4 KB each)
MAX_MESSAGE = 100_000  # Prefect cuts a state's message there too


_ids: list[str] = []
IDS_READ = 256  # ids per read of the OS's randomness


def new_id() -> str:
    """A random (version 4) UUID, as ``uuid.uuid4`` makes, from one read of the OS's randomness per
    256: each read is a system call, ~50 us on a loaded 2-core machine here, and a unit takes two
    or three ids (0.17 s of the event loop's time in a 1,000-unit run)."""
    while True:
        try:
            return _ids.pop()
        except IndexError:
            raw = os.urandom(16 * IDS_READ)
            _ids.extend(str(uuid.UUID(bytes=raw[i : i + 16], version=4)) for i in range(0, len(raw), 16))


# a forked process (a warm process's command) must not draw the ids its parent and siblings will
os.register_at_fork(after_in_child=_ids.clear)


def _iso(at: dt.datetime) -> str:
    return at.isoformat()


def retry_cause(error: TransientError) -> str:
    """The kind of a transient cause, for counting: HTTP 429, timeout, or the error's type."""
    if error.timeout:
        return "timeout"
    return f"HTTP {error.status}" if error.status else type(error).__name__


def failed_result(exc: BaseException | None, unit: Unit, policy: CallPolicy) -> RunResult:
    """A call that still failed after its retries, as data: its cause, kind and attempts."""
    message = str(exc) or type(exc).__name__
    kind = getattr(exc, "kind", ErrorKind.ERROR)
    if isinstance(exc, TransientError) and exc.timeout:
        kind = ErrorKind.TIMEOUT
    attempts = policy.retries + 1 if isinstance(exc, TransientError) else 1
    return RunResult(ok=False, error=message, error_kind=kind, attempts=attempts, model=unit.request.model)


class UnitRun:
    """One unit's task run: its id, name, when it started, and its Running event while unsent."""

    __slots__ = ("id", "key", "name", "running", "runs", "start")

    def __init__(self, name: str, key: str) -> None:
        self.id, self.name, self.key = new_id(), name, key
        self.start = dt.datetime.now(dt.UTC)
        self.runs = 1
        self.running: dict[str, Any] | None = None


class UnitRuns:
    """The task runs of one flow run's units, their events batched to the Prefect API."""

    def __init__(self, flow_run: Any | None, flow_name: str | None, retries: int) -> None:
        self.flow_run = flow_run
        self.retries = retries
        self.related: list[dict[str, str]] = []
        if flow_run is not None:
            self.related.append(
                {
                    "prefect.resource.id": f"prefect.flow-run.{flow_run.id}",
                    "prefect.resource.role": "flow-run",
                    "prefect.resource.name": str(flow_run.name),
                }
            )
            self.related.append(
                {
                    "prefect.resource.id": f"prefect.flow.{flow_run.flow_id}",
                    "prefect.resource.role": "flow",
                    **({"prefect.resource.name": flow_name} if flow_name else {}),
                }
            )
        self.pending: list[dict[str, Any]] = []
        self.wake = asyncio.Event()
        self.stopping = False
        self.client: Any = None
        self.flusher: asyncio.Task[None] | None = None

    @classmethod
    def of_current_flow(cls, retries: int) -> UnitRuns:
        """For the flow run this runs in (none: nothing is sent)."""
        from prefect.context import FlowRunContext

        ctx = FlowRunContext.get()
        run = ctx.flow_run if ctx is not None else None
        return cls(run, ctx.flow.name if ctx is not None and ctx.flow else None, retries)

    async def __aenter__(self) -> UnitRuns:
        if self.flow_run is not None:
            from prefect.client.orchestration import get_client

            self.client = get_client()
            await self.client.__aenter__()
            self.flusher = asyncio.create_task(self._flush_every())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.flusher is not None:
            self.stopping = True
            self.wake.set()
            await self.flusher
            await self.flush()  # what is left, before the flow run ends
            await self.client.__aexit__(None, None, None)

    # ------------------------------------------------------------------ one unit

    async def call(self, unit: Unit, policy: CallPolicy) -> RunResult:
        """The unit's answer, as a task run: the head start's call if it sent one (the first attempt),
        else a call; a transient failure retried after the policy's backoff (and a server's
        Retry-After), told to whoever listens; a failure that outlived its retries, or a permanent
        one, returned as data."""
        run = UnitRun(unit.label, unit.key)
        self._event(run, "RUNNING", "Running", run.start)
        early = current().early.take(unit.key)
        number = 1
        while True:
            try:
                if early is not None and number == 1:
                    # most of them are answered by the time the runner takes over: taken at once, not
                    # through a trip around the event loop each (~250 at once, delaying the first calls)
                    done = early.done() and not early.cancelled()  # a cancelled one raises as it did
                    result = early.result() if done else await asyncio.wrap_future(early)
                else:
                    result = await attempt(unit, policy, number)
            except TransientError as exc:
                if number > policy.retries:
                    return self._failed(run, exc, unit, policy)
                await self._retry(run, exc, unit, policy, number)
                number += 1
                continue
            except Exception as exc:  # permanent: this unit's data
                return self._failed(run, exc, unit, policy)
            self._event(run, "COMPLETED", "Completed", dt.datetime.now(dt.UTC), end=True)
            return result

    async def _retry(
        self, run: UnitRun, exc: TransientError, unit: Unit, policy: CallPolicy, number: int
    ) -> None:
        listener = current().on_retry  # the run's progress tells a person why calls are retried
        if listener is not None:
            listener(unit.label, retry_cause(exc), f"attempt {number}: {exc}")
        now = dt.datetime.now(dt.UTC)
        self._event(run, "SCHEDULED", "AwaitingRetry", now, message=f"{type(exc).__name__}: {exc}")
        wait = policy.backoff_s * 2 ** (number - 1) * (1 + random.random() * 0.5)
        if exc.retry_after:
            wait += min(exc.retry_after, policy.max_retry_after_s) * (1 + random.random() * 0.1)
        await asyncio.sleep(wait)
        run.runs += 1
        self._event(run, "RUNNING", "Retrying", dt.datetime.now(dt.UTC))

    def _failed(self, run: UnitRun, exc: BaseException, unit: Unit, policy: CallPolicy) -> RunResult:
        result = failed_result(exc, unit, policy)
        message = f"{type(exc).__name__}: {result.error}"[:MAX_MESSAGE]
        self._event(run, "FAILED", "Failed", dt.datetime.now(dt.UTC), message=message, end=True)
        return result

    # ------------------------------------------------------------------ the events

    def _event(
        self, run: UnitRun, kind: str, name: str, at: dt.datetime, message: str = "", end: bool = False
    ) -> None:
        """One state of the task run, as the engine states it (the fields the recorder reads)."""
        if self.flow_run is None:
            return
        start = _iso(run.start)
        task_run: dict[str, Any] = {
            "name": run.name,
            "task_key": TASK_KEY,
            "dynamic_key": run.key,  # unique within the flow run: the recorder merges equal keys
            "tags": [],
            "labels": {},
            "empirical_policy": {"retries": self.retries, "max_retries": self.retries, "retry_delay": 0},
            "task_inputs": {},
            "run_count": run.runs,
            "flow_run_run_count": 1,
            "expected_start_time": start,
            "start_time": start,
            "total_run_time": (at - run.start).total_seconds() if end else 0.0,
        }
        if end:
            task_run["end_time"] = _iso(at)
            if run.running is not None:  # it ended before its Running state left: the end says it all
                run.running["skip"] = True
        event = {
            "id": new_id(),  # the state's id
            "occurred": _iso(at),  # the state's time: the newest state is the run's
            "event": f"prefect.task-run.{name}",
            "resource": {
                "prefect.resource.id": f"prefect.task-run.{run.id}",
                "prefect.resource.name": run.name,
                "prefect.run-count": str(run.runs),
                "prefect.state-message": message,
                "prefect.state-name": name,
                "prefect.state-timestamp": _iso(at),
                "prefect.state-type": kind,
                "prefect.orchestration": "client",  # the recorder takes only these
                UNIT_LABEL: run.key,  # kept out of the server's event history (tasks/unit_label.py)
            },
            "related": self.related,
            "payload": {
                "validated_state": {"type": kind, "name": name, "message": message, "state_details": {}},
                "task_run": task_run,
            },
        }
        self.pending.append(event)
        run.running = event if kind == "RUNNING" and not end else None
        if len(self.pending) >= BATCH:
            self.wake.set()

    async def _flush_every(self) -> None:
        while not self.stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), FLUSH_S)
            self.wake.clear()
            await self.flush()

    async def flush(self) -> None:
        """Send what is pending. A Running state whose unit ended since is not sent: the end carries
        the start and end times (a 200 ms call then costs the server one event, not two)."""
        events, self.pending = [e for e in self.pending if "skip" not in e], []
        for i in range(0, len(events), BATCH):
            body = orjson.dumps(events[i : i + BATCH])
            try:
                response = await self.client.request(
                    "POST", "/events", content=body, headers={"content-type": "application/json"}
                )
                response.raise_for_status()
            except Exception as exc:  # telemetry: a lost batch costs the UI its states, never the run
                log.warning("the Prefect API took no task run states (%d lost): %s", len(events) - i, exc)
                return
