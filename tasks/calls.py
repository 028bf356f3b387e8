"""One attempt at a unit's model call (the calls a run sent before its task runs started are kept
in its run context, tasks/context.py).

It imports no Prefect: a run's head start (flows/modes/sample/headstart.py) makes these calls from its
own thread while the command is still importing Prefect, and the units' task runs (tasks/unit_runs.py)
make them for every other attempt.
"""

from __future__ import annotations

import asyncio

from executors.errors import TransientError
from executors.registry import get_executor
from executors.schema import RunResult
from tasks.context import current
from tasks.schema import CallPolicy, Unit


async def attempt(unit: Unit, policy: CallPolicy, number: int) -> RunResult:
    """Call the model once under the policy's timeout; a success is handed to the run's cache thread."""
    executor = get_executor(unit.request.executor, policy.settings())
    try:
        result = await asyncio.wait_for(executor.run(unit.request), policy.timeout_s)
    except TimeoutError as exc:
        raise TransientError(f"timeout after {policy.timeout_s:g}s") from exc
    result = result.model_copy(update={"attempts": number})
    if policy.cache_dir:  # written by the run's cache thread: the loop goes on (tasks/store/cache.py)
        current().cache_writes.put(policy.cache_dir, unit.key, result.model_dump(mode="json"))
    return result
