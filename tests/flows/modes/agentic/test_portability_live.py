"""Does a skill travel? A skill whose body quietly relies on a tool only Claude Code has
(NotebookEdit), run on three real agent CLIs (Claude Code, Gemini CLI, OpenCode) against one scripted
model that can use a tool only when the CLI offers it. The lint, before any session, must flag
exactly the agents without the tool (codex, gemini-cli, copilot, opencode, not claude); the run must
show the lift where the tool exists and none where it does not; the certificate says portable on
claude, breaks on the other two (why), not measured on the rest; --require-portable gates on it, and
JUnit and the GitHub summary carry it."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.modes.agentic.model import AgenticReport
from flows.report.schema import load_report
from tests.agents import need
from tests.fakes.provider import FakeProvider, tool_results

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = """---
name: nb-cells
description: Adds cells to Jupyter notebooks. Use for notebook tasks.
---
# Notebook cells

Create the notebook if it is missing, then add the cell with the NotebookEdit tool: the cell's
source must carry the marker CELL-OK.
"""
AGENTS = "claude,gemini-cli,opencode"
EMPTY = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def task_md(n: int) -> str:
    return f"""# Task: notebook {n}
difficulty: easy
category: notebooks
type: positive

## Prompt
Add a code cell that prints {n} to analysis.ipynb (notebook number {n}).

## Expected Outcome
analysis.ipynb holds the new code cell.

## Verification Checks
- file_exists: analysis.ipynb
- file_contains: CELL-OK in analysis.ipynb

## Grading Rubric
- Correctness: the cell is there
"""


def judge(system: str, prompt: str) -> str:
    """Scores from the files alone: high when the notebook holds the skill's cell."""
    files = prompt.split("The files in the agent's sandbox", 1)[-1].split("Tokens used", 1)[0]
    score = 90 if "CELL-OK" in files else 30
    criteria = ("correctness", "completeness", "quality", "efficiency")
    return json.dumps(
        {k: {"score": score, "justification": "the files"} for k in criteria} | {"summary": "ok"}
    )


def workdir(text: str) -> str:
    found = re.search(
        r"(?:Primary working directory|Working directory|working directory): ?(/[^\s\"\\]+)", text
    )
    return found.group(1) if found else "."


def claude_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Told to use the skill, and offered NotebookEdit (as a deferred tool): writes the notebook,
    reads it, loads NotebookEdit's schema and adds the cell. Without the skill: the notebook alone."""
    text = json.dumps(body)
    nb = f"{workdir(text)}/analysis.ipynb"
    done = len(tool_results(body))
    steps: list[dict[str, Any]] = []
    with_skill = "MUST first call the Skill tool" in text
    if with_skill:
        steps.append({"type": "tool_use", "name": "Skill", "input": {"skill": "nb-cells"}})
    steps.append({"type": "tool_use", "name": "Write", "input": {"file_path": nb, "content": EMPTY}})
    offered = "NotebookEdit" in {t.get("name") for t in body.get("tools") or []} or re.search(
        r"deferred tools(?:(?!system-reminder).)*\\nNotebookEdit\\n", text
    )
    if with_skill and offered:
        steps += [
            {
                "type": "tool_use",
                "name": "ToolSearch",
                "input": {"query": "select:NotebookEdit", "max_results": 1},
            },
            {"type": "tool_use", "name": "Read", "input": {"file_path": nb}},
            {
                "type": "tool_use",
                "name": "NotebookEdit",
                "input": {
                    "notebook_path": nb,
                    "new_source": "print('CELL-OK')",
                    "cell_type": "code",
                    "edit_mode": "insert",
                },
            },
        ]
    return (
        [steps[done] | {"id": f"toolu_{done}"}] if done < len(steps) else [{"type": "text", "text": "Done."}]
    )


def gemini_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Its tools are write_file and the rest: no NotebookEdit, so the skill's way is not open to it."""
    text = json.dumps(body)
    with_skill = "MUST first call the activate_skill" in text
    tools = {f.get("name") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []}
    done = sum(1 for c in body["contents"] for part in c.get("parts", []) if "functionResponse" in part)
    steps = [{"functionCall": {"name": "activate_skill", "args": {"name": "nb-cells"}}}] if with_skill else []
    steps.append(
        {"functionCall": {"name": "write_file", "args": {"file_path": "analysis.ipynb", "content": EMPTY}}}
    )
    if with_skill and "NotebookEdit" in tools:  # never: the CLI has no such tool
        steps.append({"functionCall": {"name": "NotebookEdit", "args": {}}})
    return (
        [steps[done]]
        if done < len(steps)
        else [{"text": "No NotebookEdit tool here; the notebook is empty."}]
    )


