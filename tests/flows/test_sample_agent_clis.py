"""Sample mode through the Copilot CLI and OpenCode runners: each sample a headless session of the
real binary against the scripted server, the artifact as the CLI's own instructions."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.agent import find_binary
from flows.cli.main import main
from flows.report.schema import load_report
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, make_project

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.mark.parametrize(
    ("executor", "model", "path"), [("copilot", "claude-sonnet-4-5", ""), ("opencode", "gpt-4.1", "/v1")]
)
def test_samples_answered_by_an_agent_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, model: str, path: str
) -> None:
    if find_binary(executor) is None:
        pytest.fail(f"the {executor} CLI is missing: scripts/install-agent-clis.sh installs it")
    project = make_project(tmp_path / "p", n=2)
    monkeypatch.chdir(project)
    with FakeProvider(answer) as server:
        args = ["run", "--executor", executor, "--model", model, "--base-url", f"{server.url}{path}"]
        args += ["--output-dir", str(project / "reports"), "--no-cache", "--quiet", "--no-judge"]
        code = main(args)
    assert code == 0
    (written,) = (project / "reports").glob("*.json")
    report = load_report(written)
    assert report.meta.executor == executor and (report.meta.agent_cli_version or "").startswith(executor)
    # v2's artifact ("Answer with one word.") reached the session as the CLI's instructions
    v1, v2 = report.summary["v1"], report.summary["v2"]
    assert v1.error_count == v2.error_count == 0
    assert v2.avg_assertion_score == 5.0 and v1.avg_assertion_score == 3.0
    assert sorted(case.variants["v2"].output for case in report.results) == ["Paris", "Tokyo"]
