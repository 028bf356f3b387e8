"""The aggregation task: the run's graded records into the report's figures (tasks/stats/aggregate.py)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from graders.schema import Sample
from tasks.schema import Record, Scale
from tasks.stats.aggregate import aggregate
from tasks.stats.figures import Aggregate


@task(
    name="aggregate-results", task_run_name="aggregate results", cache_policy=NO_CACHE, persist_result=False
)
async def aggregate_results(
    records: list[Record],
    samples: list[Sample],
    variants: list[str],
    control: str,
    scale: Scale,
    seed: int,
    margin: float | None,
    min_effect: float | None,
    max_error_rate: float,
) -> Aggregate:
    """Async for the flow's Prefect client: a sync task in an async flow opens a client of its own
    (an SSL context and a connection pool, 0.1-0.2 s on these machines, at the end of every run)."""
    return aggregate(
        records,
        samples,
        variants,
        control,
        scale,
        seed=seed,
        margin=margin,
        min_effect=min_effect,
        max_error_rate=max_error_rate,
    )
