"""A command whose Prefect API goes away mid-run (its server stopped or killed) still ends, and soon.

Without this, Prefect's client retries each call for about a minute (artifacts, the flow run's final
state), and at exit it tries to deliver every queued event for ever, 7 s an event: hours for a run of
a few hundred units (seen here after `server stop` during a run). The run's own work does not need
the API: task runs go on, and the report and the cache are written. So a daemon thread watches the
API; once it refuses connections, the command ends as soon as its outcome is known: the summary and
the gate as usual, one line saying what the Prefect UI will lack, then the exit, with the code the
command would have had. An API that answers again before then (its server restarted) has the run
back: it goes on with it, its final state reaching the UI. Nothing here imports Prefect."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

from flows.cli.codes import EXIT_FAIL

POLL_S = 2.0
#: Refused connections in a row before the API counts as gone (a busy server is slow, not refused).
MISSES = 3
#: Polls in a row without any answer (each waits 2 s) before a server that still accepts connections
#: but never answers (suspended, wedged) counts as gone: about two minutes.
SILENT = 30


class ApiWatch:
    """``finish(outcome)`` prints what the command prints after its flow and returns the exit code;
    ``outcome()`` is the flow run's outcome once the flow has one (None until then)."""

    def __init__(
        self,
        api_url: str,
        finish: Callable[[Any], int],
        outcome: Callable[[], Any],
        unbegun: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.api_url, self.finish, self.outcome = api_url, finish, outcome
        #: The exit code of a command whose flow run had not begun (it cannot without its API), having
        #: said so; None once it has begun.
        self.unbegun = unbegun
        self.lock = threading.Lock()  # the command ends once: here or in the main thread
        self.code: int | None = None

    def run(self) -> None:
        from flows.cli.prefect_env import probe  # here: every command imports this module at start-up

        while probe(self.api_url) == "refused":  # not yet up (a configured server may start late)
            time.sleep(POLL_S)
        while True:
            refusals = silences = 0
            while refusals < MISSES and silences < SILENT:
                time.sleep(POLL_S)
                answer = probe(self.api_url)
                refusals = refusals + 1 if answer == "refused" else 0
                silences = silences + 1 if answer == "silent" else 0
            with self.lock:
                if self.code is None and (code := self.unbegun()) is not None:
                    quiet_prefect()
                    flush_and_exit(code)  # Prefect's client would retry the flow run's start for a minute
            self.say(
                "stopped answering (was its server stopped?): the run goes on; unless the API comes back, "
                "it ends without it, its state and artifacts in the Prefect UI incomplete"
            )
            loud = quiet_prefect()
            code = self.settled_unless_back(probe)
            if code is not None:
                flush_and_exit(code)  # Prefect's threads would wait on the API for ever: the work is on disk
            loud()
            self.say("answers again: the run goes on with it")

    def settled_unless_back(self, probe: Callable[[str], str]) -> int | None:
        """The command's exit code once its run has an outcome; None as soon as the API answers again
        (a restarted server: the run goes on with it)."""
        while (code := self.settled()) is None:
            if probe(self.api_url) == "answered":
                return None
            time.sleep(0.5)
        return code

    def say(self, what: str) -> None:
        print(f"skillab: the Prefect API at {self.api_url} {what}", file=sys.stderr, flush=True)

    def settled(self) -> int | None:
        with self.lock:
            if self.code is None and (outcome := self.outcome()) is not None:
                try:
                    self.code = self.finish(outcome)
                except Exception as exc:  # a run that failed: said in one line, as the main thread would not
                    print(f"skillab: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                    self.code = EXIT_FAIL
            return self.code


def flush_and_exit(code: int) -> NoReturn:
    """The process ends with ``code`` now, what it printed delivered, nothing else waited for."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say to it
            stream.flush()
    os._exit(code)


def quiet_prefect() -> Callable[[], None]:
    """Prefect's complaints about the API, one per queued event and log batch, say nothing new now.
    Handlers, not loggers: Prefect's internal loggers ignore their level (``SafeLogger``). Returns
    what puts them back (the API came back)."""
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] == "prefect"]
    handlers = {
        h for logger in [logging.getLogger(), *map(logging.getLogger, names)] for h in logger.handlers
    }
    levels, raising = {h: h.level for h in handlers}, logging.raiseExceptions
    for handler in handlers:
        handler.setLevel(logging.CRITICAL)
    logging.raiseExceptions = False  # the API log handler prints each failed batch to stderr otherwise

    def loud() -> None:
        for handler, level in levels.items():
            handler.setLevel(level)
        logging.raiseExceptions = raising

    return loud


#: A command's ending: (its flow run's outcome, the run's final state, or None when the watch ends the
#: command after the API was lost) -> the exit code; it prints the summary and the gate.
Ending: TypeAlias = Callable[[Any, Any], int]
