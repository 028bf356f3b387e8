"""Where every agent session of a run starts, whatever the mode (agentic, trigger): under the run's
concurrency, within --max-calls and --budget-usd (the rule of flows/engine/economy.py, the one model
calls follow), each session a Prefect task (tasks/agent.py), its cost counted as it ends.

The runner counts what every mode's report records of its sessions (``RunStats``: sessions started,
cache hits, the sessions the budget kept from running); a mode keeps what is its own: what a session
is asked (the request), what it learns from one (grading, trigger detection), and its cache of
finished sessions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from executors.schema import AgentRequest, AgentSession
from flows.engine.economy import over_budget
from tasks.agent import run_agent_session
from tasks.schema import NotRun, NotRunReason, RunStats, UnitKind

#: Runs in the session's slot before it starts (a plugin eval case's scaffold): the request to run,
#: or an error that stands for the session.
Setup = Callable[[AgentRequest], Awaitable[tuple[AgentRequest, str | None]]]


@dataclass(frozen=True)
class Refused:
    """A session the budget refused: never started, never paid for."""

    reason: str


def session_cost(session: AgentSession) -> float:
    return float(session.meta.get("total_cost_usd") or 0.0)


@dataclass
class SessionRunner:
    concurrency: int
    max_calls: int | None
    budget_usd: float | None
    base_urls: Mapping[str, str | None]  # each agent CLI's endpoint (None: its provider's)
    started: int = 0
    spent: float = 0.0
    cache_hits: int = 0  # a mode with a session cache counts what it took from it
    not_run: list[NotRun] = field(default_factory=list)
    slots: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(self.concurrency)

    def refusal(self) -> str | None:
        """Why no further session may start (None: it may, and it is counted as started)."""
        if not over_budget(self.started, self.spent, self.max_calls, self.budget_usd):
            self.started += 1
            return None
        capped = self.max_calls is not None and self.started >= self.max_calls
        cap = f"--max-calls {self.max_calls}" if capped else f"--budget-usd {self.budget_usd:g}"
        return f"{cap} reached"

    async def session(
        self, unit: tuple[str, str, int], label: str, request: AgentRequest, setup: Setup | None = None
    ) -> AgentSession | Refused:
        """One session in its slot: set up, checked against the budget, run, its cost added.
        ``unit``: (case, variant, run), recorded as not run when the budget refuses the session."""
        async with self.slots:
            error = None
            if setup is not None:
                request, error = await setup(request)
            if error is not None:
                return AgentSession(ok=False, status="error", error=error)
            if (refused := self.refusal()) is not None:
                case, variant, run = unit
                kept = NotRun(
                    sample_id=case,
                    variant=variant,
                    run=run,
                    kind=UnitKind.SESSION,
                    reason=NotRunReason.BUDGET,
                )
                self.not_run.append(kept)
                return Refused(refused)
            session = await run_agent_session(request, self.base_urls.get(request.cli), label)
            self.spent += session_cost(session)
            return session

    def stats(self) -> RunStats:
        """What the runner did, for the report's meta."""
        return RunStats(calls=self.started, cache_hits=self.cache_hits, not_run=tuple(self.not_run))
