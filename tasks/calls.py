"""One attempt at a unit's model call, and the calls a run sent before its task runs started.

Neither imports Prefect: a run's head start (flows/modes/sample/headstart.py) makes these calls from its own
thread while the command is still importing Prefect, and the units' task runs (tasks/unit_runs.py) make
them for every other attempt.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future

from executors.errors import TransientError
from executors.registry import get_executor
from executors.schema import RunResult
from tasks.schema import CallPolicy, Unit
from tasks.store.cache import ResultCache


async def attempt(unit: Unit, policy: CallPolicy, number: int) -> RunResult:
    """Call the model once under the policy's timeout; a success is cached before it is returned."""
    executor = get_executor(unit.request.executor, policy.settings())
    try:
        result = await asyncio.wait_for(executor.run(unit.request), policy.timeout_s)
    except TimeoutError as exc:
        raise TransientError(f"timeout after {policy.timeout_s:g}s") from exc
    result = result.model_copy(update={"attempts": number})
    if policy.cache_dir:
        # In a worker thread: creating a file waits on the filesystem journal while other processes
        # write (the Prefect server's database), 0.7 s per 1,000 units of a blocked event loop here.
        try:
            await asyncio.to_thread(
                ResultCache(policy.cache_dir).put, unit.key, result.model_dump(mode="json")
            )
        except OSError as exc:
            # A paid answer is never dropped because the disk is full: it goes on, uncached.
            result = result.model_copy(update={"cache_error": f"{type(exc).__name__}: {exc}"})
    return result


class EarlyCalls:
    """First attempts sent before their task runs existed, by unit key. The task run of each unit
    takes its answer (or its error, which Prefect's retries then treat as the first attempt's)
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

    def close(self) -> frozenset[str]:
        """No more early calls; the keys of those sent whose task run has not taken them yet."""
        with self._lock:
            self._open = False
            return frozenset(self._calls)

    def take(self, key: str) -> Future[RunResult] | None:
        with self._lock:
            return self._calls.pop(key, None)
