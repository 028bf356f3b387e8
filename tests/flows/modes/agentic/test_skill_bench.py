"""Agentic mode end to end with the real Claude Code CLI against a scripted model server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from executors.agent import read_events
from executors.claude_code import ClaudeCodeExecutor, parse_claude
from flows.cli.main import main
from flows.modes.agentic.sessions import contamination
from tasks.schema import Arm
from tests.agents import need
from tests.fakes.provider import Call, FakeProvider, Fault, tool_results

pytestmark = pytest.mark.usefixtures("prefect_harness")
FIXTURES = Path(__file__).resolve().parents[5] / "shared" / "fixtures" / "agent-cli"
SKILL = "---\nname: calc-skill\ndescription: Writes small, correct Python modules. Use for Python tasks.\n---\n# Calc\nAlways return the exact arithmetic result.\n"


def task_md(name: str, prompt: str, difficulty: str = "easy", kind: str = "positive") -> str:
    return f"""# Task: {name}
difficulty: {difficulty}
category: python
type: {kind}

## Prompt
{prompt}

## Expected Outcome
calc.py defines add(a, b) returning a + b.

## Verification Checks
- file_exists: calc.py
- file_contains: def add in calc.py
- syntax_valid: python
- runs_without_error: python3 -c "import calc; assert calc.add(2, 3) == 5"

## Grading Rubric
- Correctness: add returns the sum
- Completeness: the function exists
- Quality: clear code

## Tags
python
"""


def first_prompt(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return (
        content
        if isinstance(content, str)
        else " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    )


def agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """With the skill: load it, then write a correct file. Baseline: a wrong one."""
    system = body.get("system") or ""
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    done = len(tool_results(body))
    with_skill = "MUST first call the Skill tool" in system
    body_op = "+" if with_skill else "-"
    steps = (
        [{"type": "tool_use", "name": "Skill", "input": {"skill": "calc-skill"}}] if with_skill else []
    ) + [
        {
            "type": "tool_use",
            "name": "Bash",
            "input": {
                "command": f"printf 'def add(a, b):\\n    return a {body_op} b\\n' > calc.py",
                "description": "write",
            },
        }
    ]
    return [steps[done]] if done < len(steps) else [{"type": "text", "text": "calc.py is written."}]


def judge(system: str, prompt: str) -> str:
    good = "return a + b" in prompt
    s = 90 if good else 40
    return json.dumps(
        {
            k: {"score": s, "justification": "from the files"}
            for k in ("correctness", "completeness", "quality", "efficiency")
        }
        | {"summary": "ok"}
    )


def faults(call: Call) -> Fault | None:
    """The agent sessions of two tasks hang or fail; the judge and the diagnosis, whose prompts quote
    those tasks, are answered (a hung diagnosis call would only wait out its timeout)."""
    if not call.body.get("tools"):
        return None
    prompt = first_prompt(call.body) if call.body.get("messages") else ""
    if "HANG" in prompt:
        return Fault(delay=60)
    if "FAIL500" in prompt:
        return Fault(status=500)
    return None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    need("claude")
    return calc_project(
        tmp_path / "proj",
        {
            "task-01-easy": ("add numbers", "Create calc.py with add(a, b)."),
            "task-02-easy": ("add again", "Write calc.py defining add(a, b)."),
            "task-03-medium": ("hangs", "HANG: create calc.py"),
            "task-04-hard": ("api error", "FAIL500: create calc.py"),
        },
    )


def calc_project(root: Path, tasks: dict[str, tuple[str, str]]) -> Path:
    """A project with the calc skill in .claude/skills and a suite of tasks: file stem (its last part
    the difficulty) -> (name, prompt)."""
    (root / ".claude" / "skills" / "calc-skill").mkdir(parents=True)
    (root / ".claude" / "skills" / "calc-skill" / "SKILL.md").write_text(SKILL)
    (root / "suite").mkdir()
    for stem, (name, prompt) in tasks.items():
        (root / "suite" / f"{stem}.md").write_text(task_md(name, prompt, stem.rsplit("-", 1)[1]))
    return root


def skill_run(project: Path, url: str, results: str = "results") -> list[str]:
    """`skill run` of the project's suite against the scripted server, the judge on it too."""
    args = ["skill", "run", "--skill", "calc-skill", "--tasks", "suite", "--base-url", url]
    return [*args, "--judge-model", "claude-opus-4", "--results-dir", str(project / results)]


