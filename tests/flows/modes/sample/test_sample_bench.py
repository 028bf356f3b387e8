"""The sample-mode flow end to end under Prefect's test harness, against a real local server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import tasks.grade
from executors.schema import RunResult
from flows.cli.main import main
from flows.engine.runner import UnitRunner
from graders.schema import AssertionResult, Sample
from tasks.schema import Unit
from tests.fakes.provider import FakeProvider, Fault
from tests.flows.helpers import make_project, run_capitals, subprocess_env

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_end_to_end_with_assertions_and_judge(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", rubric=True)
    code, report = run_capitals(
        project, "--judge-executor", "openai", "--judge-model", "gpt-4o", monkeypatch=monkeypatch
    )
    assert code == 0 and report is not None
    meta = report["meta"]
    assert (
        meta["variants"] == ["v1", "v2"] and meta["model"] == "gpt-4o-mini" and meta["executor"] == "openai"
    )
    assert meta["sampleCount"] == 8 and meta["taskCount"] == 16 and meta["judgeModel"] == "openai:gpt-4o"
    assert len(meta["skillHashes"]["v1"]) == 64
    v1, v2 = report["summary"]["v1"], report["summary"]["v2"]
    # v1: contains passes, word count fails -> 3.0; judge 2 -> composite 2.5. v2: 5 and 5 -> 5.
    assert v1["avgAssertionScore"] == 3.0 and v1["avgLlmScore"] == 2.0 and v1["avgCompositeScore"] == 2.5
    assert v2["avgCompositeScore"] == 5.0 and v2["errorCount"] == 0
    entry = report["results"][0]["variants"]["v2"]
    assert entry["ok"] and entry["assertions"]["passed"] == 2 and entry["llmScore"] == 5
    assert entry["output"] == entry["outputPreview"] and entry["inputTokens"] > 0
    comp = report["comparisons"][0]
    assert comp["verdict"]["label"] == "BETTER" and comp["paired"]["improved"] == 8
    # Judge prompts never reveal the arm.
    judge_calls = [c for c in server.calls if "strict, fair grader" in c.system]
    assert len(judge_calls) == 16
    assert not any("v1" in c.prompt or "v2" in c.prompt for c in judge_calls)


def test_repeat_makes_real_calls_and_cache_resumes(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=3)
    code, report = run_capitals(project, "--repeat", "3", monkeypatch=monkeypatch)
    assert code == 0 and report is not None
    for country in ("France", "Japan", "Italy"):
        for artifact in ("Answer the question.", "Answer with one word."):
            calls = [c for c in server.calls if c.system == artifact and country in c.prompt]
            assert len(calls) == 3
    assert report["summary"]["v1"]["repeat"]["runMeans"] == [3.0, 3.0, 3.0]
    assert "welchRuns" in report["comparisons"][0]
    before = server.count()
    code, again = run_capitals(project, "--repeat", "3", monkeypatch=monkeypatch)
    assert code == 0 and server.count() == before  # a re-run calls nothing
    assert again is not None and again["meta"]["cacheHits"] == 18 and again["meta"]["calls"] == 0


def test_concurrency_caps_model_calls_at_the_server(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More task runs than slots are in flight; the cap on calls the server sees must still hold.
    server.delay = 0.15
    project = make_project(tmp_path / "p", n=8)
    code, report = run_capitals(
        project, "--repeat", "2", "--concurrency", "3", "--no-judge", monkeypatch=monkeypatch
    )
    assert code == 0 and report is not None and report["meta"]["calls"] == 32
    assert server.peak == 3


def test_answers_are_graded_while_the_calls_are_out(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One call at a time, 0.1 s each: the first answers' assertions run while the later calls are out
    # (tasks/grade.py), not all after the last; every answer is still graded once.
    server.delay = 0.1
    order: list[tuple[str, str]] = []
    grade_one, paid = tasks.grade.grade_one, UnitRunner.paid

    def graded(sample: Sample, result: RunResult) -> list[AssertionResult]:
        order.append(("graded", sample.sample_id))
        return grade_one(sample, result)

    def answered(runner: UnitRunner, unit: Unit, result: RunResult) -> RunResult:
        order.append(("answered", unit.sample_id))
        return paid(runner, unit, result)

    monkeypatch.setattr(tasks.grade, "grade_one", graded)
    monkeypatch.setattr(UnitRunner, "paid", answered)
    project = make_project(tmp_path / "p", n=4)
    # no head start: its calls, answered while Prefect is imported, reach the runner all at once
    argv = ("--concurrency", "1", "--no-judge", "--no-head-start")
    code, report = run_capitals(project, *argv, monkeypatch=monkeypatch)
    assert code == 0 and report is not None
    assert (
        report["summary"]["v1"]["avgAssertionScore"] == 3.0
        and report["summary"]["v2"]["avgAssertionScore"] == 5.0
    )
    answers = [i for i, (what, _) in enumerate(order) if what == "answered"]
    grades = [i for i, (what, _) in enumerate(order) if what == "graded"]
    assert len(answers) == len(grades) == 8
    assert grades[0] < answers[-1]


def test_transient_errors_retry_and_permanent_errors_are_recorded(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=2)
    server.faults = [Fault(status=429, headers={"Retry-After": "0.2"}), Fault(status=500)]
    bad = "Japan"
    server.fault_for = lambda call: (
        Fault(status=400) if bad in call.prompt and "one word" in call.system else None
    )
    code, report = run_capitals(project, "--no-cache", "--retries", "2", monkeypatch=monkeypatch)
    assert code == 0 and report is not None
    v2 = report["summary"]["v2"]
    assert v2["errorCount"] == 1 and v2["errorsByKind"] == {"permanent": 1}
    failed = report["results"][1]["variants"]["v2"]
    assert not failed["ok"] and "HTTP 400" in failed["error"] and failed["attempts"] == 1
    assert report["summary"]["v1"]["errorCount"] == 0  # the 429 and the 500 were retried


def test_blind_mode_hides_names_and_keeps_mapping(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=2)
    code, report = run_capitals(project, "--blind", monkeypatch=monkeypatch)
    assert code == 0 and report is not None
    assert set(report["summary"]) == {"Variant A", "Variant B"}
    assert sorted(report["blindMapping"].values()) == ["v1", "v2"]
    body = json.dumps({k: v for k, v in report.items() if k not in {"blindMapping", "meta"}})
    assert '"v1"' not in body and '"v2"' not in body


def test_ci_threshold_and_require(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=8)
    monkeypatch.chdir(project)
    common = ["--executor", "openai", "--quiet"]
    common += ["--output-dir", str(project / "r"), "--cache-dir", str(project / "c")]
    assert main(["ci", *common, "--threshold", "3.0"]) == 0
    assert main(["ci", *common, "--threshold", "3.5"]) == 1  # v1 averages 3.0
    # v1 against v2 as control: 8 of 8 cases regress by 2 points -> WORSE
    assert main(["ci", *common, "--threshold", "1", "--variants", "v2,v1", "--require", "not-worse"]) == 1
    assert main(["ci", *common, "--threshold", "1", "--require", "better"]) == 0


def test_dry_run_calls_nothing(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=4)
    code, report = run_capitals(project, "--dry-run", "--repeat", "2", monkeypatch=monkeypatch)
    assert code == 0 and report is None and server.count() == 0
    out = capsys.readouterr().out
    assert "4 samples x 2 variants (v1, v2) x 2 run(s) = 16 model calls" in out and "estimated cost" in out


def test_a_run_that_measured_nothing_fails_in_one_line_per_variant(tmp_path: Path) -> None:
    """Every call refused (nothing listens on the port): no traceback per call on the terminal, one
    line per variant naming the endpoint, exit 1; the report is on disk."""
    project = make_project(tmp_path / "p", n=3)
    with socket.socket() as s:  # a port nothing listens on once it is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["run", "--executor", "openai", "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1"]
    args += ["--no-judge", "--retries", "0", "--no-cache", "--output-dir", str(tmp_path / "out")]
    done = subprocess.run(
        [sys.executable, "-m", "flows.bench", *args],
        cwd=project,
        env=subprocess_env() | {"OPENAI_API_KEY": "sk-test"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "ConnectError" in done.stderr
    cause = f"connection error (http://127.0.0.1:{port}/v1/chat/completions): ConnectError"
    failed = [line for line in done.stderr.splitlines() if line.startswith("skillab: FAIL")]
    assert len(failed) == 2 and all(
        f"every execution failed (3/3), nothing was measured: {cause}" in line for line in failed
    )
    assert cause in done.stdout  # the summary's failure diagnosis names it too
    assert len(list((tmp_path / "out").glob("*.json"))) == 1
