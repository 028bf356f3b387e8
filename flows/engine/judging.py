"""Judging: every judge call of a run through the unit runner, with one retry of a bad judgement
(each mode makes its own jobs: sample mode's are in flows/modes/sample/judging.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from executors.schema import RunResult
from flows.engine.runner import UnitRunner
from flows.inputs.plan import JudgeJob, Target, judge_unit
from graders.judge import (
    JudgeParseError,
)
from tasks.schema import CallPolicy, Unit

P = TypeVar("P")
PolicyFor = Callable[[Target], CallPolicy]


async def run_judge_jobs(
    runner: UnitRunner, jobs: list[JudgeJob], parse: Callable[[str], P], policy_for: PolicyFor
) -> list[tuple[P | None, str | None, str | None]]:
    """(parsed, raw reply, error) per job. A failed or unparseable judgement is asked once more."""
    outcomes: list[tuple[P | None, str | None, str | None]] = [(None, None, "not run")] * len(jobs)
    pending = list(range(len(jobs)))
    for attempt in (0, 1):
        units = {i: judge_unit(jobs[i], attempt) for i in pending}
        groups: dict[int, tuple[Target, list[Unit]]] = {}
        for i in pending:
            groups.setdefault(id(jobs[i].target), (jobs[i].target, []))[1].append(units[i])
        results: dict[str, RunResult] = {}
        for part in await asyncio.gather(
            *(runner.run(us, policy_for(target)) for target, us in groups.values())
        ):
            results |= part
        retry = []
        for i in pending:
            res = results.get(units[i].key)
            if res is None:
                outcomes[i] = (None, None, "not run: budget reached")
                continue
            try:
                if not res.ok:
                    raise JudgeParseError(res.error or "judge call failed")
                outcomes[i] = (parse(res.output), res.output, None)
            except JudgeParseError as exc:
                outcomes[i] = (None, res.output or None, str(exc))
                retry.append(i)
        pending = retry
        if not pending:
            break
    return outcomes


def judge_name(target: Target) -> str:
    return f"{target.executor.name}:{target.model}"
