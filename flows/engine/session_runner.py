"""Where every agent session of a run starts, whatever the mode (agentic, trigger): under the run's
concurrency, within --max-calls and --budget-usd (the rule of flows/engine/economy.py, the one model
calls follow), each session a Prefect task (tasks/agent.py), its cost counted as it ends.

A mode keeps what is its own: what a session is asked (the request), what it learns from one (grading,
trigger detection), and its cache of finished sessions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from executors.schema import AgentRequest, AgentSession
from flows.engine.economy import over_budget
from tasks.agent import run_agent_session

#: Runs in the session's slot before it starts (a plugin eval case's scaffold): the request to run,
#: or an error that stands for the session.
Setup = Callable[[AgentRequest], Awaitable[tuple[AgentRequest, str | None]]]


#: How a session the budget refused begins its error (a report tells it apart from one that ran).
NOT_RUN = "not run: "


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
        return f"{NOT_RUN}{cap} reached"

    async def session(
        self, label: str, request: AgentRequest, setup: Setup | None = None
    ) -> AgentSession | Refused:
        """One session in its slot: set up, checked against the budget, run, its cost added."""
        async with self.slots:
            error = None
            if setup is not None:
                request, error = await setup(request)
            if error is not None:
                return AgentSession(ok=False, status="error", error=error)
            if (refused := self.refusal()) is not None:
                return Refused(refused)
            session = await run_agent_session(request, self.base_urls.get(request.cli), label)
            self.spent += session_cost(session)
            return session
