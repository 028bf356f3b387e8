"""Last night at a glance, in headless Chromium: a suite served as a deployment (``python -m
deployments``) on skillab's own Prefect server (UI included), run twice from the deployment, the
second night with v2 degraded; then the Prefect UI and the report server's pages, as a person
monitoring the nights reads them. The screenshots in docs/screenshots are taken here, so docs/ci.md
shows the pages as they are."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli import prefect_env
from flows.cli.prefect_env import SERVER_SETTING, ensure_server, stop_server
from tests.browser import chromium, serving
from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import ROOT, answer, make_project, provider_env

SHOTS = ROOT / "docs" / "screenshots"
DEPLOYMENT = "nightly-bench/capitals-nightly"


def faults() -> Any:
    """Japan's v1 calls always answer HTTP 500 (their retries run out: two failed calls a night);
    Spain's first v2 call meets one 500, then succeeds."""
    once: list[str] = []

    def fault(call: Call) -> Fault | None:
        if "Japan" in call.prompt and "one word" not in call.system:
            return Fault(status=500, body='{"error": {"message": "overloaded (permanent for testing)"}}')
        if "Spain" in call.prompt and "one word" in call.system and not once:
            once.append(call.prompt)
            return Fault(status=500, body='{"error": {"message": "overloaded (once)"}}')
        return None

    return fault


@pytest.fixture
def prefect_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """skillab's persistent Prefect server (API and UI) in a private home, always stopped."""
    monkeypatch.setenv("SKILLAB_HOME", str(tmp_path / "skillab"))
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(prefect_env.free_port("127.0.0.1")))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv(SERVER_SETTING, "persistent")
    record = ensure_server(announce=False)
    try:
        yield record
    finally:
        stop_server(record)


