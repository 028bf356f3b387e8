"""The grading task: deterministic and custom assertions for every output, graded as it arrives."""

from __future__ import annotations

import asyncio
import queue
import threading

from prefect import task
from prefect.cache_policies import NO_CACHE

from executors.schema import RunResult
from graders import registry
from graders.schema import AssertionResult, Observation, Sample
from tasks.store.cache import take


def grade_one(sample: Sample, result: RunResult) -> list[AssertionResult]:
    """The sample's assertions on one output; semantic_similarity is left to the judge stage."""
    obs = Observation(
        output=result.output, cost_usd=result.cost_usd, latency_ms=result.latency_ms, sample=sample
    )
    return [registry.run_assertion(a, obs) for a in sample.assertions if not registry.is_judged(a)]


class Outputs:
    """The outputs to grade, keyed by unit, put as their calls end (from the event loop) and graded
    by a thread of their own meanwhile: at the end of a run only the last answers are left to grade
    (at 10,000 units the grading took 0.2-0.3 s after the last reply). A thread, not the event loop:
    a custom check's subprocess or a slow pattern must not hold up the calls in flight."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Sample, RunResult] | None] = queue.SimpleQueue()
        self._abandoned = False
        self._closed = threading.Event()  # no pause for more outputs once there will be none

    def put(self, key: str, sample: Sample, result: RunResult) -> None:
        self._queue.put((key, sample, result))

    def close(self, *, abandon: bool = False) -> None:
        """No more outputs: the grading ends once those put are graded, or, ``abandon``ed (the run
        was stopped), after the check under way (a custom check may take seconds)."""
        self._abandoned = abandon
        self._queue.put(None)
        self._closed.set()

    def grade_all(self) -> Graded:
        graded = {}
        while not self._abandoned and (item := take(self._queue, self._closed)) is not None:
            key, sample, result = item
            graded[key] = grade_one(sample, result)
        return Graded(graded)


class Graded:
    """Each output's assertion results, by unit key. One object to Prefect: a task's dict result has
    each of its keys and values linked to the task run's state (8-18 ms at 1,000 units, after the
    last reply)."""

    __slots__ = ("__weakref__", "by_key")

    def __init__(self, by_key: dict[str, list[AssertionResult]]) -> None:
        self.by_key = by_key


@task(name="grade-outputs", task_run_name="grade outputs", cache_policy=NO_CACHE, persist_result=False)
async def grade_outputs(outputs: Outputs) -> Graded:
    """One task for the run's outputs, running while they come (a task run costs ~10 ms, an
    assertion microseconds): each output's assertion results once ``outputs`` is closed. Async, as
    ``aggregate_results`` is, for the flow's Prefect client."""
    return await asyncio.to_thread(outputs.grade_all)
