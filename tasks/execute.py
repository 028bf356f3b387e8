"""The model-call tasks: one Prefect task run per unit (the default), or one per group of units
(``--units-per-task``), retried only on transient errors. A unit's first attempt may have left
before its task run existed (the run's head start, tasks/calls.py)."""

from __future__ import annotations

import asyncio
import random
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as task_run_ctx

from executors.errors import TransientError
from executors.schema import ErrorKind, RunResult
from tasks.calls import attempt
from tasks.context import current
from tasks.schema import CallPolicy, Unit


def retry_cause(error: TransientError) -> str:
    """The kind of a transient cause, for counting: HTTP 429, timeout, or the error's type."""
    if error.timeout:
        return "timeout"
    return f"HTTP {error.status}" if error.status else type(error).__name__


def retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Retry 429/5xx/timeouts/resets; never a bad request or a bad key. A plain function, as Prefect needs."""
    # _sync: in an async task, result() would return an un-awaited coroutine and never raise.
    outcome = state.result(raise_on_failure=False, _sync=True)
    if not isinstance(outcome, TransientError):
        return False
    # the flow's progress listens, so a person watching the run reads why calls are retried
    listener = current().on_retry
    if listener is not None:
        listener(str(task_run.name), retry_cause(outcome), f"attempt {task_run.run_count}: {outcome}")
    return True


def failed_result(exc: BaseException | None, unit: Unit, policy: CallPolicy) -> RunResult:
    """A call that still failed after its retries, as data: its cause, kind and attempts."""
    message = str(exc) or type(exc).__name__
    kind = getattr(exc, "kind", ErrorKind.ERROR)
    if isinstance(exc, TransientError) and exc.timeout:
        kind = ErrorKind.TIMEOUT
    attempts = policy.retries + 1 if isinstance(exc, TransientError) else 1
    return RunResult(ok=False, error=message, error_kind=kind, attempts=attempts, model=unit.request.model)


async def answer(unit: Unit, policy: CallPolicy) -> RunResult:
    """The unit's answer in this attempt of its task run: the head start's call if it sent one (then
    it is the first attempt), else a new call. A transient error is raised after its backoff."""
    number = task_run_ctx.run_count or 1
    early = current().early.take(unit.key)
    try:
        if early is not None:
            return await asyncio.wrap_future(early)
        return await attempt(unit, policy, number)
    except TransientError as exc:
        # Prefect waits policy.backoff_s before each retry (one number: the UI shows a list of delays
        # as "NaN"); the rest of the exponential backoff is waited here, and Retry-After on top, so
        # the next try is never earlier than the server asked.
        wait = policy.backoff_s * (2 ** (number - 1) - 1)
        if exc.retry_after:
            wait += min(exc.retry_after, policy.max_retry_after_s) * (1 + random.random() * 0.1)
        if wait > 0 and number <= policy.retries:
            await asyncio.sleep(wait)
        raise


RETRIED: dict[str, Any] = {
    "cache_policy": NO_CACHE,  # resume is handled by tasks.store.cache, consulted before fan-out
    "persist_result": False,
    "retries": 3,
    "retry_delay_seconds": 1.0,
    "retry_jitter_factor": 0.5,
    "retry_condition_fn": retry_transient,
}


@task(name="call-model", task_run_name="{unit.label}", **RETRIED)
async def call_model(unit: Unit, policy: CallPolicy) -> RunResult:
    return await answer(unit, policy)


class UnitSink(Protocol):
    """The runner's side of a group of units: a concurrency slot within the budgets (False: not
    run), whether a unit has its result already, where each result goes as soon as it is in, and
    each unit's latest transient error (its cause if the retries run out)."""

    def slot(self, unit: Unit) -> AbstractAsyncContextManager[bool]: ...

    def has(self, unit: Unit) -> bool: ...

    def put(self, unit: Unit, result: RunResult) -> None: ...

    def retried(self, unit: Unit, error: TransientError) -> None: ...


@task(name="call-models", task_run_name="{label}", **RETRIED)
async def call_models(units: list[Unit], policy: CallPolicy, sink: UnitSink, label: str) -> int:
    """Several units in one task run, each called as call-model would call it. A unit whose call
    fails for good is a failed result, not a failed group; when some failed transiently, the group
    fails with the error that asks the longest wait, and its retry calls only those again.
    Returns how many units have a result."""
    transient: list[TransientError] = []

    async def one(unit: Unit) -> None:
        async with sink.slot(unit) as go:
            if not go:
                return
            try:
                result = await answer(unit, policy)
            except TransientError as exc:
                transient.append(exc)
                sink.retried(unit, exc)
                return
            except Exception as exc:  # permanent: this unit's data, the others go on
                result = failed_result(exc, unit, policy)
            sink.put(unit, result)

    await asyncio.gather(*(one(u) for u in units if not sink.has(u)))
    if transient:
        raise max(transient, key=lambda e: e.retry_after or 0.0)
    return sum(sink.has(u) for u in units)


def with_policy(policy: CallPolicy, grouped: bool = False) -> Any:
    """A model-call task with the run's retry count and first retry delay (the task doubles it after)."""
    fn = call_models if grouped else call_model
    return fn.with_options(retries=policy.retries, retry_delay_seconds=policy.backoff_s)
