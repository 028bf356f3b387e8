"""Nightly runs: regression against the previous run fails the flow and leaves artifacts; CI outputs."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from flows.cli.main import main
from flows.nightly import nightly_bench
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, make_project, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")


async def artifact_keys(flow_run_id: object) -> set[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async with get_client() as client:
        arts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return {a.key for a in arts if a.key}


def nightly_state(config: Path, suite: str) -> Any:
    """The final state of a nightly flow run (a failed run does not raise)."""
    return asyncio.run(cast(Coroutine[Any, Any, Any], nightly_bench(str(config), suite, return_state=True)))


def test_nightly_regression_fails_the_second_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "suite", n=8)
    reports = tmp_path / "reports"
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\noutput_dir: {reports}\ncache_dir: {tmp_path / 'c'}\n"
    )
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        first = nightly_state(project / "skillab.yaml", "capitals")
        assert first.is_completed()
        # The artifact changes between nights and makes v2 chatty: every case loses 2 points.
        (project / "skills" / "v2.md").write_text("Answer the question in full sentences.")
        second = nightly_state(project / "skillab.yaml", "capitals")
    assert second.is_failed()
    error = second.result(raise_on_failure=False)
    assert "regression in v2" in str(error)
    runs = sorted(reports.glob("*.json"))
    assert len(runs) == 2
    latest = max((json.loads(p.read_text()) for p in runs), key=lambda r: r["meta"]["timestamp"])
    regression = latest["regression"]
    assert regression["regressed"] == ["v2"]
    assert regression["perVariant"]["v2"]["paired"]["regressed"] == 8
    assert regression["perVariant"]["v1"]["verdict"]["label"] != "WORSE"
    # the sample-bench subflow carries the artifacts
    from prefect.client.orchestration import get_client

    async def subflow_ids() -> list[object]:
        async with get_client() as client:
            runs = await client.read_flow_runs()
        return [r.id for r in runs if r.parent_task_run_id is not None and r.name.startswith("capitals")]

    keys = set().union(*(asyncio.run(artifact_keys(i)) for i in asyncio.run(subflow_ids())))
    assert {"capitals-summary", "capitals-variants", "capitals-report", "capitals-suite"} <= keys
    assert (reports / f"{latest['id']}.html").is_file()


def test_ci_exits_1_on_regression_and_history_prints_the_trend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=8)
    monkeypatch.chdir(project)
    args = [
        "ci",
        "--executor",
        "openai",
        "--suite",
        "caps",
        "--threshold",
        "1",
        "--output-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        "--quiet",
    ]
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        assert main(args) == 0
        (project / "skills" / "v2.md").write_text("Answer the question in full sentences.")
        assert main(args) == 1
    assert "regression against" in capsys.readouterr().err
    assert main(["history", "--suite", "caps", "--reports-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "suite caps: 2 run(s)" in out and "5.00" in out and "3.00 ↓" in out


def test_junit_and_github_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "p", n=3)
    monkeypatch.chdir(project)
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        code = main(
            [
                "ci",
                "--executor",
                "openai",
                "--threshold",
                "3.5",
                "--output-dir",
                str(tmp_path / "r"),
                "--cache-dir",
                str(tmp_path / "c"),
                "--quiet",
                "--junit",
                str(junit),
                "--github-summary",
                str(summary),
            ]
        )
    assert code == 1  # v1 averages 3.0
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "6" and root.get("failures") == "3"
    v1 = root.find("testsuite[@name='skillab.v1']")
    assert v1 is not None and len(v1.findall("testcase")) == 3
    failure = v1.find("testcase/failure")
    assert failure is not None and "score 3.00 < threshold 3.5" in (failure.get("message") or "")
    assert "word_count_max" in (failure.text or "")
    assert not root.find("testsuite[@name='skillab.v2']").findall("testcase/failure")  # type: ignore[union-attr]
    text = summary.read_text()
    assert text.startswith("earlier step\n## skillab: v1, v2") and "| v2 | 5.00 |" in text
