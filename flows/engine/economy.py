"""Paying less for the same units, before the fan-out: one warm-up call per cacheable prefix, and
units sent through a provider's batch API (half price) for runs nobody waits on.

Both run before the live fan-out and leave the live path untouched: a warmed prefix is simply read
from the provider's cache by the calls that follow, and a batched unit arrives with its result (and
is stored in the result cache, so a re-run finds it).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass

from executors.base import Executor
from executors.batch import batch_client
from executors.errors import PermanentError, TransientError
from executors.registry import get_executor
from executors.schema import RunRequest, RunResult
from tasks.schema import CallPolicy, Unit, UnitKind
from tasks.store.batches import BatchStore, run_batches
from tasks.store.cache import ResultCache


@dataclass(frozen=True)
class BatchMode:
    """--batch: wait for every batch to end (polling every ``poll_s``), or poll once and leave the
    rest to the next run (``wait`` False: those units are reported as pending, not run)."""

    wait: bool = True
    poll_s: float = 60.0


def over_budget(calls: int, spent: float, max_calls: int | None, budget_usd: float | None) -> bool:
    """--max-calls or --budget-usd reached: no new call may be scheduled."""
    return (max_calls is not None and calls >= max_calls) or (budget_usd is not None and spent >= budget_usd)


def warm_up_requests(units: list[Unit], policy: CallPolicy) -> list[tuple[str, RunRequest]]:
    """(executor, one-token request) per cacheable prefix that at least two of ``units`` share."""
    warm: dict[str, tuple[str, RunRequest]] = {}
    shared: Counter[str] = Counter()
    # Whether a provider caches a prompt depends on its executor, the model and the system prompt
    # only: asked once for each (a run's units share a few), not for each of its 1,000 units (~10 ms
    # of the event loop as the fan-out takes over from the head start).
    caching: dict[tuple[str, str, str | None], Executor | None] = {}
    for unit in units:
        if unit.kind != UnitKind.EXECUTE:
            continue
        asked = unit.request
        which = (asked.executor, asked.model, asked.system)
        if which not in caching:
            executor = get_executor(asked.executor, policy.settings())
            caching[which] = executor if executor.caches(asked) else None
        if (cacher := caching[which]) is None:
            continue
        request = cacher.warm_up_of(asked)  # cached, as asked above: not asked again for each unit
        prefix = request.model_dump_json()  # the prompt is the warm-up's own: this is the prefix
        warm[prefix] = (asked.executor, request)
        shared[prefix] += 1
    return [warm[p] for p in warm if shared[p] >= 2]


async def warm_up(units: list[Unit], policy: CallPolicy) -> list[RunResult]:
    """One call per cacheable prefix that at least two of ``units`` share, all awaited before the
    fan-out: concurrent first calls would otherwise all miss the cache (and on Anthropic each would
    pay the cache-write premium). A failed warm-up costs only the saving, never the run."""

    async def one(executor: str, request: RunRequest) -> RunResult | None:
        try:
            run = get_executor(executor, policy.settings()).run(request)
            return await asyncio.wait_for(run, policy.timeout_s)
        except (TransientError, PermanentError, TimeoutError):
            return None

    done = await asyncio.gather(*(one(*pair) for pair in warm_up_requests(units, policy)))
    return [r for r in done if r is not None]


async def run_batched(
    units: list[Unit], policy: CallPolicy, mode: BatchMode
) -> tuple[dict[str, RunResult], list[Unit]]:
    """(unit key -> result collected now, units whose batch has not ended). Units of executors
    without a batch API are in neither: they go through the live fan-out. Successful results are
    stored in the result cache before their batch is marked collected, so a killed run resumes by
    batch id and pays for nothing twice."""
    if policy.cache_dir is None:
        raise ValueError("batching needs the result cache")
    store, cache = BatchStore(policy.cache_dir), ResultCache(policy.cache_dir)

    async def keep(key: str, result: RunResult) -> None:
        if result.ok:
            await asyncio.to_thread(cache.put, key, result.model_dump(mode="json"))

    collected: dict[str, RunResult] = {}
    waiting: list[Unit] = []
    for name in sorted({u.request.executor for u in units}):
        client = batch_client(get_executor(name, policy.settings()))
        if client is None:
            continue
        group = [u for u in units if u.request.executor == name]
        got = await run_batches(
            client, {u.key: u.request for u in group}, store, keep, wait=mode.wait, interval_s=mode.poll_s
        )
        collected |= {u.key: got[u.key] for u in group if u.key in got}
        waiting += [u for u in group if u.key not in got]
    return collected, waiting
