"""Exit codes: 0 done (ci: every gate passed), 1 a gate failed or no verdict, 2 bad input; 130 and 143
interrupted (SIGINT, SIGTERM), finished calls cached."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class Terminated(BaseException):
    """SIGTERM before a flow run took over the signal (Prefect's engine raises its own then)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM ends the block with ``Terminated`` instead of killing the process outright: calls
    already sent (a run's head start) then end as a Ctrl-C would. Only in the main thread."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
