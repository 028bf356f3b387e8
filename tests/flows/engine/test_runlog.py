"""The terminal stays readable when calls fail: a failed call's two ERROR lines (one with its
traceback) are kept off the console; anything else, a bug's traceback above all, still shows."""

from __future__ import annotations

import logging

from executors.errors import PermanentError, TransientError
from flows.engine.runlog import QuietCallFailures


def record(name: str, message: str, exc: BaseException | None = None, **extra: str) -> logging.LogRecord:
    info = (type(exc), exc, None) if exc is not None else None
    r = logging.LogRecord(name, logging.ERROR, __file__, 1, message, None, info)
    r.__dict__.update(extra)
    return r


def test_a_failed_call_is_quiet_on_the_console_and_a_bug_is_not() -> None:
    quiet = QuietCallFailures()
    failed = "Task run failed with exception"

    def finished(exc: BaseException) -> str:  # Prefect's last line for a failed task run
        return f"Finished in state Failed('Task run encountered an exception {type(exc).__name__}: {exc}')"

    for exc in (TransientError("connection error"), PermanentError("HTTP 401")):
        assert not quiet.filter(record("prefect.task_runs", failed, exc, task_run_id="t1"))
        assert not quiet.filter(record("prefect.task_runs", finished(exc), task_run_id="t1"))
    bug = KeyError("bug")
    assert quiet.filter(record("prefect.task_runs", failed, bug, task_run_id="t2"))
    assert quiet.filter(record("prefect.task_runs", finished(bug), task_run_id="t2"))
    assert quiet.filter(record("prefect.task_runs", "Finished in state Completed()", task_run_id="t3"))
    assert quiet.filter(record("prefect.flow_runs", failed, TransientError("x"), flow_run_id="f1"))
    # A permanent error is not retried: Prefect logs only the final line, which names its class.
    permanent = "Finished in state Failed('Task run encountered an exception PermanentError: HTTP 404')"
    assert not quiet.filter(record("prefect.task_runs", permanent, task_run_id="t4"))
