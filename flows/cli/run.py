"""The run protocol: what every command that runs a flow does around it, in one place.

A mode's command checks its inputs (exit 2 before anything runs), then hands this its flow and its
ending: Prefect's API is made ready (a local server started, or found; its start overlaps the flow's
imports), the API is watched (a server that goes away mid-run ends the command soon, its work on
disk), the flow runs, and its outcome reaches the ending once (the summary, then the gate's exit
code), here or from the watch. SIGTERM before the flow run takes over the signal ends the command as
Ctrl-C would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from executors.errors import InputError
from flows.cli.api_watch import Ending
from flows.cli.codes import run_signals
from flows.cli.command import Command
from flows.cli.prefect_env import configured_api_url, prepare_prefect, probe, read_record

#: Starts the flow run: its awaitable ends with the flow run's final state.
FlowCall = Callable[[], Awaitable[Any]]


def run_flow(
    command: Command,
    load: Callable[[], FlowCall],
    ending: Ending,
    meanwhile: Callable[[], object] | None = None,
) -> int:
    """Run the flow ``load`` returns and end with ``ending``'s exit code.

    ``load`` imports the mode's flow module: it runs after Prefect's settings are in place (Prefect
    reads them at import). ``meanwhile`` runs while a server this command started comes up."""
    with run_signals():
        prefect_ready = prepare_prefect(started=command.servers_started)
        call = load()
        prefect_ready(meanwhile=meanwhile)
        own = own_api()  # now: a stopped server's record goes with it
        command.watch_api(ending)
        try:
            with command.run.active():
                state = asyncio.run(awaited(call))
        except Exception as exc:
            api = configured_api_url()  # None: Prefect's temporary server, in this process
            if not unreachable(exc) or api is None or probe(api) == "answered":
                raise
            if not own:
                raise InputError(
                    f"Prefect API: {exc} (configured by PREFECT_API_URL, a Prefect profile or settings "
                    "file: start that server, or remove the setting for skillab's local one)"
                ) from None
            # skillab's own server answered when the command began and went away: Prefect's client
            # gave up before the API watch ended the command
            if command.run.outcome is None:
                return command.ended_without_api()
            command.api_gone = True
            return command.finish_once(None, ending)
    return command.finish_once(state, ending)


def unreachable(exc: BaseException) -> bool:
    """The flow ended because Prefect's API could not be reached (refused, reset, timed out)."""
    from executors.lean_httpx import httpx

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.TransportError) or "Failed to reach API" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def own_api() -> bool:
    """The command's API is the local server skillab runs (not one the user configured)."""
    record = read_record()
    return record is not None and configured_api_url() == record.api_url


async def awaited(call: FlowCall) -> Any:
    return await call()
