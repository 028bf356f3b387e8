"""The flow run's own log, as a person watching a run in the Prefect UI reads it.

``run_logger`` is Prefect's run logger inside a flow or task run (its lines land in the run's Logs
tab) and a plain logger elsewhere. ``estimate`` is the plan's arithmetic, shared by ``run
--dry-run`` and the log line a run starts with.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from typing import Any

from executors.errors import ExecutorError
from executors.redaction import redact
from flows.engine.progress import LogTarget
from tasks.context import current

#: The classes of the errors a failed call ends with, as a failed state's message names them.
CALL_ERRORS = (ExecutorError.__name__, *(cls.__name__ for cls in ExecutorError.__subclasses__()))


class QuietCallFailures(logging.Filter):
    """Keeps a call that failed after its retries out of the terminal and the run's Logs tab. Prefect
    logs such a task run at ERROR with the traceback (when it was retried), then "Finished in state
    Failed(...)" naming the exception's class: some 20 lines a unit in the UI, 90 on a terminal,
    thousands when an endpoint is down. The run's own log says the first failure of each kind with
    its cause and counts the rest (flows.engine.progress); the task run's page keeps the error in its
    Failed state's message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("prefect.task_runs"):
            return True
        if record.exc_info and isinstance(record.exc_info[1], ExecutorError):
            return False
        message = record.getMessage()
        if message.startswith("Task run failed with exception"):  # a retry's line: counted in progress
            return not any(f"exception: {n}(" in message for n in CALL_ERRORS)
        return not (
            message.startswith("Finished in state") and any(f"exception {n}:" in message for n in CALL_ERRORS)
        )


def quiet_call_failures() -> None:
    """Put ``QuietCallFailures`` on Prefect's console and API log handlers, once each (the unit
    runner, before its fan-out)."""
    from prefect.logging.handlers import APILogHandler, PrefectConsoleHandler

    loggers = (logging.getLogger(), logging.getLogger("prefect"), logging.getLogger("prefect.task_runs"))
    for handler in {h for lg in loggers for h in lg.handlers}:
        if isinstance(handler, PrefectConsoleHandler | APILogHandler) and not any(
            isinstance(f, QuietCallFailures) for f in handler.filters
        ):
            handler.addFilter(QuietCallFailures())


class RedactSecrets(logging.Filter):
    """Masks every known secret and key-shaped string in a record before any handler writes it (the
    terminal, the Prefect API's log): a key that reached an error message stays out of the logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def redact_logs() -> None:
    """Put ``RedactSecrets`` on every handler of the root and Prefect loggers, once each."""
    loggers = [
        logging.getLogger(),
        *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.startswith("prefect")),
    ]
    for handler in {h for lg in loggers for h in lg.handlers}:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())


def flow_run_page(run_id: object) -> str | None:
    """A flow run's page in the Prefect UI (the UI's route, as Prefect's own "View at" line); None
    without a UI or a run."""
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    return f"{ui}/runs/flow-run/{run_id}" if ui and run_id else None


async def tag_flow_run(mode: str, name: str | None) -> None:
    """Tags the flow run ("skillab", the mode, the suite or skill): the Prefect UI filters its runs
    list by them. Every mode's flow does so first: the run has begun."""
    current().began = True
    await add_tags("skillab", mode, *([name] if name else []))


def outcome_tag(outcome: str) -> str:
    """The tag that shows a run's outcome in the runs list ("outcome:regressed"): its state keeps
    Prefect's own name (Completed, Failed), which the UI's filters and deployment pages count by."""
    return "outcome:" + "-".join(outcome.lower().replace(",", " ").split())


async def add_tags(*tags: str) -> None:
    """Adds ``tags`` to this flow run's. On the flow run only, through the API, never as Prefect's
    tags context: a tagged task run asks the API for a concurrency slot per tag, a round trip per
    unit, and fails when the server has gone away."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return
    # Cosmetic: a run whose API is slow or gone goes on untagged (the API watch says the rest).
    from prefect.client.orchestration import get_client

    with contextlib.suppress(Exception):
        async with get_client() as client:
            have = set((await client.read_flow_run(ctx.flow_run.id)).tags)  # the context's are as it began
            if not set(tags) <= have:
                await client.update_flow_run(ctx.flow_run.id, tags=sorted(have | set(tags)))


def night_name() -> str:
    """A nightly run's name: its suite and when it was due, so the runs list tells the nights apart."""
    from prefect.runtime import flow_run

    when = flow_run.scheduled_start_time.astimezone(dt.UTC)
    seconds = f":{when:%S}" if when.second else ""  # a run started by hand, not on the minute
    return f"{flow_run.parameters['suite']} · {when:%Y-%m-%d %H:%M}{seconds} UTC"


def run_logger() -> LogTarget:
    """Prefect's run logger in a run, else the ``skillab`` logger (a unit test, a plain call);
    secrets are masked in whatever it and Prefect log (:func:`redact_logs`)."""
    from prefect.exceptions import MissingContextError  # here: a dry run's plan needs no Prefect
    from prefect.logging import get_run_logger

    redact_logs()
    try:
        logger: Any = get_run_logger()
        return logger  # type: ignore[no-any-return]
    except MissingContextError:
        return logging.getLogger("skillab")
