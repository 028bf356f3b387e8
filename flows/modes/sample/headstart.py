"""A run's head start: its first model calls leave while the command is still importing Prefect and
creating the flow run (1-2 s; on a first run, the seconds its Prefect server takes to start).

Each early call is its unit's first attempt, handed to the unit's task run (tasks/calls.py): a
failure is retried by Prefect as any first attempt's, an answer is cached as any other, and the run
counts, budgets and reports every unit as before. Early calls go out in the run's order and at its
concurrency, within --max-calls and --budget-usd, until the runner's fan-out takes over. A cap in
waves left the calls idle whenever Prefect took longer than the waves (0.5 s of a 1,000-unit run
against a 200 ms server), so the bound is time: ``LIMIT_S`` of sending, what a run may spend before
its flow run exists. The command ending first (an error, Ctrl-C) ends it too, and what was answered
by then stays in the cache.

Runs whose shape decides what goes first get none: batches, prompt-cache warm-ups, --sequential
waves, shards, a judge gold check, a model the command loads itself (the embedded one).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, InvalidStateError
from typing import Any

from executors.base import HttpExecutor
from executors.registry import get_executor
from executors.schema import RunRequest, RunResult
from flows.engine.economy import over_budget, warm_up_requests
from flows.modes.sample.prepare import Prepared
from tasks.calls import attempt
from tasks.context import EarlyCalls, RunContext
from tasks.schema import Unit
from tasks.store.cache import ResultCache

LIMIT_S = 30.0  # a first run's Prefect server starts in ~3 s; a stuck one is the command's to end


@contextlib.contextmanager
def head_start(prepared: Prepared, run: RunContext) -> Iterator[threading.Thread | None]:
    """While the block runs (the command's flow), the run's first calls go out from a thread of
    their own, registered in the run's early calls for their task runs (their answers cached by the
    run's cache thread); the thread, or None when the run's shape rules a head start out."""
    thread = None
    early = run.early
    if eligible(prepared):
        early.open()
        sender = HeadStart(prepared, early)

        def target() -> None:
            with run.active():
                sender.run()

        thread = threading.Thread(target=target, name="skillab-head-start", daemon=True)
        thread.start()
    try:
        yield thread
    finally:
        early.close()  # the flow ended before its fan-out, or after: nothing more goes out early


def eligible(prepared: Prepared) -> bool:
    o = prepared.options
    return (
        o.head_start
        and not (o.dry_run or o.batch or o.sequential or o.shards > 1)
        and prepared.gold is None
        and isinstance(prepared.target.executor, HttpExecutor)
    )


class HeadStart:
    """The sending side: the thread's own event loop and connections, closed when it is done."""

    def __init__(self, prepared: Prepared, early: EarlyCalls) -> None:
        self.prepared = prepared
        self.early = early
        self.policy = prepared.policy(prepared.target)
        self.executor = get_executor(prepared.target.executor.name, self.policy.settings())
        self.spent = 0.0

    def run(self) -> None:
        asyncio.run(self.send())

    def first_units(self) -> Iterator[Unit]:
        """The units the runner would send first: in the run's order, not in the cache; made as they
        are taken, unless the provider's prompt cache could make the runner warm it up first."""
        if self.cacheable_artifact() and warm_up_requests(self.prepared.units(), self.policy):
            return  # the runner warms the provider's cache before any call: none may go first
        cache = ResultCache(self.prepared.cache_dir) if self.prepared.cache_dir else None
        yield from (u for u in self.prepared.iter_units() if cache is None or cache.get(u.key) is None)

    def cacheable_artifact(self) -> bool:
        """Some variant's artifact is long enough for the provider's prompt cache: only then may the
        runner warm it up (a unit's system prompt is its variant's artifact)."""
        target = self.prepared.target
        return any(
            self.executor.caches(
                RunRequest(executor=target.executor.name, model=target.model, system=v.artifact, prompt="")
            )
            for v in self.prepared.variants
        )

    async def send(self) -> None:
        o = self.prepared.options
        slots = asyncio.Semaphore(o.concurrency)
        sent: list[asyncio.Task[None]] = []
        until = time.monotonic() + LIMIT_S
        try:
            for unit in self.first_units():
                await slots.acquire()
                call: Future[RunResult] = Future()
                spent = over_budget(len(sent), self.spent, o.max_calls, o.budget_usd)
                if time.monotonic() > until or spent or not self.early.add(unit.key, call):
                    break
                sent.append(asyncio.create_task(self.one(unit, call, slots)))
        finally:  # even if walking the units failed: a task run waits for each call registered
            await asyncio.gather(*sent)
            await self.executor.aclose()

    async def one(self, unit: Unit, call: Future[RunResult], slots: asyncio.Semaphore) -> None:
        try:
            result = await attempt(unit, self.policy, 1)
        except Exception as exc:  # the task run raises it: Prefect decides on a retry
            settle(call.set_exception, exc)
        else:
            self.spent += result.cost_usd
            settle(call.set_result, result)
        finally:
            slots.release()


def settle(setter: Callable[[Any], None], value: Any) -> None:
    """Set a call's outcome unless its task run was cancelled while waiting for it."""
    with contextlib.suppress(InvalidStateError):
        setter(value)
