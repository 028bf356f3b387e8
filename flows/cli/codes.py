"""Exit codes: 0 done (ci: every gate passed), 1 a gate failed or no verdict, 2 bad input; 130 and 143
interrupted (SIGINT, SIGTERM), finished calls cached."""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class Terminated(BaseException):
    """SIGTERM before a flow run took over the signal (Prefect's engine raises its own then)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


#: Seconds a Ctrl-C has to end the block before it is raised again.
INTERRUPT_AGAIN_S = 10.0


@contextlib.contextmanager
def run_signals() -> Iterator[None]:
    """SIGTERM ends the block with ``Terminated`` instead of killing the process outright: calls
    already sent (a run's head start) then end as a Ctrl-C would. Ctrl-C raises KeyboardInterrupt as
    ever, and again every ``INTERRUPT_AGAIN_S`` seconds until it has ended the block: Python can only
    report an exception raised where it cannot propagate (inside a C library's callback, "Exception
    ignored in ..."), and a Ctrl-C landing there would be lost, the command waiting on its calls as if
    nothing had happened. Only in the main thread."""
    ended = threading.Event()
    insisting = False

    def insist() -> None:
        while not ended.wait(INTERRUPT_AGAIN_S):
            _thread.interrupt_main()  # as a signal: through this block's handler again

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal insisting
        if not insisting:
            insisting = True
            threading.Thread(target=insist, name="skillab-interrupt", daemon=True).start()
        raise KeyboardInterrupt

    try:
        previous = {
            sig: signal.signal(sig, h)
            for sig, h in ((signal.SIGTERM, _terminate), (signal.SIGINT, interrupt))
        }
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        ended.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
