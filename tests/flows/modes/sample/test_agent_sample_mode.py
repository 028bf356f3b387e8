"""Agent CLIs also serve sample mode, and `skill generate-tasks` writes a reviewable suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from graders.agent_task import parse_task
from tests.agents import need
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, make_project

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_sample_mode_through_claude_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need("claude")
    project = make_project(tmp_path / "p", n=2)
    monkeypatch.chdir(project)
    with FakeProvider(answer) as server:
        code = main(
            [
                "run",
                "--executor",
                "claude",
                "--model",
                "sonnet",
                "--base-url",
                server.url,
                "--no-judge",
                "--output-dir",
                str(tmp_path / "r"),
                "--cache-dir",
                str(tmp_path / "c"),
                "--quiet",
            ]
        )
        systems = [c.system for c in server.calls]
    assert code == 0
    report = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    # the artifact reached the CLI's system prompt (appended), and v2's terse answers won
    assert any("Answer with one word." in s for s in systems)
    assert (
        report["summary"]["v2"]["avgCompositeScore"] == 5.0
        and report["summary"]["v1"]["avgCompositeScore"] == 3.0
    )
    assert report["results"][0]["variants"]["v2"]["output"] == "Paris"
    assert report["meta"]["agentCliVersion"].startswith("claude 2.")  # the CLI's --version


TASK = """# Task: {name}
difficulty: {difficulty}
category: python
type: {kind}

## Prompt
Write calc.py with add(a, b).

## Expected Outcome
add returns the sum.

## Verification Checks
- file_exists: calc.py
- runs_without_error: python3 -c "import calc"

## Grading Rubric
- Correctness: sum
- Completeness: add exists
- Quality: clear

## Tags
python
"""


def writer(system: str, prompt: str) -> str:
    """A scripted task writer: follows the difficulty and type the prompt asks for."""
    import re

    difficulty = re.search(r"difficulty (\w+)\.", prompt)
    kind = "negative-control" if "NEGATIVE CONTROL" in prompt else "positive"
    number = re.search(r"Write task (\d+)", prompt)
    return (
        "```markdown\n"
        + TASK.format(
            name=f"task {number.group(1) if number else '?'}",
            difficulty=difficulty.group(1) if difficulty else "easy",
            kind=kind,
        )
        + "```"
    )


def test_generate_tasks_writes_a_suite_in_the_seed_categories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".claude" / "skills" / "calc").mkdir(parents=True)
    (tmp_path / ".claude" / "skills" / "calc" / "SKILL.md").write_text("# Calc\nWrite exact Python.\n")
    monkeypatch.chdir(tmp_path)
    with FakeProvider(writer).anthropic_env(monkeypatch) as server:
        assert main(["skill", "generate-tasks", "--skill", "calc", "--out", "suite"]) == 0
        prompts = [c.prompt for c in server.calls]
    files = sorted((tmp_path / "suite").glob("*.md"))
    assert [f.name for f in files] == [
        "task-01-easy.md",
        "task-02-easy.md",
        "task-03-medium.md",
        "task-04-medium.md",
        "task-05-hard.md",
        "task-06-negative.md",
    ]
    tasks = [parse_task(f.read_text(), f.stem) for f in files]
    assert [t.type for t in tasks].count("negative-control") == 1
    assert "Write exact Python." in prompts[0]
    assert (
        main(["skill", "generate-tasks", "--skill", "calc", "--out", "suite"]) == 2
    )  # never overwrites a suite
    assert "already holds tasks" in capsys.readouterr().err
