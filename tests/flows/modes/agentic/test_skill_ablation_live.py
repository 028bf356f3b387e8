"""``skill run --ablate`` end to end: the real Claude Code CLI, in bubblewrap, against a scripted model
server on 127.0.0.1 whose behaviour is known.

The rule (deterministic): the scripted model loads the skill (forced in every with-skill arm), then
writes ``return a + b`` only if the skill body it was handed contains the Rules section's marker
(PLUS-MARKER), else ``return a - b``; its final answer names the headings of the skill it saw. The
scripted judge scores a correct file 80 and a wrong one 30, plus a jitter of -3..+3 taken from a
hash of the task's ticket number and the headings the agent saw, so every arm's scores vary from
task to task and every section gets a p-value. So: without Rules the score drops by about 50 on
every task (found, after Holm over the three sections); without Style or Notes it moves only by
the jitter (no detectable effect)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.report.logtext import md as escape
from tests.agents import need
from tests.fakes.provider import FakeProvider
from tests.flows.modes.agentic.test_skill_bench import skill_run

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = """---
name: calc-skill
description: Writes small, correct Python modules. Use for Python tasks.
---
# Calc
## Rules
PLUS-MARKER: add returns the sum.
## Style
Keep names short.
## Notes
Nothing else matters.
"""
HEADINGS = ("Rules", "Style", "Notes")
TICKETS = (1, 2, 3, 4)


def task_md(ticket: int) -> str:
    return f"""# Task: add {ticket}
difficulty: easy
category: python
type: positive

## Prompt
Create calc.py with add(a, b) (ticket {ticket}).

## Expected Outcome
calc.py defines add(a, b) returning the sum.

## Verification Checks
- file_exists: calc.py
- runs_without_error: python3 -c "import calc; assert calc.add(2, 3) == 5"

## Grading Rubric
- Correctness: add returns the sum
"""


def agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Load the skill when forced to; write + only with the marker in the conversation."""
    system = body.get("system") or ""
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    messages = json.dumps(body["messages"])
    done = messages.count('"tool_result"')
    with_skill = "MUST first call the Skill tool" in system
    op = "+" if "PLUS-MARKER" in messages else "-"
    command = f"printf 'def add(a, b):\\n    return a {op} b\\n' > calc.py"
    steps = [{"type": "tool_use", "name": "Skill", "input": {"skill": "calc-skill"}}] if with_skill else []
    steps.append({"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "write"}})
    if done < len(steps):
        return [steps[done]]
    seen = [h for h in HEADINGS if f"## {h}" in messages]
    return [{"type": "text", "text": f"calc.py is written (headings seen: {'/'.join(seen) or 'none'})."}]


def judge(system: str, prompt: str) -> str:
    ticket = re.search(r"\(ticket (\d+)\)", prompt)
    seen = re.search(r"headings seen: ([A-Za-z/]+)", prompt)
    key = f"{ticket.group(1) if ticket else '?'}|{seen.group(1) if seen else '?'}"
    jitter = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 7 - 3
    score = (80 if "return a + b" in prompt else 30) + jitter
    return json.dumps(
        {k: {"score": score, "justification": "from the files"} for k in WEIGHT_KEYS} | {"summary": "ok"}
    )


WEIGHT_KEYS = ("correctness", "completeness", "quality", "efficiency")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    need("claude")
    root = tmp_path / "proj"
    (root / ".claude" / "skills" / "calc-skill").mkdir(parents=True)
    (root / ".claude" / "skills" / "calc-skill" / "SKILL.md").write_text(SKILL)
    (root / "suite").mkdir()
    for t in TICKETS:
        (root / "suite" / f"task-0{t}-easy.md").write_text(task_md(t))
    return root


def test_ablate_finds_the_one_section_that_matters(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        args = skill_run(project, server.url)
        args += ["--output-dir", str(project / "reports"), "--timeout", "30", "--concurrency", "3"]
        code = main([*args, "--no-diagnose", "--ablate"])
    out = capsys.readouterr().out
    assert code == 0, out
    (results,) = (project / "results").glob("calc-skill-*")
    arms = ["with-skill-no-rules", "with-skill-no-style", "with-skill-no-notes"]
    for arm in arms:  # the copy the agent got: same name and front matter, one section fewer
        copy = (results / "ablated-skills" / arm / "calc-skill" / "SKILL.md").read_text()
        assert copy.startswith(SKILL.split("# Calc")[0]) and f"## {arm.split('-')[-1].title()}" not in copy
        meta = json.loads((results / "outputs" / "task-01" / arm / "meta.json").read_text())
        assert (
            meta["skill_invoked"] and "calc-skill" in meta["skills_listed"] and meta["contaminated"] is None
        )
        checks = json.loads((results / "grades" / "task-01" / f"{arm}-checks.json").read_text())
        assert checks["isolation"] == "bubblewrap" and checks["all_passed"] is (arm != "with-skill-no-rules")
        assert (results / "sandbox" / "task-01" / arm / "calc.py").exists()
    report = json.loads((results / "report.json").read_text())
    assert [c["treatment"] for c in report["comparisons"]] == ["with-skill"]  # the headline is unchanged
    assert report["deterministicPassRate"] == {
        "baseline": 0.0,
        "with-skill": 1.0,
        "with-skill-no-rules": 0.0,
        "with-skill-no-style": 1.0,
        "with-skill-no-notes": 1.0,
    }
    ablation = report["ablation"]
    assert ablation["full"] == "with-skill" and ablation["cases"] == len(TICKETS)
    found = {s["section"]: s for s in ablation["sections"]}
    assert [s["section"] for s in ablation["sections"]] == list(HEADINGS)
    assert found["Rules"]["finding"] == "helps" and found["Rules"]["p_holm"] < 0.05
    assert 40 < found["Rules"]["contribution"] < 60
    for quiet in ("Style", "Notes"):
        assert found[quiet]["finding"] == "no detectable effect" and found[quiet]["p_holm"] is not None
        assert "no detectable effect at this N (smallest detectable effect" in found[quiet]["line"]
    assert all(s["inputTokens"] > 0 for s in ablation["sections"])  # a shorter SKILL.md, a shorter prompt
    md = (results / "report.md").read_text()
    assert "### Sections of" in md and escape(found["Rules"]["line"]) in md  # as Markdown text
    assert found["Rules"]["line"] in out and "with-skill vs baseline:" in out
    from starlette.testclient import TestClient

    from flows.report.server import create_app

    client = TestClient(create_app(project / "reports", host="testserver", port=8000))
    page = client.get(f"http://testserver:8000/run/{report['id']}")
    assert page.status_code == 200 and "Sections of" in page.text and "with-skill-no-style" in page.text


def test_ablate_without_a_heading_is_one_line_and_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    skill_md = project / ".claude" / "skills" / "calc-skill" / "SKILL.md"
    skill_md.write_text(SKILL.split("# Calc")[0] + "Just text, no heading.\n")
    assert main(["skill", "run", "--skill", "calc-skill", "--tasks", "suite", "--ablate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"skillab: error: {skill_md}: --ablate: no markdown heading, so no section to leave out"]
    assert not (project / "skill-bench").exists()  # nothing started
