"""Exit codes: 0 done (ci: every gate passed), 1 a gate failed or no verdict, 2 bad input; 130 and 143
interrupted (SIGINT, SIGTERM), finished calls cached."""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class Terminated(BaseException):
    """SIGTERM before a flow run took over the signal (Prefect's engine raises its own then)."""


#: Seconds a signal has to end the block before it is raised again.
INTERRUPT_AGAIN_S = 10.0


@contextlib.contextmanager
def run_signals() -> Iterator[None]:
    """SIGTERM ends the block with ``Terminated`` instead of killing the process outright: calls
    already sent (a run's head start) then end as a Ctrl-C would. Ctrl-C raises KeyboardInterrupt as
    ever. Either is raised again every ``INTERRUPT_AGAIN_S`` seconds until it has ended the block:
    Python can only report an exception raised where it cannot propagate (a C library's callback, an
    import lock's weakref callback: "Exception ignored in ..."), and a signal landing there would be
    lost, the command waiting on its calls as if nothing had happened. Again means through whatever
    handler the signal has then (a flow run's own, for SIGTERM). Only in the main thread."""
    ended = threading.Event()
    insisting: set[int] = set()

    def insist(signum: int) -> None:
        while not ended.wait(INTERRUPT_AGAIN_S):
            _thread.interrupt_main(signal.Signals(signum))  # as the signal: through its current handler

    def raising(exc: type[BaseException]) -> Callable[[int, FrameType | None], None]:
        def handle(signum: int, frame: FrameType | None) -> None:
            if signum not in insisting:
                insisting.add(signum)
                threading.Thread(target=insist, args=(signum,), name="skillab-signal", daemon=True).start()
            raise exc

        return handle

    try:
        previous = {
            sig: signal.signal(sig, raising(exc))
            for sig, exc in ((signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt))
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
