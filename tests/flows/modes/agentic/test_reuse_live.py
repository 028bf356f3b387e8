"""A baseline session is reused only when it is the same baseline: the real claude CLI against the
scripted server, a plugin eval case with a scaffold and an input in a subfolder of the case (what a
scaffold reads). Changing the skill alone reuses the baseline; changing that input runs it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.graders.test_plugin_eval import replay_plugin

pytestmark = pytest.mark.usefixtures("prefect_harness")


def suite(root: Path) -> Path:
    """A plugin whose one case's scaffold sits beside an input in a subfolder of the case."""
    plugin = replay_plugin(root, "  scaffold_script: setup.sh\n")
    case = plugin / "evals" / "resume"
    (case / "fixtures").mkdir()
    (case / "fixtures" / "input.txt").write_text("first input\n")
    (case / "setup.sh").write_text("mkdir -p data && echo seed > data/in.txt\n")
    return plugin


def test_a_changed_input_of_a_case_runs_its_baseline_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"

    def run() -> dict[str, object]:
        argv = [
            "skill",
            "run",
            "--suite",
            str(plugin),
            "--base-url",
            server.url,
            "--results-dir",
            str(results),
        ]
        assert main([*argv, "--runs", "1", "--timeout", "120", "--no-diagnose"]) in (0, 1)
        newest = max(results.glob("plug-*"), key=lambda p: p.stat().st_mtime)
        return dict(json.loads((newest / "report.json").read_text())["meta"])

    with FakeProvider().anthropic_env(monkeypatch) as server:
        assert "reusedSessions" not in run()
        skill = plugin / "skills" / "hello" / "SKILL.md"
        skill.write_text(skill.read_text() + "Be brief.\n")  # the artifact alone changed
        assert run().get("reusedSessions") == 1
        (plugin / "evals" / "resume" / "fixtures" / "input.txt").write_text("another input\n")
        assert "reusedSessions" not in run()  # the baseline ran again on the new input
