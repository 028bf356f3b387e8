"""The unit runner: every unit of every mode (a model call, a judge call, an agent session) runs
here, as a Prefect task under the run's concurrency cap, within --max-calls and --budget-usd, cached
units skipped, its progress shown and its retries counted; what it did is read back as a frozen
``RunStats`` (calls or sessions started, cache hits, spend, the units a budget kept from running).

The runner knows nothing of samples, reports or modes: sample mode, shards, the judge and both
session modes (agentic, trigger) drive it with a ``RunnerConfig``. A session mode keeps what is its
own: what a session is asked, what it learns from one, and (trigger mode) what its cache keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from prefect.utilities.annotations import quote

from executors.errors import ErrorKind
from executors.schema import AgentRequest, AgentSession, RunResult
from flows.engine.economy import BatchMode, over_budget, run_batched, warm_up
from flows.engine.fleet import Fleet, provider_of
from flows.engine.gc import lean_gc
from flows.engine.progress import Progress
from flows.engine.remote import FleetPool
from flows.engine.runlog import quiet_call_failures
from tasks.context import current
from tasks.schema import CallPolicy, NotRun, NotRunReason, Record, RunStats, Seen, ShardRun, Unit, UnitKind
from tasks.stats.figures import JudgeGold
from tasks.store.cache import ResultCache
from tasks.unit_runs import UnitRuns

T = TypeVar("T")


def unwalked(value: T) -> T:
    """Hand a large parameter to a task without Prefect walking every element (seconds at 1,000 units)."""
    return cast(T, quote(value))


#: Runs in a session's slot before it starts (a plugin eval case's scaffold): the request to run,
#: or an error that stands for the session.
Setup = Callable[[AgentRequest], Awaitable[tuple[AgentRequest, str | None]]]


@dataclass(frozen=True)
class Refused:
    """A session the budget refused: never started, never paid for."""

    reason: str


def not_run(unit: Unit | tuple[str, str, int], reason: NotRunReason) -> NotRun:
    """The report's record of a unit that did not run; a session is given as (case, variant, run)."""
    if isinstance(unit, Unit):
        return NotRun(
            sample_id=unit.sample_id, variant=unit.variant, run=unit.run, kind=unit.kind, reason=reason
        )
    case, variant, run = unit
    return NotRun(sample_id=case, variant=variant, run=run, kind=UnitKind.SESSION, reason=reason)


