"""A skill whose gain shows only in a conversation: the real claude CLI against the scripted server,
each case with a simulated user who alone holds the fact the task needs, and a permission policy."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from executors.conversation import ASK_TOOL
from flows.cli.main import main
from tests.agents import need
from tests.fakes.provider import FakeProvider, tool_results

pytestmark = pytest.mark.usefixtures("prefect_harness")

SKILL = """---
name: ask-first
description: Writes sales reports. Use when asked for a report.
---
# Ask first
Ask the user for the region before writing anything; never guess it.
"""

TASK = """# Task: {name}
difficulty: easy
category: reports
type: positive

## Prompt
Write report.txt naming the sales region.

## Expected Outcome
report.txt names the region the user wants ({region}).

## Verification Checks
- file_contains: {region} in report.txt
- asked: region
- asked_before: Write

## Grading Rubric
- Correctness: the user's region

## User
```yaml
persona: a sales lead in a hurry
goal: a one-line report
facts:
  region: {region}
turns: 2
satisfied: the report names the region they asked for
```

## Permissions
```yaml
default: allow
rules:
  - tool: Bash
    when: '\\brm\\b'
    decision: deny
```
"""


def agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """With the skill (forced): load it, ask for the region, write it. Without: guess APAC."""
    text = json.dumps(body)
    cwd = re.search(r"Primary working directory: (\S+?)(?:\\n|\s)", text)
    assert cwd, "the CLI names its working directory"
    done = tool_results(body)
    if "MUST first call the Skill tool" in text:
        if not done:
            return [{"type": "tool_use", "name": "Skill", "input": {"skill": "ask-first"}}]
        if len(done) == 1:
            options = [{"label": "Europe", "description": "EMEA"}, {"label": "Asia", "description": "APAC"}]
            ask = {
                "question": "Which region should the report cover?",
                "header": "Region",
                "options": options,
            }
            return [{"type": "tool_use", "name": ASK_TOOL, "input": {"questions": [ask]}}]
        region = m.group(1) if (m := re.search(r'="(\w+)"', done[1])) else "unknown"
        steps = 2
    else:
        region, steps = "APAC", 0
    if len(done) == steps:
        write = {"file_path": f"{cwd.group(1)}/report.txt", "content": f"Sales region: {region}\n"}
        return [{"type": "tool_use", "name": "Write", "input": write}]
    return [{"type": "text", "text": "report.txt is written."}]


JUDGED: list[str] = []


def judge(system: str, prompt: str) -> str:
    JUDGED.append(prompt)
    s = 90 if re.search(r"Sales region: (EMEA|AMER)", prompt) else 30
    criteria = ("correctness", "completeness", "quality", "efficiency")
    return json.dumps(
        {k: {"score": s, "justification": "from the files"} for k in criteria} | {"summary": "ok"}
    )


def project(root: Path) -> Path:
    (root / ".claude" / "skills" / "ask-first").mkdir(parents=True)
    (root / ".claude" / "skills" / "ask-first" / "SKILL.md").write_text(SKILL)
    (root / "suite").mkdir()
    for stem, region in (("task-01-easy", "EMEA"), ("task-02-easy", "AMER")):
        (root / "suite" / f"{stem}.md").write_text(TASK.format(name=f"report {region}", region=region))
    return root


def run(root: Path, url: str, *more: str) -> int:
    return main(
        [
            "skill",
            "run",
            "--skill",
            "ask-first",
            "--tasks",
            "suite",
            "--base-url",
            url,
            "--judge-model",
            "claude-opus-4",
            "--results-dir",
            str(root / "results"),
            "--timeout",
            "30",
            *more,
        ]
    )


def test_an_ask_first_skill_passes_only_by_asking_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need("claude")
    root = project(tmp_path / "proj")
    reference = root / "suite" / "references" / "task-01-easy"  # what a correct agent leaves and says
    reference.mkdir(parents=True)
    (reference / "report.txt").write_text("Sales region: EMEA\n")
    said = [
        {"who": "agent", "kind": "question", "text": "Which region?"},
        {"who": "user", "kind": "answer", "text": "EMEA"},
    ]
    reference.with_name("task-01-easy.conversation.json").write_text(json.dumps(said))
    monkeypatch.chdir(root)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeProvider(judge, agent=agent) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)  # the judge's endpoint
        assert run(root, server.url) == 0
    (results,) = (root / "results").glob("ask-first-*")
    report = json.loads((results / "report.json").read_text())
    assert report["deterministicPassRate"] == {"with-skill": 1.0, "baseline": 0.0}
    # the conversation checks tried on the reference conversation (and on silence) like every grader
    tried = {g["grader"]: g["status"] for g in report["validity"]["graders"]}
    assert tried == {
        "task-01-easy#1 (file_contains: EMEA in report.txt)": "ok",
        "task-01-easy#2 (asked: region)": "ok",
        "task-01-easy#3 (asked_before: Write)": "ok",
    }
    runs = {arm: [case["variants"][arm] for case in report["results"]] for arm in ("with-skill", "baseline")}
    # with the skill the agent asked for the one fact only the user holds, before writing; without, it guessed
    asked = [(u["who"], u["kind"]) for u in runs["with-skill"][0]["conversation"]]
    assert asked == [("user", "prompt"), ("agent", "question"), ("user", "answer"), ("policy", "permission")]
    assert [u["kind"] for u in runs["baseline"][0]["conversation"]] == ["prompt", "permission"]
    assert all(
        r["behavior"]["questions_asked"] == 1 and r["behavior"]["user_answers"] == 1
        for r in runs["with-skill"]
    )
    assert all(r["behavior"]["questions_asked"] == 0 for r in runs["baseline"])
    details = {d["check"]: d for d in runs["baseline"][0]["checkDetails"]}
    assert (
        details["asked: region"]["passed"] is False
        and details["asked_before: Write"]["reason"] == "the agent never asked before using Write"
    )
    conversation = json.loads((results / "outputs/task-01/with-skill/conversation.json").read_text())
    assert conversation[2] == {
        "who": "user",
        "kind": "answer",
        "text": "EMEA",
        "tool": ASK_TOOL,
        "decision": None,
    }
    assert (results / "sandbox/task-02/with-skill/report.txt").read_text() == "Sales region: AMER\n"
    # the judge read who said what, and when the user is satisfied
    talked = [p for p in JUDGED if "The conversation with the user" in p]
    assert len(talked) == 4 and any(
        "agent: Which region should the report cover?\nuser: EMEA" in p for p in talked
    )
    assert all(
        "(the user is satisfied when: the report names the region they asked for)" in p for p in talked
    )


def test_a_case_with_a_policy_is_refused_for_a_cli_that_cannot_converse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path / "proj")
    monkeypatch.chdir(root)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # the judge's, which --dry-run checks too
    # codex meets a user by resuming its thread, but cannot answer permission prompts
    assert run(root, "http://127.0.0.1:9", "--runner", "codex", "--dry-run") == 2
    err = capsys.readouterr().err.strip().splitlines()
    refused = "skillab: error: suite/task-01-easy.md: permissions: --runner codex: needs a CLI that takes"
    assert any(line.startswith(refused) for line in err), err
    for stem in ("task-01-easy", "task-02-easy"):
        text = (root / "suite" / f"{stem}.md").read_text()
        (root / "suite" / f"{stem}.md").write_text(text.split("## Permissions")[0])
    assert run(root, "http://127.0.0.1:9", "--runner", "codex", "--dry-run") == 0
    capsys.readouterr()
    for runner in ("gemini-cli", "opencode", "copilot"):  # each resumes its session for a user's answer
        assert run(root, "http://127.0.0.1:9", "--runner", runner, "--dry-run") == 0
