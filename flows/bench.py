"""`python -m flows.bench`: the command line (the commands live in flows/cli/)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from flows.cli import help_cache

SWITCH_S = 0.0005


def main(argv: list[str] | None = None) -> NoReturn:
    """The command, then a quick exit (also the `skillab` console script)."""
    argv = sys.argv[1:] if argv is None else argv
    if help_cache.wants_help(argv):
        help_text(argv)
    # pydantic reads every installed distribution's entry points for its plugins when it builds the
    # first model (12 ms of every command before its first call here); skillab's own models need no
    # plugin. Only where the user has not said otherwise.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from flows.engine.gc import lean_command

    lean_command()  # before the imports: ~20-40 ms of collections among their objects
    from flows.cli import warm

    ticket = warm.ticket()
    if ticket is not None and (code := warm.hand_over(argv, ticket[0])) is not None:
        os._exit(code)  # the warm process ran it (flows/cli/warm.py)
    from flows.cli.command import Command
    from flows.cli.main import main as run_command

    # The event loops that send and read the calls wait for the GIL whenever a thread imports
    # (Prefect, then the report's modules, while the first calls are out) or writes the cache: 0.5 ms
    # turns instead of CPython's 5 measured ~0.1 s off 1,000 calls in a new process (6.5 -> 6.4 s).
    sys.setswitchinterval(SWITCH_S)
    # this process ends with the command: the API watch may end it early
    command = Command(ends_process=True)
    code = run_command(argv, command)
    if ticket is not None and command.leaves_warm:
        warm.leave_behind(*ticket)
    warm.note_imports()
    command.exit(code)


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


if __name__ == "__main__":
    main()
