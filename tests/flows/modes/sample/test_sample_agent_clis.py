"""Sample mode through the Copilot CLI and OpenCode runners: each sample a headless session of the
real binary against the scripted server, the artifact as the CLI's own instructions."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from flows.report.schema import load_report
from tests.agents import need
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, make_project

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.mark.parametrize(
    ("executor", "model", "path"), [("copilot", "claude-sonnet-4-5", ""), ("opencode", "gpt-4.1", "/v1")]
)
def test_samples_answered_by_an_agent_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, model: str, path: str
) -> None:
    need(executor)
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


def test_a_dry_run_bounds_each_case_as_a_whole_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case answered by an agent CLI is a session of up to three requests, each carrying the CLI's
    system prompt and tools: the bound counts them, and prices Claude Code's alias as its model."""
    project = make_project(tmp_path / "p", n=2)
    monkeypatch.chdir(project)
    assert main(["run", "--executor", "claude", "--no-judge", "--dry-run"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("estimated tokens:"))
    tokens_in = int(line.split("~")[1].split(" ")[0].replace(",", ""))
    assert tokens_in >= 2 * 2 * 3 * 30_000  # 2 cases x 2 variants, 3 requests of >= 30k tokens each
    assert "unknown price" not in line  # "sonnet" is priced as claude-sonnet-4