def test_skill_run_end_to_end(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    reference = project / "suite" / "references" / "task-01-easy"  # what a correct agent leaves
    reference.mkdir(parents=True)
    (reference / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    with FakeProvider(judge, agent=agent, fault_for=faults).anthropic_env(monkeypatch) as server:
        args = ["--output-dir", str(project / "reports"), "--timeout", "20", "--concurrency", "4"]
        code = main([*skill_run(project, server.url), *args])
    out = capsys.readouterr().out
    assert code == 0, out
    (results,) = (project / "results").glob("calc-skill-*")
    assert results.name.startswith("calc-skill-")
    for part in (
        "tasks/task-01-easy.md",
        "sandbox/task-01/with-skill/calc.py",
        "sandbox/task-01/baseline/calc.py",
        "outputs/task-01/with-skill/raw_stream.jsonl",
        "outputs/task-01/with-skill/response.json",
        "outputs/task-01/with-skill/transcript.json",
        "outputs/task-01/with-skill/meta.json",
        "outputs/task-01/with-skill/behavior.json",
        "grades/task-01/with-skill-checks.json",
        "grades/task-01/baseline-grade.json",
        "report.md",
    ):
        assert (results / part).exists(), part
    assert not (results / "sandbox/task-01/baseline/.claude").exists()  # the skill only in its arm
    meta = json.loads((results / "outputs/task-01/with-skill/meta.json").read_text())
    assert meta["skill_invoked"] and "calc-skill" in meta["skills_listed"] and meta["contaminated"] is None
    base_meta = json.loads((results / "outputs/task-01/baseline/meta.json").read_text())
    assert "calc-skill" not in base_meta["skills_listed"] and not base_meta["skill_invoked"]
    checks = json.loads((results / "grades/task-01/baseline-checks.json").read_text())
    assert checks["runs_without_error"] is False and not checks["all_passed"]
    good = json.loads((results / "grades/task-01/with-skill-grade.json").read_text())
    bad = json.loads((results / "grades/task-01/baseline-grade.json").read_text())
    assert good["weighted_total"] == 90 and bad["correctness"]["score"] == 40 and bad["weighted_total"] == 40
    hang = json.loads((results / "outputs/task-03/with-skill/meta.json").read_text())
    assert hang["status"] == "timeout"
    failed = json.loads((results / "outputs/task-04/baseline/meta.json").read_text())
    assert failed["status"] == "api_error" and failed["api_error_status"] == 500
    assert json.loads((results / "grades/task-04/baseline-grade.json").read_text())["weighted_total"] == 0
    behavior = json.loads((results / "outputs/task-01/with-skill/behavior.json").read_text())
    assert behavior["tool_calls"] == {"Skill": 1, "Bash": 1} and behavior["skill_invoked"]
    report = json.loads((results / "report.json").read_text())
    assert report["meta"]["suiteSha256"] and report["summary"]["with-skill"]["errorCount"] == 2
    assert report["meta"]["isolation"] == "bubblewrap" and report["meta"]["sandboxVersion"]
    # what ran, as the sessions and the judge's answers reported it: the real CLI's version, the model
    # ids, the tools and skills each arm was offered (the skill listed in one arm only)
    fingerprint = report["meta"]["fingerprint"]
    assert fingerprint["agentCli"] == report["meta"]["agentCliVersion"] and fingerprint["models"]
    assert fingerprint["judgeModels"] and fingerprint["sandbox"].startswith("bubblewrap")
    assert set(fingerprint["tools"]) == set(fingerprint["listing"]) == {"with-skill", "baseline"}
    assert fingerprint["listing"]["with-skill"] != fingerprint["listing"]["baseline"]
    assert checks["isolation"] == "bubblewrap"
    assert (
        report["deterministicPassRate"]["with-skill"] == 0.5
        and report["deterministicPassRate"]["baseline"] == 0.0
    )
    md = (results / "report.md").read_text()
    assert md.startswith("# Skill Benchmark Report: calc-skill") and "## Per-Task Breakdown" in md
    # why: the baseline's wrong file fails its check on both tasks; the sessions that failed are errors
    base = {g["key"]: g for g in report["diagnosis"]["variants"][0]["groups"]}
    check = next(g for k, g in base.items() if k.startswith("check runs_without_error"))
    assert report["diagnosis"]["variants"][0]["variant"] == "baseline" and check["kind"] == "check"
    assert {"task-01", "task-02"} <= {
        c[:7] for c in check["cases"]
    } and "judge criterion: correctness" in base
    assert "### Failures of baseline" in md
    assert "| add numbers | positive | easy | 90% | 40% | +50.0% | Skill |" in md
    assert (project / "reports" / f"{report['id']}.json").exists()
    assert "with-skill vs baseline:" in out
    # the certificate: every check of an agentic run, in the report, report.md and the console
    validity = {c["check"]: c for c in report["validity"]["checks"]}
    assert list(validity) == [
        "graders",
        "errors",
        "grading errors",
        "power",
        "judge",
        "discrimination",
        "baseline",
        "leakage",
    ]
    assert validity["baseline"]["status"] == "PASS" and validity["judge"]["status"] == "WARN"
    assert validity["graders"]["status"] == "PASS", validity["graders"]
    tried = {g["grader"]: g["status"] for g in report["validity"]["graders"]}
    assert tried and all(name.startswith("task-01-easy#") and s == "ok" for name, s in tried.items())
    assert validity["errors"]["value"] == 0.5 and validity["errors"]["status"] == "FAIL"
    assert "## Validity: not certified: errors" in md and "validity: not certified" in out
    # the report server shows agentic runs: checks, criteria, behaviour and the transcript
    from starlette.testclient import TestClient

    from flows.report.server import create_app

    app = create_app(project / "reports", host="testserver", port=8000)
    client = TestClient(app, base_url="http://testserver:8000")
    page = client.get(f"/run/{report['id']}")
    assert page.status_code == 200
    for text in (
        "with-skill",
        "baseline",
        "✓ file_exists: calc.py",
        "criteria:",
        "behaviour:",
        "transcript (",
    ):
        assert text in page.text, text
    assert "✗ runs_without_error: python3 -c" in page.text and "exit code 1: AssertionError" in page.text


def test_contamination_rules_on_captured_streams() -> None:
    listed = parse_claude(read_events(FIXTURES / "claude-skill.jsonl"), "demo-skill")
    unlisted = parse_claude(read_events(FIXTURES / "claude-stream.jsonl"), "demo-skill")
    assert contamination(listed, Arm.WITH_SKILL, "demo-skill", cli=ClaudeCodeExecutor) is None
    assert "does not list" in (
        contamination(unlisted, Arm.WITH_SKILL, "demo-skill", cli=ClaudeCodeExecutor) or ""
    )
    assert "lists 'demo-skill'" in (
        contamination(listed, Arm.BASELINE, "demo-skill", cli=ClaudeCodeExecutor) or ""
    )
    assert contamination(unlisted, Arm.BASELINE, "demo-skill", cli=ClaudeCodeExecutor) is None


def test_bad_task_file_is_one_line_and_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    (project / "suite" / "task-05-easy.md").write_text("# Task: x\ndifficulty: easy\n\n## Prompt\np\n")
    assert main(["skill", "run", "--skill", "calc-skill", "--tasks", "suite"]) == 2
    err = capsys.readouterr().err
    assert "task-05-easy.md: expected outcome: section '## Expected Outcome' is missing or empty" in err
    assert main(["skill", "run", "--skill", "nope", "--tasks", "suite"]) == 2
    assert "no skill 'nope' (skills found: calc-skill)" in capsys.readouterr().err


def baseline_fails(call: Call) -> Fault | None:
    """Every request of a baseline session (no forced skill in its system prompt) gets HTTP 500;
    the judge's calls (not streamed) are answered."""
    if not call.body.get("stream"):
        return None
    system = call.body.get("system") or ""
    text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    return (
        None
        if "MUST first call the Skill tool" in text or not call.body.get("messages")
        else Fault(status=500)
    )


def test_every_baseline_failed_still_writes_the_report(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed sessions are errors: excluded from scores, counted per arm; with no baseline left the
    run says "insufficient data" (exit 1) and still writes both reports, whose headline agrees."""
    for path in (project / "suite").glob("task-0[34]*"):
        path.unlink()
    monkeypatch.chdir(project)
    with FakeProvider(judge, agent=agent, fault_for=baseline_fails).anthropic_env(monkeypatch) as server:
        args = skill_run(project, server.url)
        code = main([*args, "--timeout", "20", "--concurrency", "4", "--require", "better"])
    err = capsys.readouterr().err
    assert code == 1 and "skillab skill: insufficient data: 0 task(s) completed in both arms" in err
    assert "Traceback" not in err  # the flow run ends Failed with the reason, no stack trace
    (results,) = (project / "results").glob("calc-skill-*")
    report = json.loads((results / "report.json").read_text())
    base = report["summary"]["baseline"]
    assert base["errorCount"] == 2 and base["errorRate"] == 1.0 and base["avgCompositeScore"] is None
    assert report["summary"]["with-skill"]["avgCompositeScore"] == 90
    verdict = report["comparisons"][0]["verdict"]
    assert verdict["label"] == "INSUFFICIENT DATA" and verdict["band"] is None
    for case in report["results"]:
        assert case["variants"]["baseline"]["compositeScore"] is None  # an error, not a 0
    md = (results / "report.md").read_text()
    assert "## Verdict:  INSUFFICIENT DATA" in md and "DON'T USE" not in md


def test_skill_run_gate_fails_below_the_threshold(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in (project / "suite").glob("task-0[34]*"):
        path.unlink()
    monkeypatch.chdir(project)
    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        common = skill_run(project, server.url)
        common += ["--timeout", "20", "--concurrency", "4"]
        assert main([*common, "--threshold", "95"]) == 1
        assert "with-skill: average score 90.00 < threshold 95" in capsys.readouterr().err
        assert main([*common, "--threshold", "85"]) == 0


def test_sessions_the_budget_kept_back_are_not_run_not_failures(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-calls below the plan: the sessions past the cap never start; the report lists them as
    not run (as sample and trigger mode do), no arm counts them as errors, and the console says so."""
    for path in (project / "suite").glob("task-0[34]*"):
        path.unlink()
    for i in (3, 4):
        (project / "suite" / f"task-0{i}-easy.md").write_text(task_md(f"add {i}", f"Create calc.py ({i})."))
    monkeypatch.chdir(project)
    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        args = skill_run(project, server.url)
        code = main([*args, "--timeout", "30", "--concurrency", "4", "--max-calls", "7"])
    out = capsys.readouterr().out
    assert code == 0
    (results,) = (project / "results").glob("calc-skill-*")
    report = json.loads((results / "report.json").read_text())
    meta = report["meta"]
    assert meta["calls"] == 7 and len(meta["notRun"]) == 1
    (kept,) = meta["notRun"]
    assert (
        kept["kind"] == "session"
        and kept["reason"] == "budget"
        and kept["variant"] in {"baseline", "with-skill"}
    )
    summary = report["summary"]
    assert summary["baseline"]["errorCount"] == summary["with-skill"]["errorCount"] == 0
    assert summary["baseline"]["executions"] + summary["with-skill"]["executions"] == 7
    assert "not run: 1 session(s): --max-calls or --budget-usd was reached" in out


def test_an_unchanged_baseline_is_reused_when_only_the_skill_changed(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second run of the suite with an edited skill runs only the with-skill arm: the baseline
    sessions (same CLI and version, model, endpoint, task, run) come from the first run, restored and
    graded as they were; --no-reuse-baseline runs them again."""
    for path in (project / "suite").glob("task-0[34]*"):
        path.unlink()
    monkeypatch.chdir(project)

    def baseline_requests(server: FakeProvider) -> int:
        # the agent's requests carry its tools (the judge's do not), the skill arm's the forced Skill call
        return sum(1 for c in server.calls if c.body.get("tools") and "MUST first call" not in str(c.body))

    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        args = [*skill_run(project, server.url), "--timeout", "30", "--concurrency", "4"]
        assert main(args) == 0
        first = baseline_requests(server)
        skill_md = project / ".claude" / "skills" / "calc-skill" / "SKILL.md"
        skill_md.write_text(skill_md.read_text() + "\nPrefer short functions.\n")
        assert main(args) == 0
        assert baseline_requests(server) == first  # no baseline session ran again
        out = capsys.readouterr().out
        assert main([*args, "--no-reuse-baseline"]) == 0
        assert baseline_requests(server) > first
    earlier, second, third = sorted((project / "results").glob("calc-skill-*"))
    report = json.loads((second / "report.json").read_text())
    meta = report["meta"]
    assert meta["reusedSessions"] == 2 and meta["reusedFrom"] == [earlier.name] and meta["cacheHits"] == 2
    assert f"reused: 2 baseline session(s) from {earlier.name}" in out
    base = [c["variants"]["baseline"] for c in report["results"]]
    assert all(b["reusedFrom"] == earlier.name and b["compositeScore"] == 40 for b in base)
    assert all("reusedFrom" not in c["variants"]["with-skill"] for c in report["results"])
    assert (second / "sandbox" / "task-01" / "baseline" / "calc.py").read_text().endswith("return a - b\n")
    assert f"Reused: 2 baseline session(s) from {earlier.name}" in (second / "report.md").read_text()
    assert "reusedSessions" not in json.loads((third / "report.json").read_text())["meta"]
