"""The model-call task: one Prefect task run per unit, retried only on transient errors. A unit's
first attempt may have left before its task run existed (the run's head start, tasks/calls.py)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as task_run_ctx

from executors.errors import TransientError
from executors.schema import RunResult
from tasks.calls import EARLY, attempt
from tasks.schema import CallPolicy, Unit

#: flow run id -> what to tell when one of its calls is about to be retried: (task run name, the
#: cause's kind, the cause). The flow's progress registers itself here, so a person watching the run
#: reads why calls are retried without a log line per retry.
RETRY_LISTENERS: dict[str, Callable[[str, str, str], None]] = {}


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
    listener = RETRY_LISTENERS.get(str(getattr(task_run, "flow_run_id", "")))
    if listener is not None:
        listener(str(task_run.name), retry_cause(outcome), f"attempt {task_run.run_count}: {outcome}")
    return True


@task(
    name="call-model",
    task_run_name="{unit.label}",
    cache_policy=NO_CACHE,  # resume is handled by tasks.cache, consulted before fan-out
    persist_result=False,
    retries=3,
    retry_delay_seconds=1.0,
    retry_jitter_factor=0.5,
    retry_condition_fn=retry_transient,
)
async def call_model(unit: Unit, policy: CallPolicy) -> RunResult:
    early = EARLY.take(unit.key)  # sent during the run's head start: this is its first attempt
    try:
        if early is not None:
            return await asyncio.wrap_future(early)
        return await attempt(unit, policy, task_run_ctx.run_count or 1)
    except TransientError as exc:
        attempt_no = task_run_ctx.run_count or 1
        # Prefect waits policy.backoff_s before each retry (one number: the UI shows a list of delays
        # as "NaN"); the rest of the exponential backoff is waited here, and Retry-After on top, so
        # the next try is never earlier than the server asked.
        wait = policy.backoff_s * (2 ** (attempt_no - 1) - 1)
        if exc.retry_after:
            wait += min(exc.retry_after, policy.max_retry_after_s) * (1 + random.random() * 0.1)
        if wait > 0 and attempt_no <= policy.retries:
            await asyncio.sleep(wait)
        raise


def with_policy(policy: CallPolicy) -> Any:
    """The task with the run's retry count and first retry delay (the task doubles it after)."""
    return call_model.with_options(retries=policy.retries, retry_delay_seconds=policy.backoff_s)