def opencode_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps(body)
    with_skill = "MUST first call the skill tool" in text
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    steps: list[dict[str, Any]] = [{"tool": "skill", "arguments": {"name": "nb-cells"}}] if with_skill else []
    write = f"printf '%s' '{EMPTY}' > analysis.ipynb"
    steps.append({"tool": "bash", "arguments": {"command": write, "description": "create the notebook"}})
    if with_skill and "NotebookEdit" in tools:  # never
        steps.append({"tool": "NotebookEdit", "arguments": {}})
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    return [steps[done]] if done < len(steps) else [{"text": "No NotebookEdit tool here."}]


def test_a_skill_that_needs_a_claude_only_tool_is_flagged_where_it_breaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    need(*("claude", "gemini", "opencode"))
    (tmp_path / ".claude" / "skills" / "nb-cells").mkdir(parents=True)
    (tmp_path / ".claude" / "skills" / "nb-cells" / "SKILL.md").write_text(SKILL)
    suite = tmp_path / "suite"
    suite.mkdir()
    for n in range(1, 5):
        (suite / f"task-0{n}.md").write_text(task_md(n))
    monkeypatch.chdir(tmp_path)
    with FakeProvider(judge) as server:
        server.claude_agent = lambda body, headers: claude_agent(body)
        server.gemini_agent = gemini_agent
        server.chat_agent = opencode_agent
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)  # the judge's
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        urls = f"claude={server.url},gemini-cli={server.url},opencode={server.url}/v1"
        args = [
            "skill",
            "run",
            "--skill",
            "nb-cells",
            "--tasks",
            "suite",
            "--runner",
            AGENTS,
            "--base-url",
            urls,
        ]
        args += [
            "--judge-model",
            "claude-opus-4",
            "--results-dir",
            str(tmp_path / "results"),
            "--timeout",
            "90",
        ]
        args += ["--concurrency", "6", "--no-diagnose", "--junit", "j.xml", "--github-summary", "summary.md"]
        code = main([*args, "--require-portable", "claude,gemini-cli"])
    out, err = capsys.readouterr()
    # before any session: the lint flags the tool on the agents without it, and only there
    flagged = {
        m.group(1)
        for m in re.finditer(r"portability: (\S+): SKILL\.md:\d+: names NotebookEdit, which \S+ lacks", err)
    }
    assert flagged == {"gemini-cli", "opencode"}, err  # the agents this run measures
    (root,) = (tmp_path / "results").glob("nb-cells-agents-*")
    report = load_report(root / "report.json", AgenticReport)
    assert report.portability is not None and report.matrix is not None
    lines = {a.agent: a for a in report.portability.agents}
    breaking = {
        a.agent
        for a in report.portability.agents
        for f in a.findings
        if f.what == "NotebookEdit" and f.severity == "breaks"
    }
    assert breaking == {"codex", "gemini-cli", "copilot", "opencode"}  # exactly those without it
    # the sign of the lift: the skill's way works where the tool exists, and nowhere else
    lifts = {a.runner: a.paired.mean or 0.0 for a in report.matrix.agents if a.paired is not None}
    assert lifts["claude"] > 0 and lifts["gemini-cli"] <= 0 and lifts["opencode"] <= 0, lifts
    assert lines["claude"].status == "portable" and lines["gemini-cli"].status == "breaks"
    assert (
        lines["opencode"].status == "breaks"
        and "names NotebookEdit, which opencode lacks" in lines["opencode"].line
    )
    assert lines["codex"].status == lines["copilot"].status == "not measured"
    assert "the lint forecasts it breaks: SKILL.md:7: names NotebookEdit" in lines["codex"].line
    # the finding stands beside the cell it explains, and the agents are one analysis
    rows = {a.runner: a for a in report.matrix.agents}
    assert any("NotebookEdit" in f for f in rows["gemini-cli"].findings) and not rows["claude"].findings
    pooled = report.matrix.pooled
    assert pooled is not None and pooled.agents == 3 and pooled.tasks == 4 and pooled.p_agents is not None
    assert "pooled over 3 agents" in out and "portability: gemini-cli: breaks" in out
    # --require-portable claude,gemini-cli: gemini-cli is not, so the gate fails and says why
    assert code == 1 and "FAIL portability: gemini-cli: breaks" in err
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "j.xml").getroot()}
    cases = {c.get("name"): c for c in suites["skillab.portability"]}
    assert cases["gemini-cli"].find("failure") is not None  # named by the gate: a failure
    assert cases["opencode"].find("skipped") is not None and cases["claude"].find("failure") is None
    summary = (tmp_path / "summary.md").read_text()
    assert "### Portability" in summary and "claude: portable" in summary
    md = (root / "report.md").read_text()
    assert "## Portability" in md and "| codex | not measured |" in md
