"""A baseline session is reused only when it is the same baseline: the real claude CLI against the
scripted server, a plugin eval case whose scaffold reads an input from a subfolder of the case.
Changing the skill alone reuses the baseline; changing that input runs it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider

pytestmark = pytest.mark.usefixtures("prefect_harness")
CASE = """schema_version: "1.0"
name: seeded
context:
  scaffold_script: setup.sh
execution:
  prompt: Summarise data/in.txt.
  max_turns: 3
graders:
  - {type: regex, name: said, pattern: "."}
"""


def suite(root: Path) -> Path:
    plugin = root / "plug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "plug"}')
    (plugin / "skills" / "hello").mkdir(parents=True)
    (plugin / "skills" / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: d\n---\nbody\n")
    case = plugin / "evals" / "seeded"
    (case / "fixtures").mkdir(parents=True)
    (case / "case.yaml").write_text(CASE)
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

    with FakeProvider() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        assert "reusedSessions" not in run()
        skill = plugin / "skills" / "hello" / "SKILL.md"
        skill.write_text(skill.read_text() + "Be brief.\n")  # the artifact alone changed
        assert run().get("reusedSessions") == 1
        (plugin / "evals" / "seeded" / "fixtures" / "input.txt").write_text("another input\n")
        assert "reusedSessions" not in run()  # the baseline ran again on the new input
