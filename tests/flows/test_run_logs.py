"""What a person watching a nightly run in the Prefect UI reads: the flow run's log (plan, progress
every few percent, the first retry and failure of each cause, verdicts, the report, the regression
outcome) and its final state message, read back from a real Prefect server through its client."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import answer, make_project, run_tags, use_provider
from tests.flows.test_nightly import nightly_state

pytestmark = pytest.mark.usefixtures("prefect_harness")


async def read_logs(flow_run_id: Any) -> list[tuple[int, str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import LogSort

    async with get_client() as client:
        logs = await client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])),
            sort=LogSort.TIMESTAMP_ASC,
        )
    return [(log.level, log.message) for log in logs]


def logs_until(flow_run_id: Any, last: str) -> list[tuple[int, str]]:
    """The run's logs once its closing line has arrived (they are sent in the background)."""
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()
    for _ in range(150):
        logs = asyncio.run(read_logs(flow_run_id))
        if any(last in m for _, m in logs):
            return logs
        time.sleep(0.2)
    pytest.fail(f"no {last!r} in the logs of {flow_run_id}: {logs}")


def faults(call: Call) -> Fault | None:
    """France's v2 call meets one 429 (then succeeds); Japan's v1 call is always refused."""
    if "Japan" in call.prompt and "one word" not in call.system:
        return Fault(status=400, body='{"error": {"message": "refused for testing"}}')
    if "France" in call.prompt and "one word" in call.system and not getattr(faults, "sent", False):
        faults.sent = True  # type: ignore[attr-defined]
        return Fault(status=429)
    return None


def test_a_nightly_run_tells_its_story(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "suite", n=8)
    reports = tmp_path / "reports"
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\noutput_dir: {reports}\n"
        f"cache_dir: {tmp_path / 'c'}\nretry_backoff: 0.05\n"
    )
    with FakeProvider(answer, fault_for=faults) as server:
        use_provider(monkeypatch, server.url)
        first = nightly_state(project / "skillab.yaml", "logs")
        (project / "skills" / "v2.md").write_text("Answer the question in full sentences.")
        second = nightly_state(project / "skillab.yaml", "logs")
    assert first.is_completed() and second.is_failed()
    # the verdict is in the final state message of both flow runs
    assert "v2 vs v1: " in first.message and "suite logs: first run on gpt-4o-mini" in first.message
    # The nightly run is the benchmark's own flow run (no subflow): its log holds the story.
    logs = logs_until(first.state_details.flow_run_id, "suite logs:")
    text = [m for _, m in logs]
    plan = next(m for m in text if m.startswith("plan: "))
    assert "8 cases × 2 variants (v1, v2) × 1 run(s) = 16 model calls" in plan and "estimated cost" in plan
    progress = [m for m in text if m.startswith("executing: ") and "%)" in m]
    assert 2 <= len(progress) <= 5 and "16/16 (100%)" in progress[-1]  # quarters, not one line per call
    assert "retries 1 (HTTP 429 1)" in progress[-1] and "errors 1 (permanent 1)" in progress[-1]
    retry = [(lvl, m) for lvl, m in logs if "retrying" in m]
    assert len(retry) == 1 and retry[0][0] == 30 and "France" not in retry[0][1]  # the unit's label
    assert "cap-france · v2 · run 1" in retry[0][1] and "HTTP 429" in retry[0][1]
    failed = [(lvl, m) for lvl, m in logs if "failed (permanent)" in m]
    assert len(failed) == 1 and failed[0][0] == 30 and "refused for testing" in failed[0][1]
    # the failed call is one warning line: no ERROR line, no traceback from Prefect
    assert not [m for lvl, m in logs if lvl >= 40] and not any("Traceback" in m for m in text)
    assert any(m.startswith("verdict: v2 vs v1: ") for m in text)
    assert any(m.startswith("report: ") and ".json" in m and "/suite/logs" in m for m in text)

    logs = logs_until(second.state_details.flow_run_id, "REGRESSION in v2")
    errors = [m for lvl, m in logs if lvl >= 40]
    assert any(m.startswith("REGRESSION in v2 against the previous run") for m in errors)
    assert not any("Traceback" in m for _, m in logs)
    assert any("v2 against the previous run" in m and "WORSE" in m for _, m in logs)
    assert second.name == "Failed" and "outcome:regressed" in run_tags(second)  # Prefect's own state name
    assert "REGRESSION in v2" in (second.message or "")
    assert "v2: mean 5.00 → 3.00, -2.00" in (second.message or "")


