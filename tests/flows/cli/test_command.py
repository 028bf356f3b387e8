"""A command's state is its own object: only the command line's entry may end the process from the
API watch, and a command's ending runs once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from flows.cli.api_watch import ApiWatch
from flows.cli.command import Command


def test_a_command_called_in_process_never_watches_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    command = Command()  # what flows.cli.main.main makes for a caller such as a test
    command.watch_api(lambda outcome, state: 0)
    assert command.watch is None


def test_the_ending_runs_once_here_or_from_the_watch() -> None:
    endings: list[Any] = []

    def ending(outcome: Any, state: Any) -> int:
        endings.append(state)
        return 7

    # a finished flow run's final state (what it kept, else its result)
    state = SimpleNamespace(state_details=SimpleNamespace(flow_run_id="run-1"), result=lambda **_: "done")
    command = Command(ends_process=True)
    assert command.finish_once(state, ending) == 7 and endings == [state]  # no watch: the ending itself
    command.watch = ApiWatch("http://127.0.0.1:9/api", lambda outcome: 1, lambda: None)
    command.watch.code = 1  # the watch ended the command first (the API went away)
    assert command.finish_once(state, ending) == 1 and endings == [state]
    fresh = Command(ends_process=True, watch=ApiWatch("http://127.0.0.1:9/api", lambda o: 1, lambda: None))
    fresh.exiting(3)  # the process exits with 3: a watch that wakes later exits with the same code
    assert fresh.watch is not None and fresh.watch.code == 3
