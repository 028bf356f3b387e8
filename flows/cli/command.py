"""One command in this process, from its entry point to its exit code.

What the parts of a command share while it runs is this object: whether the command owns the
process (the command line's entry, flows/bench.py, where the API watch may end the process; never a
caller of ``flows.cli.main.main`` in its own process, such as a test), the Prefect servers it
started, and its API watch. The entry point makes it and passes it to the parts that need it; no
module keeps a command's state.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, NoReturn

from flows.cli.api_watch import ApiWatch, Ending
from flows.cli.prefect_env import ServerRecord
from tasks.context import RunContext


@dataclass
class Command:
    ends_process: bool = False
    #: Servers this command started and has not yet confirmed (see prefect_env.launch_server).
    servers_started: list[ServerRecord] = field(default_factory=list)
    watch: ApiWatch | None = None
    #: What the command shares with its flow run (set for the run by flows.cli.run).
    run: RunContext = field(default_factory=RunContext)
    #: Whether the command may leave a warm process behind for the next ones (flows/cli/warm.py).
    leaves_warm: bool = True

    def watch_api(self, ending: Ending) -> None:
        """Watch the API the command's flow will use (none: Prefect's temporary server, in this process)."""
        from flows.cli.prefect_env import configured_api_url

        api_url = configured_api_url()
        if api_url and self.ends_process:
            kept = lambda: self.run.outcome  # noqa: E731
            self.watch = ApiWatch(api_url.rstrip("/"), lambda outcome: ending(outcome, None), kept)
            threading.Thread(target=self.watch.run, name="skillab-api-watch", daemon=True).start()

    def finish_once(self, state: Any, ending: Ending) -> int:
        """The command's ending for its flow run's final ``state``, run once: here, unless the watch
        ended the command already."""
        if self.watch is None:
            return ending(self.run.outcome_of(state), state)
        with self.watch.lock:
            if self.watch.code is None:
                self.watch.code = ending(self.run.outcome_of(state), state)
            return self.watch.code

    def exiting(self, code: int) -> None:
        """The command is exiting with ``code``: if the API is gone, the watch exits with it, without
        waiting for Prefect's threads."""
        if self.watch is not None:
            with self.watch.lock:
                if self.watch.code is None:
                    self.watch.code = code

    def exit(self, code: int) -> NoReturn:
        """Exit as the interpreter would, without its final teardown.

        What must happen at exit still happens: other threads are joined and the exit handlers run
        (Prefect sends its queued events to the server there, logs are flushed). Tearing down the
        interpreter afterwards frees the ~300,000 objects Prefect and the libraries create, one by
        one: 0.6-0.8 s of every command here, for nothing a user needs."""
        # if Prefect's API is gone, its threads would wait for it for ever (flows/cli/api_watch.py)
        self.exiting(code)
        # The interpreter's own first step at exit: the callbacks registered with threading run (they
        # tell idle thread-pool workers, such as the embedded model's, to stop), then every non-daemon
        # thread is joined. Joining without the callbacks waits for ever on such a worker.
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say to it
                stream.flush()
        os._exit(code)