def serve_deployments(deployments: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "deployments", "--file", str(deployments)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


async def run_night(api_url: str) -> Any:
    """One run of the deployment, waited for; its final flow run."""
    from prefect.deployments import arun_deployment
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        for _ in range(300):  # the served deployment registers itself
            try:
                return await arun_deployment(DEPLOYMENT, timeout=600, poll_interval=1)
            except ObjectNotFound:  # not registered yet
                await asyncio.sleep(0.5)
    raise AssertionError(f"deployment {DEPLOYMENT} never appeared")


async def flow_run_logs(api_url: str, flow_run_id: Any) -> list[tuple[int, str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        async with get_client() as client:
            logs = await client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
            )
    return [(log.level, log.message) for log in logs]


def night_log(api_url: str, flow_run_id: Any) -> list[tuple[int, str]]:
    """The flow run's log lines, once its regression line is in (at most 2 minutes)."""
    for _ in range(240):
        logs = asyncio.run(flow_run_logs(api_url, flow_run_id))
        if any(level >= 40 and m.startswith("REGRESSION in v2") for level, m in logs):
            break
        time.sleep(0.5)
    return logs


def test_last_night_at_a_glance(tmp_path: Path, prefect_server: Any) -> None:
    api_url = prefect_server.api_url
    SHOTS.mkdir(parents=True, exist_ok=True)
    project = make_project(tmp_path / "suite", n=8)
    reports = tmp_path / "reports"
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\nrepeat: 2\noutput_dir: {reports}\n"
        f"cache_dir: {tmp_path / 'cache'}\nretry_backoff: 0.01\n"
    )
    deployments = tmp_path / "deployments.yaml"
    deployments.write_text(
        "suites:\n  - name: capitals-nightly\n    config: suite/skillab.yaml\n    cron: '0 3 * * *'\n"
    )
    with FakeProvider(answer, fault_for=faults()) as provider:
        env = os.environ | provider_env(provider.url) | {"PREFECT_API_URL": api_url, "PYTHONPATH": str(ROOT)}
        serving_proc = serve_deployments(deployments, env, tmp_path / "serve.log")
        try:
            first = asyncio.run(run_night(api_url))
            (project / "skills" / "v2.md").write_text("Answer the question in full sentences.")
            second = asyncio.run(run_night(api_url))
            # The run's log lines reach the API in batches, sent by the flow run's own process after
            # its final state (under load, seconds after): serving stops only once they are in, or
            # stopping it would kill that process with its last batch (seen in three CI runs).
            logs = night_log(api_url, second.id)
        finally:
            os.killpg(serving_proc.pid, signal.SIGTERM)
            serving_proc.wait(timeout=60)
    # Prefect's own state names (its filters and deployment pages count by them), the outcome a tag
    assert first.state.is_completed() and first.state.name == "Completed", first.state
    assert second.state.is_failed() and second.state.name == "Failed", second.state
    assert "outcome:inconclusive-2-errors" in first.tags and "outcome:regressed" in second.tags
    assert "REGRESSION in v2" in second.state.message and "mean 5.00 → 2.75" in second.state.message
    assert {"skillab", "nightly", "sample", "capitals-nightly"} <= set(second.tags)
    # The night's log: the story, the failed calls said once each kind, no traceback.
    assert not any("Traceback" in m or "Retries are exhausted" in m for _, m in logs)
    errors = [m for level, m in logs if level >= 40]
    assert len(errors) <= 3 and any(m.startswith("REGRESSION in v2") for m in errors), errors
    summary = asyncio.run(summary_artifact(api_url, second.id))
    assert "**REGRESSED**, mean 5.00 → 2.75" in summary.data and "artifact changed" in summary.data

    failed = asyncio.run(failed_task_run(api_url, second.id))  # before the browser: its loop runs here
    outside: list[str] = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # the UI's own login, as a user types the server's credential into it
        auth = json.dumps(os.environ["PREFECT_API_AUTH_STRING"])
        page.add_init_script(f"localStorage.setItem('prefect-password', btoa({auth}))")
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(LOCAL) else None)
        # the runs list: each night by its name, its state, and its outcome's tag
        page.goto(f"{prefect_server.ui_url}/runs")
        page.get_by_text("outcome:regressed").first.wait_for()
        body = page.inner_text("body")
        assert first.name in body and second.name in body and "outcome:inconclusive-2-errors" in body
        assert "Failed" in body and "Completed" in body
        page.screenshot(path=str(SHOTS / "prefect-runs.png"))
        # the list's own "Failed" filter, chosen as a person does (its pop-over opens from the keyboard
        # in headless Chromium): the regressed night is in it, the passing one is not
        page.locator(".state-name-select button").first.focus()
        page.keyboard.press("ArrowDown")
        page.locator(".p-select-option", has_text="Failed").first.click()
        page.keyboard.press("Escape")
        page.wait_for_url("**state=Failed**")
        page.get_by_text(first.name).first.wait_for(state="detached")
        assert second.name in page.inner_text("body")
        # the night itself: its state, tags, task runs and log
        page.goto(f"{prefect_server.ui_url}/runs/flow-run/{second.id}")
        page.get_by_text("REGRESSION in v2").first.wait_for()
        body = page.inner_text("body")
        assert "outcome:regressed" in body and "Failed" in body and "Traceback" not in body
        page.screenshot(path=str(SHOTS / "prefect-night.png"))
        # the deployment's page counts and lists both nights (a state of another name it did not)
        page.goto(f"{prefect_server.ui_url}/deployments/deployment/{second.deployment_id}")
        page.get_by_text(second.name).first.wait_for()
        body = page.inner_text("body")
        assert first.name in body and "No runs found" not in body
        # a failed call's task run: its error in its state, its retry delay a number of seconds
        page.goto(f"{prefect_server.ui_url}/runs/task-run/{failed.id}")
        page.get_by_text("Retry Delay").first.wait_for()
        body = page.inner_text("body")
        assert "NaN" not in body and "HTTP 500" in (failed.state.message or "")
        # its summary artifact: the drop's figures and the changed artifact, code not eaten as italics
        page.goto(f"{prefect_server.ui_url}/artifacts/artifact/{summary.id}")
        page.get_by_text("REGRESSED").first.wait_for()
        body = page.inner_text("body")
        assert "mean 5.00 → 2.75" in body and "v2's artifact changed since the previous run" in body
        page.screenshot(path=str(SHOTS / "prefect-summary.png"), full_page=True)
        report_pages(browser, reports, first, second)
    assert not outside, f"pages called outside this machine: {outside[:5]}"