def test_twenty_failed_calls_are_a_few_lines_not_a_flood(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect logs each failed task run at ERROR with a 20-line traceback; a night's Logs tab gets
    the first failure of each kind and counts instead, and each task run keeps its error in its state."""
    project = make_project(tmp_path / "suite", n=5)
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\nrepeat: 2\noutput_dir: {tmp_path / 'r'}\n"
        f"cache_dir: {tmp_path / 'c'}\nretry_backoff: 0.01\nretries: 1\n"
    )
    down = Fault(status=500, body='{"error": {"message": "overloaded"}}')

    refused = Fault(status=400, body='{"error": {"message": "bad request"}}')

    def faults_20(call: Call) -> Fault | None:
        """Every call fails: 4 cases x 2 variants x 2 runs overloaded (16), France's 4 refused."""
        return refused if "France" in call.prompt else down

    with FakeProvider(answer, fault_for=faults_20) as server:
        use_provider(monkeypatch, server.url)
        state = nightly_state(project / "skillab.yaml", "flood")
    assert (
        state.is_failed() and state.name == "Failed" and "outcome:errors" in run_tags(state)
    )  # nothing measured
    logs = logs_until(state.state_details.flow_run_id, "Finished in state")
    errors = [m for level, m in logs if level >= 40]
    assert len(errors) <= 3, errors
    assert not any("Traceback" in m or "Task run failed" in m for _, m in logs)
    said = [m for _, m in logs if m.startswith("executing: ") and "failed (" in m]
    # a 500 that outlived its retries is not called transient
    assert (
        len(said) == 2 and any("(after retries)" in m for m in said) and any("(permanent)" in m for m in said)
    )
    assert not any("transient" in m for m in said)
    assert any("errors 20 (after retries 16, permanent 4)" in m for _, m in logs)


def test_a_cli_run_keeps_the_terminal_quiet_and_the_ui_informed(tmp_path: Path) -> None:
    """A user's `run` in its own process, with skillab's Prefect defaults: the terminal shows no
    log lines, the flow run's log has the plan and the verdict, and no line per task run."""
    import subprocess
    import sys

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    from tests.flows.helpers import ROOT, subprocess_env

    project = make_project(tmp_path / "p", n=4)
    with FakeProvider(answer) as server:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "flows.bench", "run", "--executor", "openai", "--suite", "quiet-cli"),
                *("--output-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"), "--no-judge"),
            ],
            cwd=project,
            env=subprocess_env(server.url) | {"PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert "plan: " not in done.stderr and "Finished in state" not in done.stderr, done.stderr
    assert "v2 vs v1" in done.stdout  # the summary table and verdict, printed by the CLI itself
    assert "Prefect UI (log and artifacts): http://127.0.0.1:" in done.stdout

    async def run_id() -> Any:
        async with get_client() as client:
            (run,) = await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=["quiet-cli · v1,v2"]))
            )
        return run.id

    logs = logs_until(asyncio.run(run_id()), "suite quiet-cli:")
    text = [m for _, m in logs]
    assert any(m.startswith("plan: 4 cases") for m in text) and any(m.startswith("verdict: ") for m in text)
    assert not any(m.startswith("Finished in state Completed()") for m in text[1:-1])  # no task-run lines
