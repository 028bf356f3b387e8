"""The run context: what one command shares with its own flow run and that run's task runs.

Prefect runs a flow, and the tasks of the flow, in the process that called the flow, and hands them
only their parameters (JSON, shown in the UI). What else they share is one object: the inputs the
command validated (taken once by the flow run instead of loading them again), the calls the head start
sent before the task runs existed, whom to tell when a call is retried, and what the flow run ends
with (the final state Prefect hands back can lack its data when it came back from the API, a state
proposal retried under load: the report's path would then be lost).

The command's run protocol sets it for the time of its flow run; the flow and its tasks read it
through a context variable, which each task run receives a copy of, as Prefect's own run context. A
flow run started by no command (a deployment's, a test's) makes its own. Threads get it passed.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from executors.schema import RunResult
from tasks.store.cache import CacheWrites

#: (task run name, the cause's kind, the cause): one of the run's calls is about to be retried.
RetryListener = Callable[[str, str, str], None]


class EarlyCalls:
    """First attempts sent before their task runs existed, by unit key. The task run of each unit
    takes its answer (or its error, which its retries then treat as the first attempt's)
    instead of calling again. Threads: the head start adds, the flow's event loop takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._calls: dict[str, Future[RunResult]] = {}

    def open(self) -> None:
        with self._lock:
            self._open = True
            self._calls.clear()  # a previous run's leftovers (its flow failed before taking them)

    def add(self, key: str, call: Future[RunResult]) -> bool:
        """Register a call about to be sent; False once the runner has taken over (send nothing)."""
        with self._lock:
            if self._open:
                self._calls[key] = call
            return self._open

    def sent(self) -> frozenset[str]:
        """The keys of the calls sent whose task run has not taken them yet (more may follow)."""
        with self._lock:
            return frozenset(self._calls)

    def close(self) -> frozenset[str]:
        """No more early calls; the keys of those sent whose task run has not taken them yet."""
        with self._lock:
            self._open = False
            return frozenset(self._calls)

    def take(self, key: str) -> Future[RunResult] | None:
        with self._lock:
            return self._calls.pop(key, None)


@dataclass
class RunContext:
    early: EarlyCalls = field(default_factory=EarlyCalls)
    cache_writes: CacheWrites = field(default_factory=CacheWrites)
    on_retry: RetryListener | None = None
    outcome: Any = None  # the flow run's result, or the exception its Failed state carries
    began: bool = False  # the flow's body runs: its flow run has begun (the API answered it)
    _handed_over: tuple[str, Any] | None = None

    def hand_over(self, key: str, inputs: Any) -> None:
        """The command validated ``inputs`` before starting its flow run, whose parameters ``key`` names."""
        self._handed_over = (key, inputs)

    def take_handed_over(self, key: str) -> Any | None:
        """The inputs handed over for exactly ``key``, once (a re-run in the same context loads them)."""
        handed, self._handed_over = self._handed_over, None
        return handed[1] if handed is not None and handed[0] == key else None

    def keep(self, outcome: Any) -> Any:
        """Keep what the flow run ends with for its command, and return it."""
        self.outcome = outcome
        return outcome

    def outcome_of(self, state: Any) -> Any:
        """What the flow run kept, else its final ``state``'s result (a run that failed before keeping one)."""
        return self.outcome if self.outcome is not None else state.result(raise_on_failure=False)

    @contextlib.contextmanager
    def active(self) -> Iterator[RunContext]:
        """This is the run context of whatever flow run starts in the block."""
        token = _RUN.set(self)
        try:
            yield self
        finally:
            _RUN.reset(token)


_RUN: ContextVar[RunContext] = ContextVar("skillab_run")


def current() -> RunContext:
    """The run context of the flow run or task run calling (made here for a flow run no command started)."""
    try:
        return _RUN.get()
    except LookupError:
        context = RunContext()
        _RUN.set(context)
        return context


def handover_key(options: BaseModel, cwd: Path) -> str:
    """What a command's validated inputs are handed over to its flow run under: the run's parameters
    (the command validated them before starting its flow: the flow run takes them once instead of
    loading and validating everything again, which costs time and says every notice twice)."""
    return f"{options.model_dump_json()}\n{cwd}"
