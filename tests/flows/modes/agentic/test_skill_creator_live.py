"""A skill-creator suite run unchanged: the real Claude Code CLI against a scripted model server on
127.0.0.1, the eval's input file staged in each sandbox, the expectations judged by a scripted judge."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.report.schema import load_report
from flows.report.server import export_html
from tests.agents import need
from tests.fakes.provider import FakeProvider

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = "---\nname: csv-skill\ndescription: Sums a column of a CSV file. Use for CSV totals.\n---\n# CSV\nAdd up the column and state the total.\n"
CSV = "amount\n10\n20\n30\n"
EXPECT_TOTAL = "The answer states the total 60"
EXPECT_READ = "The agent read the input file sales.csv"
EVALS = {
    "skill_name": "csv-skill",
    "evals": [
        {
            "id": 1,
            "prompt": "Sum the amount column of the CSV file.",
            "expected_output": "The total of the amount column, 60.",
            "files": ["evals/files/sales.csv"],
            "expectations": [EXPECT_TOTAL, EXPECT_READ],
        },
        {
            "id": 2,
            "prompt": "What is the total of the amounts in the CSV?",
            "expected_output": "60",
            "files": ["evals/files/sales.csv"],
            "expectations": [EXPECT_TOTAL, EXPECT_READ],
        },
    ],
}


def tool_results(body: dict[str, Any]) -> list[str]:
    out = []
    for m in body["messages"]:
        if m["role"] != "user" or not isinstance(m["content"], list):
            continue
        for b in m["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                content = b.get("content")
                out.append(
                    content
                    if isinstance(content, str)
                    else " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))
                )
    return out


def agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Both arms read the staged input file with cat (so the file must be in the sandbox when the
    agent starts); only the with-skill arm adds the numbers up."""
    system = body.get("system") or ""
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    with_skill = "MUST first call the Skill tool" in system
    steps = [{"type": "tool_use", "name": "Skill", "input": {"skill": "csv-skill"}}] if with_skill else []
    steps.append(
        {
            "type": "tool_use",
            "name": "Bash",
            "input": {"command": "cat evals/files/sales.csv | tee seen.txt", "description": "read"},
        }
    )
    results = tool_results(body)
    if len(results) < len(steps):
        return [steps[len(results)]]
    numbers = [int(n) for n in re.findall(r"^\d+$", results[-1], re.M)]
    if with_skill and numbers:
        return [{"type": "text", "text": f"The total is {sum(numbers)}."}]
    return [{"type": "text", "text": "I looked at the file; the amounts are listed there."}]


def fenced(prompt: str, label: str) -> str:
    match = re.search(rf"<<<{label}_(\w+)>>>\n(.*?)\n<<<END_{label}_\1>>>", prompt, re.S)
    return match.group(2) if match else ""


def judge(system: str, prompt: str) -> str:
    """A judge whose verdicts are known: the total passes when the answer states 60, the read passes
    when the transcript shows the file's content coming back from a tool."""
    answer, transcript = fenced(prompt, "ANSWER"), fenced(prompt, "TRANSCRIPT")
    read = "[tool_result" in transcript and "amount" in transcript and "30" in transcript
    verdicts = [
        {"text": EXPECT_TOTAL, "passed": "total is 60" in answer, "evidence": f"answer: {answer[:60]!r}"},
        {"text": EXPECT_READ, "passed": read, "evidence": "cat evals/files/sales.csv printed the rows"},
    ]
    return json.dumps({"expectations": verdicts})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    need("claude")
    skill = tmp_path / "proj" / ".claude" / "skills" / "csv-skill"
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    (skill / "evals" / "files" / "sales.csv").write_text(CSV)
    (skill / "evals" / "evals.json").write_text(json.dumps(EVALS, indent=2))
    return tmp_path / "proj"


def test_skill_creator_suite_end_to_end(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        args = [
            "skill",
            "run",
            "--skill",
            "csv-skill",
            "--tasks",
            ".claude/skills/csv-skill/evals/evals.json",
        ]
        args += ["--base-url", server.url, "--judge-model", "claude-opus-4", "--no-diagnose"]
        args += ["--results-dir", str(project / "results"), "--timeout", "30", "--concurrency", "2"]
        code = main(args)
        calls = list(server.calls)
    out = capsys.readouterr().out
    assert code == 0, out
    (results,) = (project / "results").glob("csv-skill-*")
    assert json.loads((results / "tasks" / "evals.json").read_text()) == EVALS  # the suite as given
    for task in ("task-01", "task-02"):
        for arm in ("with-skill", "baseline"):
            # the input file was in the sandbox before the agent started: its cat saw the rows
            assert (results / "sandbox" / task / arm / "evals/files/sales.csv").read_text() == CSV
            assert (results / "sandbox" / task / arm / "seen.txt").read_text() == CSV
    agent_prompts = [c.body["messages"][0] for c in calls if c.body.get("stream")]
    assert any("Input files: evals/files/sales.csv" in json.dumps(m) for m in agent_prompts)
    judged = [c for c in calls if not c.body.get("stream") and "<<<EXPECTATIONS_" in c.prompt]
    assert len(judged) == 4 and all(f"1. {EXPECT_TOTAL}\n2. {EXPECT_READ}" in c.prompt for c in judged)
    good = json.loads((results / "grades/task-01/with-skill-grade.json").read_text())
    bad = json.loads((results / "grades/task-01/baseline-grade.json").read_text())
    assert [(e["text"], e["passed"]) for e in good["expectations"]] == [
        (EXPECT_TOTAL, True),
        (EXPECT_READ, True),
    ]
    assert [(e["text"], e["passed"]) for e in bad["expectations"]] == [
        (EXPECT_TOTAL, False),
        (EXPECT_READ, True),
    ]
    assert good["weighted_total"] == 100 and bad["weighted_total"] == 50
    assert bad["expectation_summary"] == {"passed": 1, "failed": 1, "total": 2, "pass_rate": 0.5}
    assert "answer: 'I looked at the file" in bad["expectations"][0]["evidence"]
    report = json.loads((results / "report.json").read_text())
    assert report["summary"]["with-skill"]["avgCompositeScore"] == 100
    assert report["summary"]["baseline"]["avgCompositeScore"] == 50
    case = report["results"][0]
    assert case["sample_id"] == "eval-1" and case["rubric"] == f"- {EXPECT_TOTAL}\n- {EXPECT_READ}"
    entry = case["variants"]["baseline"]["grade"]
    assert [e["passed"] for e in entry["expectations"]] == [False, True]
    assert entry["expectation_summary"]["pass_rate"] == 0.5
    assert report["meta"]["suiteSha256"] and "with-skill vs baseline:" in out
    md = (results / "report.md").read_text()
    first = "eval 1: Sum the amount column of the CSV file."
    assert f"| {first} | {EXPECT_TOTAL} | 1/1 | 0/1 |" in md
    assert f"| {first} | {EXPECT_READ} | 1/1 | 1/1 |" in md
    # judged on expectations alone: no session had a check to pass (not "2/2 (100%)")
    assert "No task of this suite has deterministic checks." in md
    page = export_html(load_report(results / "report.json"))
    assert f"✗ expectation: {EXPECT_TOTAL} — <span" in page and f"✓ expectation: {EXPECT_READ}" in page
