"""Nightly runs: regression against the previous run fails the flow and leaves artifacts; CI outputs."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from executors.agent import cli_dir, find_binary
from executors.versions import installed_version
from flows.cli.main import main
from flows.modes.sample.nightly import nightly_bench
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import CAPITALS, answer, flow_run_artifacts, make_project, run_tags, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")


async def night_artifacts(flow_run_id: object) -> dict[str, str]:
    """A flow run's artifacts: key -> its data (a link artifact: its text and link)."""
    return {a.key: str(a.data) for a in await flow_run_artifacts(flow_run_id) if a.key}


def nightly_state(config: Path, suite: str) -> Any:
    """The final state of a nightly flow run (a failed run does not raise)."""
    return asyncio.run(cast(Coroutine[Any, Any, Any], nightly_bench(str(config), suite, return_state=True)))


def chatty_second_night(project: Path, suite: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """Two nights of the suite; between them the artifact changes and makes v2 chatty (every case
    loses 2 points)."""
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        first = nightly_state(project / "skillab.yaml", suite)
        assert first.is_completed()
        (project / "skills" / "v2.md").write_text("Answer the question in full sentences.")
        return first, nightly_state(project / "skillab.yaml", suite)


def test_nightly_regression_fails_the_second_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "suite", n=8)
    reports = tmp_path / "reports"
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\noutput_dir: {reports}\ncache_dir: {tmp_path / 'c'}\n"
    )
    first, second = chatty_second_night(project, "capitals", monkeypatch)
    # The night ends Failed (Prefect's own state name: its filters count by it), tagged with the
    # outcome, its message stating the drop.
    assert second.is_failed() and second.name == "Failed" and "outcome:regressed" in run_tags(second)
    assert first.name == "Completed" and "outcome:better" in run_tags(first)  # v2 (one word) beats v1
    assert "REGRESSION in v2" in second.message and "mean 5.00 → 3.00, -2.00, 95% CI" in second.message
    # the artifact changed in an unchanged world (no control ran): the skill's doing
    assert second.message.endswith(
        "; the skill regressed (no control ran: what ran and the artifacts tell it)"
    )
    runs = sorted(reports.glob("*.json"))
    assert len(runs) == 2
    latest = max((json.loads(p.read_text()) for p in runs), key=lambda r: r["meta"]["timestamp"])
    regression = latest["regression"]
    assert regression["regressed"] == ["v2"]
    assert regression["perVariant"]["v2"]["paired"]["regressed"] == 8
    assert regression["perVariant"]["v1"]["verdict"]["label"] != "WORSE"
    change = regression["artifactChanges"]["v2"]
    assert (change["bytesBefore"], change["bytesAfter"]) == (21, 38)  # "Answer with one word." → the new text
    assert "v1" not in regression["artifactChanges"]
    # the nightly run itself carries the night: no subflow, its own task runs and artifacts
    from prefect.client.orchestration import get_client

    night_id = second.state_details.flow_run_id

    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId

    async def night() -> tuple[list[Any], list[Any], list[Any]]:
        # Filtered by the night's id: unfiltered, the server answers one page (200 runs by default)
        # of every run of the test session.
        this = FlowRunFilter(id=FlowRunFilterId(any_=[night_id]))
        under = FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[night_id]))
        async with get_client() as client:
            # task runs reach the API through events, recorded in batches and in no set order (a cached
            # run's events may come after the run's last task's): wait for all that are expected
            for _ in range(120):
                tasks = await client.read_task_runs(flow_run_filter=this)
                calls = [t for t in tasks if t.task_key.startswith("call_model")]
                if {"grade outputs", "aggregate results"} <= {t.name for t in tasks} and len(calls) >= 8:
                    break
                await asyncio.sleep(0.5)
            return (
                await client.read_flow_runs(flow_run_filter=this),
                await client.read_flow_runs(flow_run_filter=under),
                tasks,
            )

    (this_night,), subflows, mine = asyncio.run(night())
    assert subflows == []
    assert len([t for t in mine if t.task_key.startswith("call_model")]) == 8  # v1's 8 from the cache
    assert {"grade outputs", "aggregate results"} <= {t.name for t in mine}
    # tags on the flow run only: a tagged task run asks the API for a concurrency slot per tag
    assert not any(t.tags for t in mine)
    assert {"skillab", "sample", "capitals"} <= set(this_night.tags)
    artifacts = asyncio.run(night_artifacts(night_id))
    assert {"capitals-summary", "capitals-variants", "capitals-report", "capitals-suite"} <= set(artifacts)
    summary = artifacts["capitals-summary"]
    assert "**REGRESSED**, mean 5.00 → 3.00, -2.00, 95% CI" in summary
    assert (
        "v2's artifact changed since the previous run: sha256" in summary and "21 → 38 bytes (+17)" in summary
    )
    assert "cache: 8 result(s) taken from the cache, 8 call(s) made" in summary
    assert "answers while the report server runs" in artifacts["capitals-report"]
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
    # 3 cases x 2 variants, and the validity certificate's 6 checks (none fails without --require-valid)
    assert root.get("tests") == "12" and root.get("failures") == "3"
    validity = root.find("testsuite[@name='skillab.validity']")
    assert validity is not None and len(validity.findall("testcase")) == 6
    assert not validity.findall("testcase/failure")
    v1 = root.find("testsuite[@name='skillab.v1']")
    assert v1 is not None and len(v1.findall("testcase")) == 3
    failure = v1.find("testcase/failure")
    assert failure is not None and "score 3.00 < threshold 3.5" in (failure.get("message") or "")
    assert "word_count_max" in (failure.text or "")
    assert not root.find("testsuite[@name='skillab.v2']").findall("testcase/failure")  # type: ignore[union-attr]
    text = summary.read_text()
    assert text.startswith("earlier step\n## skillab: v1, v2") and "| v2 | 5.00 |" in text


