"""`python -m flows.bench`: the command line (the commands live in flows/cli/)."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING, NoReturn

from flows.cli import help_cache

if TYPE_CHECKING:
    from flows.cli.command import Command


def main(argv: list[str] | None = None) -> NoReturn:
    """The command, then a quick exit (also the `skillab` console script)."""
    argv = sys.argv[1:] if argv is None else argv
    if help_cache.wants_help(argv):
        help_text(argv)
    from flows.cli.command import Command
    from flows.cli.main import main as run_command
    from flows.engine.gc import lean_command

    lean_command()
    # this process ends with the command: the API watch may end it early
    command = Command(ends_process=True)
    exit_now(run_command(argv, command), command)


def help_text(argv: list[str]) -> NoReturn:
    """Help, as kept from the last identical request (flows/cli/help_cache.py), else built and kept."""
    text = help_cache.kept(argv)
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        os._exit(0)
    from flows.cli.main import main as run_command

    recorder = help_cache.Recorder(sys.stdout)  # type: ignore[arg-type]
    sys.stdout = recorder  # type: ignore[assignment]
    try:
        code = run_command(argv)  # help exits (SystemExit 0) before any command runs
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdout = recorder.out  # type: ignore[assignment]
    if code == 0:
        help_cache.keep(argv, recorder.copy.getvalue())
    sys.stdout.flush()
    os._exit(code)


def exit_now(code: int, command: Command) -> NoReturn:
    """Exit as the interpreter would, without its final teardown.

    What must happen at exit still happens: other threads are joined and the exit handlers run
    (Prefect sends its queued events to the server there, logs are flushed). Tearing down the
    interpreter afterwards frees the ~300,000 objects Prefect and the libraries create, one by one:
    0.6-0.8 s of every command here, for nothing a user needs."""
    # The interpreter's own first step at exit: the callbacks registered with threading run (they tell
    # idle thread-pool workers, such as the embedded model's, to stop), then every non-daemon thread
    # is joined. Joining without the callbacks waits for ever on such a worker.
    # if Prefect's API is gone, its threads would wait for it for ever (flows/cli/api_watch.py)
    command.exiting(code)
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say to it
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