class FleetLimited(Protocol):
    """What a mode's options say of its calls' limits (agentic mode's SkillBenchConfig)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def fleet_sessions(self) -> int | None: ...
    @property
    def fleet_rpm(self) -> int | None: ...


@dataclass(frozen=True)
class RunnerConfig:
    """What bounds a run: concurrent calls, where finished calls are cached, and the budgets."""

    concurrency: int
    cache_dir: Path | None = None
    max_calls: int | None = None
    budget_usd: float | None = None
    warm_up: bool = False  # one call per shared cacheable prefix before the fan-out
    batch: BatchMode | None = None  # through the provider's batch API first (--batch)
    fleet_sessions: int | None = None  # sessions at once across every run on this account (--fleet-sessions)
    fleet_rpm: int | None = None  # sessions and judge calls started a minute on this account (--fleet-rpm)
    fleet_pool: str | None = None  # sessions run in containers of this Docker work pool (--fleet-pool)

    @classmethod
    def judging(cls, config: FleetLimited, cache_dir: Path) -> RunnerConfig:
        """Agentic mode's judge and diagnosis calls: here, never in the pool, within the account's
        fleet limits like its sessions."""
        return cls(
            config.concurrency, cache_dir, fleet_sessions=config.fleet_sessions, fleet_rpm=config.fleet_rpm
        )


def failure_kind(result: RunResult) -> str:
    """How a failed unit failed, for the log and the progress counts: a transient cause that
    outlived every retry is not transient to the user (an endpoint answering 500 all night)."""
    kind = str(result.error_kind)
    return "after retries" if kind == ErrorKind.TRANSIENT and result.attempts > 1 else kind


@contextlib.contextmanager
def retries_told_to(progress: Progress, throttled: Callable[[], None] | None = None) -> Iterator[None]:
    """While the units run, this flow run's retries are counted (and the first of each cause
    logged) by ``progress``; a retry after an HTTP 429 also calls ``throttled``."""
    run = current()

    def retried(label: str, cause_kind: str, cause: str) -> None:
        progress.retried(label, cause_kind, cause)
        if throttled is not None and cause_kind == "HTTP 429":
            throttled()

    run.on_retry = retried
    try:
        yield
    finally:
        run.on_retry = None


class UnitRunner:
    """Runs units as Prefect tasks under a concurrency cap, skipping cached ones, within budgets:
    model calls in batches (``run``), agent sessions one by one (``session``)."""

    def __init__(
        self, config: RunnerConfig, progress: Progress, on_fan_out: Callable[[], None] | None = None
    ) -> None:
        self.config = config
        self.progress = progress
        # Called once, when the first fan-out with calls to make has had its first round (the first
        # calls sent, the head start's answers taken): a thread it starts (the report's imports) would
        # slow that round (the head start's slots idled ~0.1 s when they began at its first answer).
        self.on_fan_out = on_fan_out
        self.on_result: Callable[[Unit, RunResult], None] | None = None  # each unit's, cached ones too
        self.cache = ResultCache(config.cache_dir) if config.cache_dir else None
        self.semaphore = asyncio.Semaphore(config.concurrency)
        self.calls = 0
        self.cache_hits = 0
        self.spent = 0.0
        self.spent_by_kind: dict[str, float] = {}
        self.not_run: list[NotRun] = []  # kept from running by a budget
        self.pending: list[Unit] = []  # in a batch that has not ended (--batch --no-batch-wait)
        self.cache_errors: list[str] = []
        self.warm_ups = 0
        self.batched = 0
        self.seen: dict[str, dict[str, set[str]]] = {"models": {}, "tools": {}, "listed": {}, "images": {}}
        fleet = config.fleet_sessions or config.fleet_rpm
        self.fleet = Fleet(config.fleet_sessions, config.fleet_rpm) if fleet else None
        self.pool = FleetPool(config.fleet_pool) if config.fleet_pool else None

    def over_budget(self) -> bool:
        return over_budget(self.calls, self.spent, self.config.max_calls, self.config.budget_usd)

    def refusal(self) -> str | None:
        """Why no further unit may start (None: it may, and it is counted as started)."""
        if not self.over_budget():
            self.calls += 1
            return None
        capped = self.config.max_calls is not None and self.calls >= self.config.max_calls
        cap = f"--max-calls {self.config.max_calls}" if capped else f"--budget-usd {self.config.budget_usd:g}"
        return f"{cap} reached"

    def kept_back(self, unit: Unit | tuple[str, str, int]) -> None:
        """A unit the budget kept from running: in the report as not run, never as a failure. A
        session is given as (case, variant, run)."""
        self.not_run.append(not_run(unit, NotRunReason.BUDGET))

    def hit(self, *, ok: bool) -> None:
        """A unit a mode took from its own cache (a trigger session's outcome)."""
        self.cache_hits += 1
        self.progress.advance(ok=ok, cached=True)

    def saw(self, part: str, key: str, values: Iterable[object]) -> None:
        """Values an answer reported (a model id, the tools or skills a session was offered)."""
        found = {str(v) for v in values if v}
        if found:
            self.seen[part].setdefault(key, set()).update(found)

    def saw_result(self, unit: Unit, result: RunResult) -> None:
        """Every unit's result, called or cached, passes here: what it says of the run, and to
        ``on_result``."""
        self.saw("models", unit.kind, [result.model])
        if unit.kind == UnitKind.EXECUTE:  # sample mode through an agent CLI: what it offered
            self.saw("tools", unit.variant, result.tools)
        if self.on_result is not None:
            self.on_result(unit, result)

    def saw_offered(
        self, variant: str, model: object, tools: Iterable[object], listed: Iterable[str] | None
    ) -> None:
        """A session's model id, and the tools and skills its CLI offered it (run, or from a cache)."""
        self.saw("models", UnitKind.SESSION, [model])
        self.saw("tools", variant, tools)
        self.saw("listed", variant, listed or ())

    def saw_session(self, variant: str, session: AgentSession) -> None:
        self.saw_offered(variant, session.meta.model, session.meta.tools or [], session.skills_listed)
        if self.pool is not None:
            self.saw("images", self.pool.pool, [session.meta.image])

    def spend(self, kind: str, cost: float) -> None:
        self.spent += cost
        self.spent_by_kind[kind] = self.spent_by_kind.get(kind, 0.0) + cost

    async def session(
        self,
        unit: tuple[str, str, int],
        label: str,
        request: AgentRequest,
        base_url: str | None,
        setup: Setup | None = None,
    ) -> AgentSession | Refused:
        """One agent session in its slot: set up, checked against the budget, run as a Prefect task
        (never retried: it writes into its sandbox), its cost added. ``unit``: (case, variant, run);
        a session the budget refuses is recorded as not run. The caller reports its progress, once
        it has graded the session (``progress.advance``)."""
        async with self.semaphore:
            error = None
            if setup is not None:
                request, error = await setup(request)
            if error is not None:
                return AgentSession(ok=False, status="error", error=error)
            if (refused := self.refusal()) is not None:
                self.kept_back(unit)
                return Refused(refused)
            async with self.fleet.slot(request.cli) if self.fleet else contextlib.nullcontext():
                session = await self.run_session(request, base_url, label)
        self.spend(UnitKind.SESSION, session.cost_usd)
        self.saw_session(unit[1], session)
        return session

    async def run_session(self, request: AgentRequest, base_url: str | None, label: str) -> AgentSession:
        """Here, as a Prefect task, or in a container of the fleet's pool; a 429 a container's session
        met slows the fleet as one met here does."""
        if self.pool is None:
            from tasks.agent import run_agent_session

            return await run_agent_session(request, base_url, label)
        dispatched = await self.pool.session(request, base_url, label)
        if dispatched.rate_limited and self.fleet is not None and (p := provider_of(request.cli)):
            self.fleet.rate_limited(p.name)
        return dispatched.session

    def throttled(self, units: list[Unit]) -> Callable[[], None] | None:
        """What a 429 retry of these units tells the fleet's pace: their providers were rate limited."""
        fleet = self.fleet
        if fleet is None or not fleet.rpm:
            return None
        providers = {p.name for u in units if (p := provider_of(u.request.executor)) is not None}

        def throttled() -> None:
            for name in providers:
                fleet.rate_limited(name)

        return throttled

    def cached(self, unit: Unit) -> RunResult | None:
        if self.cache is None:
            return None
        value = self.cache.get(unit.key)
        if value is None:
            return None
        try:
            return RunResult(**{**value, "cached": True})
        except ValueError:
            return None

    def stats(self) -> RunStats:
        """A frozen copy of what the runner did so far, for the report."""
        return RunStats(
            calls=self.calls,
            cache_hits=self.cache_hits,
            spent_by_kind=dict(self.spent_by_kind),
            not_run=(*self.not_run, *(not_run(u, NotRunReason.BATCH) for u in self.pending)),
            warm_up_calls=self.warm_ups,
            batched_calls=self.batched,
            cache_errors=len(self.cache_errors),
            cache_error=self.cache_errors[0] if self.cache_errors else None,
            seen=Seen.model_validate(
                {part: {k: tuple(sorted(v)) for k, v in sorted(by.items())} for part, by in self.seen.items()}
            ),
        )

    def paid(self, unit: Unit, result: RunResult) -> RunResult:
        if result.cache_error:
            self.cache_errors.append(result.cache_error)
        self.spend(unit.kind, result.cost_usd)
        self.saw_result(unit, result)
        failure = None if result.ok else (unit.label, failure_kind(result), str(result.error))
        self.progress.advance(ok=result.ok, cost=result.cost_usd, failure=failure)
        return result

    async def before_fan_out(self, fresh: list[Unit], policy: CallPolicy) -> dict[str, RunResult]:
        """Warm the shared prefixes; send what a batch API can take through it. Returns the
        batched results; units left in an unfinished batch are set aside as pending."""
        if self.config.warm_up and fresh:
            for result in await warm_up(fresh, policy):
                self.warm_ups += 1
                self.spend("warm-up", result.cost_usd)
        if self.config.batch is None or not fresh:
            return {}
        room = None if self.config.max_calls is None else max(self.config.max_calls - self.calls, 0)
        batched, self.pending = await run_batched(fresh[:room], policy, self.config.batch)
        self.batched += len(batched)
        return batched

    async def run(self, units: list[Unit], policy: CallPolicy) -> dict[str, RunResult]:
        quiet_call_failures()  # the failures are counted and summarized, not printed one by one
        # The head start ends here; the units it sent are in the cache already, yet not hits: their
        # task runs take the answers as their first attempts. The cache is read first, while the head
        # start still sends (~15 ms at 1,000 units, its slots would idle meanwhile); a unit it sent
        # during the reading is its, even if its answer was cached by then.
        calls = current().early
        sending = calls.sent()
        hits = {u.key: hit for u in units if u.key not in sending and (hit := self.cached(u)) is not None}
        early = calls.close()
        hits = {key: hit for key, hit in hits.items() if key not in early}
        batched = await self.before_fan_out([u for u in units if u.key not in hits], policy)
        pending = {u.key for u in self.pending}
        fresh = [u for u in units if u.key not in hits and u.key not in batched and u.key not in pending]
        sink = RunSink(self, early, policy)
        for unit in units:
            if unit.key in hits:
                self.cache_hits += 1
                self.saw_result(unit, hits[unit.key])
                sink.results[unit.key] = hits[unit.key]
                self.progress.advance(ok=True, cached=True)
            elif unit.key in batched:
                self.calls += 1
                sink.put(unit, batched[unit.key])
        with lean_gc(), retries_told_to(self.progress, self.throttled(units)):
            async with UnitRuns.of_current_flow(policy.retries) as runs:  # one task run per unit
                fan_out = asyncio.gather(*(sink.one(u, runs) for u in fresh))
                if fresh and self.on_fan_out is not None:
                    hook, self.on_fan_out = self.on_fan_out, None
                    asyncio.get_running_loop().call_soon(hook)  # after each unit's first step
                await fan_out
        self.cache_errors += await asyncio.to_thread(current().cache_writes.drain)  # every answer kept
        return sink.results


class RunSink:
    """One ``UnitRunner.run``: its results, and the slots its units take (a runner may run several
    at once: the judge's targets)."""

    def __init__(self, runner: UnitRunner, early: frozenset[str], policy: CallPolicy) -> None:
        self.runner = runner
        self.early = early  # sent by the head start: paid already, never stopped by a budget
        self.policy = policy
        self.results: dict[str, RunResult] = {}

    @contextlib.asynccontextmanager
    async def slot(self, unit: Unit) -> AsyncIterator[bool]:
        """A concurrency slot for the unit's call (and one of the fleet's limit, with --fleet-sessions);
        False (no call) once a budget is spent."""
        runner = self.runner
        async with runner.semaphore:
            if unit.key in self.early:  # paid already: counted, never refused
                runner.calls += 1
            elif runner.refusal() is not None:
                runner.kept_back(unit)
                yield False
                return
            # a judge call shares its provider's fleet limit with the agent sessions (--fleet-sessions)
            async with runner.fleet.slot(unit.request.executor) if runner.fleet else contextlib.nullcontext():
                yield True

    def put(self, unit: Unit, result: RunResult) -> None:
        self.results[unit.key] = self.runner.paid(unit, result)

    async def one(self, unit: Unit, runs: UnitRuns) -> None:
        """The unit in its slot, as a task run of its own."""
        async with self.slot(unit) as go:
            if not go:
                return
            result = await runs.call(unit, self.policy)
        self.put(unit, result)


@dataclass
class Executed:
    """What a run's units left for its report: graded records, the runner (its figures), when it started."""

    records: list[Record]
    runner: UnitRunner
    started: float
    started_at: dt.datetime
    shard_runs: list[ShardRun]
    planned: int  # units the run would make without --sequential
    # --sequential: treatment -> its ConfidenceSequence (its module imports numpy: not at startup)
    sequences: dict[str, Any]
    gold: JudgeGold | None  # --judge-gold: the check made before the run

    def release_records(self) -> None:
        """The run's list of records goes once the report is built from a list of its own (which the
        build consumes): at 10,000 units, ~35 MB less at the run's peak of memory."""
        self.records.clear()
