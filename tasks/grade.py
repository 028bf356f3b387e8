"""The grading task: deterministic and custom assertions for a batch of outputs."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from executors.schema import RunResult
from graders import registry
from graders.schema import AssertionResult, Observation, Sample


@task(name="grade-outputs", task_run_name="grade outputs", cache_policy=NO_CACHE, persist_result=False)
async def grade_outputs(items: list[tuple[Sample, RunResult]]) -> list[list[AssertionResult]]:
    """One task for the whole batch: a task run costs ~10 ms, an assertion microseconds.
    semantic_similarity is left to the judge stage. Async, as ``aggregate_results`` is, for the flow's
    Prefect client; the assertions run inline, as they would in a sync task called from the flow."""
    out = []
    for sample, result in items:
        obs = Observation(
            output=result.output, cost_usd=result.cost_usd, latency_ms=result.latency_ms, sample=sample
        )
        out.append([registry.run_assertion(a, obs) for a in sample.assertions if not registry.is_judged(a)])
    return out
