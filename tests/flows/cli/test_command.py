"""A command's state is its own object: only the command line's entry may end the process from the
API watch, and a command's ending runs once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from executors.errors import InputError
from flows.cli.api_watch import ApiWatch
from flows.cli.codes import EXIT_FAIL
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


@pytest.mark.parametrize(
    ("raised", "own", "answers", "expected"),
    [
        (httpx.ConnectError("All connection attempts failed"), True, "refused", EXIT_FAIL),
        (RuntimeError("Failed to reach API at http://127.0.0.1:9/api"), True, "refused", EXIT_FAIL),
        (httpx.ConnectError("All connection attempts failed"), False, "refused", InputError),
        (httpx.ConnectError("the model's endpoint"), True, "answered", httpx.ConnectError),
        (ValueError("a bug"), True, "refused", ValueError),
    ],
)
def test_a_flow_that_could_not_reach_its_api_ends_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: Exception,
    own: bool,
    answers: str,
    expected: int | type[Exception],
) -> None:
    """The flow raised because Prefect's client gave up on the API (the watch, every 2 s, had not yet
    seen it go): skillab's own server gone is one line and exit code 1, the answers in cached; a
    configured API is the user's setting (exit 2); an API that still answers, or another error, is
    not this (raised as it is)."""
    import flows.cli.run as run

    monkeypatch.setattr(run, "prepare_prefect", lambda started: lambda meanwhile=None: None)
    monkeypatch.setattr(run, "own_api", lambda: own)
    monkeypatch.setattr(run, "configured_api_url", lambda: "http://127.0.0.1:9/api")
    monkeypatch.setattr(run, "probe", lambda url: answers)
    command = Command()
    drained: list[bool] = []

    def drain() -> list[str]:
        drained.append(True)
        return []

    monkeypatch.setattr(command.run.cache_writes, "drain", drain)

    async def flow() -> Any:
        raise raised

    def ending(outcome: Any, state: Any) -> int:
        raise AssertionError("no outcome to end with")

    if isinstance(expected, int):
        assert run.run_flow(command, lambda: flow, ending) == expected
        err = capsys.readouterr().err
        assert err.count("stopped answering before the run ended") == 1 and drained == [True]
        assert command.api_gone  # the exit waits on none of Prefect's threads
        assert command.ended_without_api() == EXIT_FAIL and drained == [True]  # said and drained once
    else:
        with pytest.raises(expected):
            run.run_flow(command, lambda: flow, ending)
        assert not command.api_gone and not drained
