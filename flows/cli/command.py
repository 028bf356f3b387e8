"""One command in this process, from its entry point to its exit code.

What the parts of a command share while it runs is this object: whether the command owns the
process (the command line's entry, flows/bench.py, where the API watch may end the process; never a
caller of ``flows.cli.main.main`` in its own process, such as a test), the Prefect servers it
started, and its API watch. The entry point makes it and passes it to the parts that need it; no
module keeps a command's state.
"""

from __future__ import annotations

import atexit
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, NoReturn

from flows.cli.api_watch import ApiWatch, Ending, flush_and_exit, quiet_prefect
from flows.cli.codes import EXIT_FAIL
from flows.cli.prefect_env import ServerRecord, configured_api_url
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
    #: Prefect's API went away before the run had an outcome: exit() does not wait on Prefect's threads.
    api_gone: bool = False

    def watch_api(self, ending: Ending) -> None:
        """Watch the API the command's flow will use (none: Prefect's temporary server, in this process)."""
        api_url = configured_api_url()
        if api_url and self.ends_process:
            kept = lambda: self.run.outcome  # noqa: E731
            self.watch = ApiWatch(
                api_url.rstrip("/"), lambda outcome: ending(outcome, None), kept, self.lost_before_run
            )
            threading.Thread(target=self.watch.run, name="skillab-api-watch", daemon=True).start()

    def lost_before_run(self) -> int | None:
        """The API is gone and the flow run never began (it cannot now): the command's exit code, said
        in one line; None if the run has begun (it goes on without the API)."""
        if self.run.began or self.run.outcome is not None:
            return None
        return self.ended_without_api()

    def ended_without_api(self) -> int:
        """The run cannot go on without Prefect's API: its finished calls cached, one line (once) saying
        so, and an exit that waits on none of Prefect's threads. The exit code."""
        if not self.api_gone:
            self.api_gone = True
            self.run.cache_writes.drain()
            print(
                f"skillab: the Prefect API at {configured_api_url()} stopped answering before the run "
                "ended (was its server stopped?); finished calls are cached, re-run to resume",
                file=sys.stderr,
                flush=True,
            )
        return EXIT_FAIL

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
        if self.api_gone:
            quiet_prefect()
            flush_and_exit(code)
        # The interpreter's own first step at exit: the callbacks registered with threading run (they
        # tell idle thread-pool workers, such as the embedded model's, to stop), then every non-daemon
        # thread is joined. Joining without the callbacks waits for ever on such a worker.
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        flush_and_exit(code)