async def failed_task_run(api_url: str, flow_run_id: Any) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        async with get_client() as client:
            for _ in range(60):  # task runs are recorded from events in batches, a moment later
                runs = await client.read_task_runs(
                    flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
                )
                failed = [r for r in runs if r.state is not None and r.state.is_failed()]
                if failed:
                    return failed[0]
                await asyncio.sleep(0.5)
    raise AssertionError(f"no failed task run recorded for flow run {flow_run_id}")


LOCAL = ("http://127.0.0.1", "data:", "blob:", "about:")


async def summary_artifact(api_url: str, flow_run_id: Any) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        async with get_client() as client:
            arts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
            )
    (summary,) = [a for a in arts if a.key and a.key.endswith("-summary")]
    return summary


def report_pages(browser: Any, reports: Path, first: Any, second: Any) -> None:
    """The report server's pages of the two nights."""
    from flows.report.server import create_app

    ids = sorted(p.stem for p in reports.glob("*.json"))
    assert len(ids) == 2
    with serving(lambda port: create_app(reports, port=port)) as base:
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        # the regressed night's page leads with the regression and links back to the flow run
        page.goto(f"{base}/run/{ids[1]}")
        lead = page.locator(".verdict-box.regression")
        assert (
            "Regression against the previous run" in lead.inner_text()
            and "mean 5.00 → 2.75" in lead.inner_text()
        )
        assert str(second.id) in (page.locator("a.flow-run-link").get_attribute("href") or "")
        assert (
            "v2's artifact changed since the previous run"
            in page.locator(".artifact-change").first.inner_text()
        )
        # --repeat 2: every run of a case is shown, under the mean
        card = page.locator("#case-cap-france .output[data-variant=v1]")
        assert card.locator(".run").count() == 2 and "mean of 2 runs" in card.inner_text()
        japan = page.locator("#case-cap-japan .output[data-variant=v1]")
        assert "2 errored, counted at the scale's minimum 1.00" in japan.inner_text()
        page.screenshot(path=str(SHOTS / "report-run.png"))
        # the trend: the regression and the artifact's change
        page.goto(f"{base}/suite/capitals-nightly")
        assert "The latest run regressed: v2" in page.inner_text("body")
        assert page.locator("#suite-runs .artifact-change").count() == 1
        page.screenshot(path=str(SHOTS / "report-suite.png"))
        # the runs list: errors, the regression mark, the link to the flow run
        page.goto(base)
        rows = page.locator("#runs tbody tr")
        assert "▼ regressed: v2" in rows.nth(0).inner_text() and "4/32" in rows.nth(0).inner_text()
        assert rows.nth(0).locator("a.flow-run-link").count() == 1
        # compare: statistics, and an errored unit is never an improvement
        page.goto(f"{base}/compare?a={ids[0]}&b={ids[1]}")
        stats = page.inner_text("#compare-stats")
        assert "v2" in stats and "WORSE" in stats and "95% CI" in stats
        japan = page.locator("#compare tr", has_text="cap-japan").filter(has_text="v2")
        assert (
            "errored" in (japan.get_attribute("class") or "")
            and "+" not in japan.locator("td").nth(4).inner_text()
        )
        page.goto(f"{base}/compare?a={ids[0]}")
        assert "Pick two runs" in page.inner_text("body")