def test_a_night_whose_provider_moved_the_alias_names_the_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unchanged artifact between two nights, the provider answering the second night as another
    model: the regression check names that change (the fingerprint), not the artifact."""
    project = make_project(tmp_path / "suite", n=4)
    reports = tmp_path / "reports"
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\noutput_dir: {reports}\ncache: false\n"
    )
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        assert nightly_state(project / "skillab.yaml", "moved").is_completed()
        server.answered_as = {"gpt-4o-mini": "gpt-4o-mini-2026-11-30"}
        second = nightly_state(project / "skillab.yaml", "moved")
    assert second.is_completed() and "outcome:world-changed" in run_tags(second)  # the same answers
    assert "the world changed (no control ran: what ran and the artifacts tell it)" in second.message
    nights = sorted(
        (json.loads(p.read_text()) for p in reports.glob("*.json")), key=lambda r: r["meta"]["timestamp"]
    )
    assert [n["meta"]["fingerprint"]["models"] for n in nights] == [
        ["gpt-4o-mini"],
        ["gpt-4o-mini-2026-11-30"],
    ]
    regression = nights[1]["regression"]
    assert regression["artifactChanges"] == {}
    assert regression["worldChanges"] == [
        "model under test (as the answers reported it): gpt-4o-mini -> gpt-4o-mini-2026-11-30"
    ]
    summary = asyncio.run(night_artifacts(second.state_details.flow_run_id))["moved-summary"]
    assert "changed since the previous run: model under test (as the answers reported it)" in summary


def control_suite(tmp_path: Path) -> Path:
    """A suite whose nights run a same-night control (no result cache: every arm meets the night's world)."""
    project = make_project(tmp_path / "suite", n=6)
    (project / "skillab.yaml").write_text(
        f"executor: openai\nmodel: gpt-4o-mini\njudge: false\noutput_dir: {tmp_path / 'reports'}\n"
        "cache: false\nsame_night_control: true\n"
    )
    return project


def newest_night(reports: Path) -> dict[str, Any]:
    runs = [json.loads(p.read_text()) for p in reports.glob("*.json")]
    return max(runs, key=lambda r: r["meta"]["timestamp"])


def test_a_same_night_control_tells_the_skills_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The world unchanged, v2 made chatty: tonight's v2 against tonight's v2@good (last night's
    artifact) is WORSE, and the control did not move against its own night: the skill regressed."""
    project = control_suite(tmp_path)
    _, second = chatty_second_night(project, "controlled", monkeypatch)
    assert second.is_failed() and "outcome:regressed" in run_tags(second)
    night = newest_night(tmp_path / "reports")
    assert night["meta"]["variants"] == ["v1", "v2", "v2@good"]
    control = night["regression"]["controls"]["v2"]
    assert control["outcome"] == "the skill regressed" and control["controlNight"] != night["id"]
    assert control["candidate"]["verdict"]["label"] == "WORSE" and control["candidate"]["cases"] == 6
    assert control["drift"]["verdict"]["label"] not in ("WORSE", "BETTER")
    assert night["regression"]["regressed"] == ["v2"]
    assert "the skill regressed (same-night control)" in second.message
    assert "variant vs control tonight: WORSE" in control["rule"]


def test_a_same_night_control_tells_the_worlds_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v2 reworded (the same behaviour), the provider's model moved under the alias and now answers
    at length whatever the artifact: v2 equals its control tonight, the control dropped against its
    own night, the unchanged v1 is not blamed: the world changed, naming the model."""
    project = control_suite(tmp_path)

    def moved(system: str, prompt: str) -> str:
        country = prompt.rstrip("?").split()[-1]
        return f"Well, the capital of {country} is {CAPITALS.get(country, 'unknown')}."

    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        assert nightly_state(project / "skillab.yaml", "world").is_completed()
        (project / "skills" / "v2.md").write_text("Answer with one word, please.")
        server.answer, server.answered_as = moved, {"gpt-4o-mini": "gpt-4o-mini-2026-12-01"}
        second = nightly_state(project / "skillab.yaml", "world")
    assert second.is_completed() and "outcome:world-changed" in run_tags(second)
    night = newest_night(tmp_path / "reports")
    control = night["regression"]["controls"]["v2"]
    assert control["outcome"] == "the world changed" and night["regression"]["regressed"] == []
    assert (
        control["candidate"]["verdict"]["label"] != "WORSE"
        and control["drift"]["verdict"]["label"] == "WORSE"
    )
    assert (
        "model under test (as the answers reported it): gpt-4o-mini -> gpt-4o-mini-2026-12-01"
        in control["rule"]
    )
    assert "the world changed (same-night control), no regression of the artifact" in second.message


def test_an_unchanged_suite_runs_no_control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = control_suite(tmp_path)
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        assert nightly_state(project / "skillab.yaml", "same").is_completed()
        assert nightly_state(project / "skillab.yaml", "same").is_completed()
    night = newest_night(tmp_path / "reports")
    assert night["meta"]["variants"] == ["v1", "v2"] and night["regression"]["controls"] == {}


def test_a_night_on_another_claude_cli_reads_the_world_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real claude CLI, two installed versions: an unchanged skill over two nights, the second on
    the newer CLI. Its answers are not taken from the older CLI's cache; the night reads "the world
    changed", naming the CLI's versions."""
    older = cli_dir() / "older" / "node_modules" / ".bin" / "claude"
    if not older.exists() or find_binary("claude") is None:
        pytest.fail("the claude CLIs are missing: scripts/install-agent-clis.sh installs both")
    project = make_project(tmp_path / "suite", n=2)
    reports = tmp_path / "reports"
    with FakeProvider(answer) as server:
        (project / "skillab.yaml").write_text(
            f"executor: claude\nmodel: sonnet\njudge: false\nbase_url: {server.url}\noutput_dir: {reports}\n"
            f"cache_dir: {tmp_path / 'c'}\n"
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("SKILLAB_CLAUDE_BIN", str(older))
        assert nightly_state(project / "skillab.yaml", "cli").is_completed()
        monkeypatch.delenv("SKILLAB_CLAUDE_BIN")
        calls = len(server.calls)
        second = nightly_state(project / "skillab.yaml", "cli")
        assert len(server.calls) > calls  # answered by the newer CLI, not from the older one's cache
    assert second.is_completed() and "outcome:world-changed" in run_tags(second)
    night = max(
        (json.loads(p.read_text()) for p in reports.glob("*.json")), key=lambda r: r["meta"]["timestamp"]
    )
    regression = night["regression"]
    assert regression["artifactChanges"] == {} and regression["regressed"] == []
    (line,) = [c for c in regression["worldChanges"] if c.startswith("agent CLI:")]
    assert (
        line
        == f"agent CLI: claude {installed_version(str(older))} -> claude {installed_version(find_binary('claude') or '')}"
    )
    assert "2.1.331" in line and "the world changed (no control ran" in second.message


def test_a_night_whose_cli_strips_a_tool_grant_names_the_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real claude CLI; on the second night a build of it that drops a grant (the same version:
    the CLI run with Bash disallowed, as a release that loses a skill's allowed-tools would run it).
    The unchanged skill is not blamed: the night names the tools each arm was offered."""
    real = find_binary("claude")
    if real is None:
        pytest.fail("the claude CLI is missing: scripts/install-agent-clis.sh installs it")
    # the build: the CLI's own executable (linked, else copied) and a launcher beside it in one npm
    # folder, which the session's sandbox shows as it shows any installed CLI
    modules = tmp_path / "stripped" / "node_modules"
    build = modules / "claude-code" / "claude"
    build.parent.mkdir(parents=True)
    try:
        os.link(Path(real).resolve(), build)
    except OSError:
        shutil.copy2(Path(real).resolve(), build)
    stripped = modules / ".bin" / "claude"
    stripped.parent.mkdir()
    stripped.write_text(f'#!/bin/sh\nexec {build} "$@" --disallowedTools Bash\n')
    stripped.chmod(0o755)
    project = make_project(tmp_path / "suite", n=2)
    reports = tmp_path / "reports"
    with FakeProvider(answer) as server:
        (project / "skillab.yaml").write_text(
            f"executor: claude\nmodel: sonnet\njudge: false\nbase_url: {server.url}\noutput_dir: {reports}\n"
            "cache: false\n"
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        assert nightly_state(project / "skillab.yaml", "grant").is_completed()
        monkeypatch.setenv("SKILLAB_CLAUDE_BIN", str(stripped))
        second = nightly_state(project / "skillab.yaml", "grant")
    assert second.is_completed() and "outcome:world-changed" in run_tags(second)
    nights = sorted(
        (json.loads(p.read_text()) for p in reports.glob("*.json")), key=lambda r: r["meta"]["timestamp"]
    )
    regression = nights[1]["regression"]
    assert regression["artifactChanges"] == {} and regression["regressed"] == []
    tools = [n["meta"]["fingerprint"]["tools"] for n in nights]
    assert set(tools[0]) == {"v1", "v2"} and all(tools[0][v] != tools[1][v] for v in ("v1", "v2"))
    assert [c.split(":")[0] for c in regression["worldChanges"]] == [
        "tools offered (v1)",
        "tools offered (v2)",
    ]
