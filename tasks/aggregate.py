"""The aggregation task: the run's graded records into the report's figures (tasks/stats/aggregate.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.stats.aggregate import aggregate

P = ParamSpec("P")
R = TypeVar("R")


def _on_flow_loop(fn: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Async for the flow's Prefect client: a sync task in an async flow opens a client of its own
    (an SSL context and a connection pool, 0.1-0.2 s on these machines, at the end of every run).
    ``wraps`` keeps ``fn``'s signature, which Prefect binds the task's parameters to."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return fn(*args, **kwargs)

    return run


aggregate_results = task(
    name="aggregate-results", task_run_name="aggregate results", cache_policy=NO_CACHE, persist_result=False
)(_on_flow_loop(aggregate))
