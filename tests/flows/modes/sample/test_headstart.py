"""The head start: calls sent while Prefect starts are their task runs' first attempts. Over real HTTP
and a real flow run: no unit is called twice, a failed early call is retried by its task run, the
budgets hold, and what was answered before the command stopped is resumed from the cache.

Each test lets the head start finish before the flow starts (on a real command it races Prefect's
start-up), so how many calls go early is known."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.inputs.options import BenchOptions
from flows.modes.sample import headstart
from flows.modes.sample.prepare import prepare
from tasks.context import EarlyCalls, RunContext
from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import answer, make_project, report_runs, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")
UNITS = 16  # 8 samples x 2 variants


TAKEN_OVER = 8  # calls the head start has sent when the flow's runner takes over, in these tests


def joined_head_start(monkeypatch: pytest.MonkeyPatch, sent: list[int]) -> None:
    """Each command's head start runs to its end before the command goes on to start its flow; the
    list gets how many calls each sent."""
    real = headstart.head_start

    @contextlib.contextmanager
    def joined(prepared: Any, run: RunContext) -> Iterator[threading.Thread | None]:
        with real(prepared, run) as thread:
            assert thread is not None
            thread.join(60)
            sent.append(len(run.early.close()))  # it is over: this only reads what it sent
            yield thread

    monkeypatch.setattr(headstart, "head_start", joined)


@pytest.fixture
def finished_first(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The head start joined (``joined_head_start``), and the runner taking over once it has sent
    ``TAKEN_OVER`` calls, so how many go early is known."""
    sent: list[int] = []
    joined_head_start(monkeypatch, sent)
    real_add = EarlyCalls.add

    def add(self: EarlyCalls, key: str, call: Any) -> bool:
        if len(self._calls) >= TAKEN_OVER:  # nothing is taken before the flow starts
            self.close()
        return real_add(self, key, call)

    monkeypatch.setattr(EarlyCalls, "add", add)
    return sent


def run(project: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = project / "reports"
    code = main(["run", "--executor", "openai", "--output-dir", str(out), "--quiet", *args])
    newest = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    return code, json.loads(newest.read_text())


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(folder := make_project(tmp_path / "p"))
    return folder


def test_early_calls_are_taken_by_their_task_runs(
    project: Path, monkeypatch: pytest.MonkeyPatch, finished_first: list[int]
) -> None:
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        code, report = run(project, "--concurrency", "1", "--cache-dir", str(project / "cache"))
        calls = [(c.system, c.prompt) for c in server.calls]
    assert code == 0 and finished_first == [TAKEN_OVER]  # the rest from task runs
    assert len(calls) == UNITS
    assert len(set(calls)) == UNITS  # no unit was called twice
    assert report["meta"]["calls"] == UNITS and report["meta"]["cacheHits"] == 0
    entries = report_runs(report)
    assert len(entries) == UNITS and all(e["ok"] and e["attempts"] == 1 and not e["cached"] for e in entries)


def test_a_failed_early_call_is_retried_by_its_task_run(
    project: Path, monkeypatch: pytest.MonkeyPatch, finished_first: list[int]
) -> None:
    seen: list[Call] = []

    def fault_for(call: Call) -> Fault | None:
        seen.append(call)
        return Fault(status=503) if len(seen) == 1 else None  # the very first call: an early one

    with FakeProvider(answer, fault_for=fault_for) as server:
        use_provider(monkeypatch, server.url)
        code, report = run(project, "--concurrency", "4", "--retry-backoff", "0", "--no-cache")
        total = server.count()
    assert code == 0 and finished_first == [TAKEN_OVER]
    assert total == UNITS + 1  # one retry, nothing else repeated
    retried = [e for e in report_runs(report) if e["attempts"] == 2]
    assert len(retried) == 1 and retried[0]["ok"]
    assert report["meta"]["calls"] == UNITS


def test_max_calls_bounds_the_head_start(
    project: Path, monkeypatch: pytest.MonkeyPatch, finished_first: list[int]
) -> None:
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        _, report = run(project, "--concurrency", "8", "--max-calls", "3", "--no-cache")
        total = server.count()
    assert finished_first == [3] and total == 3 and report["meta"]["calls"] == 3
    assert len(report["meta"]["notRun"]) == UNITS - 3


def test_a_head_start_sends_on_until_the_runner_takes_over(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long Prefect takes, no wave cap leaves the calls idle: a head start whose flow never
    came sent every unit, one at a time, and the task runs took them all."""
    sent: list[int] = []
    joined_head_start(monkeypatch, sent)
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        code, report = run(project, "--concurrency", "1", "--no-cache")
        total = server.count()
    assert code == 0 and sent == [UNITS] and total == UNITS
    assert report["meta"]["calls"] == UNITS
    assert all(e["ok"] and e["attempts"] == 1 for e in report_runs(report))


def test_a_head_start_stops_at_its_time_limit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[int] = []
    joined_head_start(monkeypatch, sent)
    monkeypatch.setattr(headstart, "LIMIT_S", -1.0)  # over before its first call
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        code, report = run(project, "--concurrency", "4", "--no-cache")
        total = server.count()
    assert code == 0 and sent == [0] and total == UNITS and report["meta"]["calls"] == UNITS


def test_answers_sent_early_survive_a_command_that_stops_before_its_flow(
    project: Path, monkeypatch: pytest.MonkeyPatch, finished_first: list[int]
) -> None:
    cache = ["--cache-dir", str(project / "cache"), "--concurrency", "1"]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        with monkeypatch.context() as m:
            m.setattr("flows.modes.sample.cli.run_flow", interrupted)
            assert main(["run", "--executor", "openai", "--quiet", *cache]) == 130
        early = server.count()
        code, report = run(project, *cache)
        total = server.count()
    assert early == TAKEN_OVER and finished_first == [TAKEN_OVER, TAKEN_OVER] and code == 0
    assert total == UNITS and report["meta"]["cacheHits"] == TAKEN_OVER
    assert report["meta"]["calls"] == UNITS - TAKEN_OVER


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        ({}, True),
        ({"head_start": False}, False),
        ({"sequential": True}, False),
        ({"batch": True}, False),
        ({"shards": 2}, False),
        ({"executor": "local"}, False),  # the embedded model: loaded by the command, not an HTTP call
    ],
)
def test_which_runs_get_a_head_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update: dict[str, Any], expected: bool
) -> None:
    project = make_project(tmp_path / "p")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    options = BenchOptions(**{"executor": "openai", "judge": False, **update})
    assert headstart.eligible(prepare(options, project)) is expected


def test_every_call_sent_is_settled_even_if_walking_the_units_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task run waits for the early call registered for its unit: none may be left unsettled."""
    project = make_project(tmp_path / "p")
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        prepared = prepare(BenchOptions(executor="openai", judge=False, cache=False), project)
        units = prepared.units()

        def two_then_fail(self: headstart.HeadStart) -> Iterator[Any]:
            yield from units[:2]
            raise PermissionError("the cache folder is unreadable")

        monkeypatch.setattr(headstart.HeadStart, "first_units", two_then_fail)
        early = EarlyCalls()
        early.open()
        with pytest.raises(PermissionError):
            headstart.HeadStart(prepared, early).run()
        calls = [early.take(u.key) for u in units[:2]]
        early.close()
    assert all(c is not None and c.done() and c.result().ok for c in calls)
