"""The cross-agent matrix end to end: one suite on every agent CLI's real binary (Claude Code, Copilot
CLI, Codex, Gemini CLI, OpenCode) against one scripted server on 127.0.0.1, each agent with and
without the skill.

The scripted model gives each agent a known effect of the skill: on claude, gemini-cli and opencode
it fixes three of four tasks, on copilot it changes nothing, on codex it breaks three of four. The
matrix must find those signs, say them in words the verdicts allow, and pair the agents' lifts by
task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.modes.agentic.model import AgenticReport
from flows.report.schema import load_report
from tests.agents import need
from tests.fakes.provider import FakeProvider, tool_results
from tests.flows.modes.agentic.test_skill_bench import SKILL, judge, skill_run, task_md

pytestmark = pytest.mark.usefixtures("prefect_harness")
RULE = "Always return the exact arithmetic result."  # the skill's body: in a codex request once loaded
GOOD, BAD = (
    "printf 'def add(a, b):\\n    return a + b\\n' > calc.py",
    "printf 'def add(a, b):\\n    return a - b\\n' > calc.py",
)
AGENTS = "claude,copilot,codex,gemini-cli,opencode"
#: The task on which every arm of every agent writes the right file.
EASY = "Write calc.py (the easy one)."


def good_file(agent: str, with_skill: bool, text: str) -> bool:
    """The scripted effect: claude gets it right only with the skill, copilot always, codex only
    without it; on the easy task everyone does."""
    if EASY in text:
        return True
    return {"copilot": True, "codex": not with_skill}.get(agent, with_skill)


def anthropic_agents(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Claude Code and Copilot CLI both speak Anthropic's API here; their tool sets tell them apart."""
    text = json.dumps(body)
    tools = {t.get("name") for t in body.get("tools") or []}
    copilot = "create" in tools
    with_skill = ("MUST first call the skill tool" if copilot else "MUST first call the Skill tool") in text
    prompt = next(m for m in body["messages"] if m["role"] == "user")
    command = GOOD if good_file("copilot" if copilot else "claude", with_skill, json.dumps(prompt)) else BAD
    skill = {"type": "tool_use", "name": "skill" if copilot else "Skill", "input": {"skill": "calc-skill"}}
    shell = {
        "type": "tool_use",
        "name": "bash" if copilot else "Bash",
        "input": {"command": command, "description": "write"},
    }
    steps = [skill, shell] if with_skill else [shell]
    done = len(tool_results(body))
    return [steps[done]] if done < len(steps) else [{"type": "text", "text": "calc.py is written."}]


def codex_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps(body)
    if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in body.get("input", [])):
        return [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
        ]
    command = GOOD if good_file("codex", RULE in text, text) else BAD
    return [
        {
            "type": "function_call",
            "name": "exec_command",
            "call_id": "c1",
            "arguments": json.dumps({"cmd": command}),
        }
    ]


def gemini_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps(body)
    with_skill = "MUST first call the activate_skill" in text
    done = sum(1 for c in body["contents"] for part in c.get("parts", []) if "functionResponse" in part)
    content = "def add(a, b):\n    return a {} b\n".format(
        "+" if good_file("gemini-cli", with_skill, text) else "-"
    )
    steps = (
        [{"functionCall": {"name": "activate_skill", "args": {"name": "calc-skill"}}}] if with_skill else []
    )
    steps.append(
        {"functionCall": {"name": "write_file", "args": {"file_path": "calc.py", "content": content}}}
    )
    return [steps[done]] if done < len(steps) else [{"text": "calc.py is written."}]


def opencode_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps(body)
    with_skill = "MUST first call the skill tool" in text
    prompt = next(m for m in body["messages"] if m["role"] == "user")
    command = GOOD if good_file("opencode", with_skill, json.dumps(prompt)) else BAD
    steps = [{"tool": "skill", "arguments": {"name": "calc-skill"}}] if with_skill else []
    steps.append({"tool": "bash", "arguments": {"command": command, "description": "write"}})
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    return [steps[done]] if done < len(steps) else [{"text": "calc.py is written."}]


def project(root: Path, prompts: list[str]) -> None:
    """The skill where Claude Code keeps skills, and a task suite of one easy task a prompt."""
    (root / ".claude" / "skills" / "calc-skill").mkdir(parents=True)
    (root / ".claude" / "skills" / "calc-skill" / "SKILL.md").write_text(SKILL)
    (root / "suite").mkdir()
    for i, prompt in enumerate(prompts, 1):
        (root / "suite" / f"task-0{i}-easy.md").write_text(task_md(f"task {i}", prompt))


def test_a_matrix_finds_each_agents_scripted_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    need(*("claude", "copilot", "codex", "gemini", "opencode"))
    monkeypatch.chdir(tmp_path)
    prompts = [
        "Create calc.py with add(a, b).",
        "Write calc.py defining add(a, b).",
        "Make calc.py: add(a, b).",
    ]
    project(tmp_path, [*prompts, EASY])
    with FakeProvider(judge, agent=anthropic_agents) as server:
        server.responses_agent = codex_agent
        server.gemini_agent = gemini_agent
        server.chat_agent = opencode_agent
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        urls = f"claude={server.url},copilot={server.url},codex={server.url}/v1,gemini-cli={server.url}"
        urls += f",opencode={server.url}/v1"
        args = [*skill_run(tmp_path, urls), "--runner", AGENTS]
        args += ["--output-dir", str(tmp_path / "reports"), "--timeout", "90", "--concurrency", "8"]
        code = main([*args, "--require", "better"])
    out, err = capsys.readouterr()
    assert code == 1, out + err  # --require better holds for each agent
    (root,) = (tmp_path / "results").glob("calc-skill-agents-*")
    report = load_report(root / "report.json", AgenticReport)
    matrix = report.matrix
    assert matrix is not None and matrix.reference == "claude"
    lifts = {a.runner: a for a in matrix.agents}
    assert [a.runner for a in matrix.agents] == AGENTS.split(",")
    assert lifts["claude"].paired and lifts["claude"].paired.mean == pytest.approx(37.5)
    assert lifts["copilot"].paired and lifts["copilot"].paired.mean == 0
    assert lifts["codex"].paired and lifts["codex"].paired.mean == pytest.approx(-37.5)
    # four tasks settle no verdict: the line says so, and no word of an effect
    assert lifts["copilot"].verdict and lifts["copilot"].verdict.label == "UNDERPOWERED"
    assert lifts["copilot"].line == (
        "copilot: UNDERPOWERED, +0.0 points (every task the same difference: no interval, exact sign "
        "test p=1) over 4 task(s)"
    )
    for runner in AGENTS.split(","):  # each told to load the skill did, and has its own report
        assert lifts[runner].invoked_rate == 1.0 and lifts[runner].errors == 0, lifts[runner]
        assert (tmp_path / "reports" / f"{lifts[runner].report}.json").exists()
        assert report.summary[f"{runner}/with-skill"].executions == 4
    assert lifts["claude"].line == "claude: UNDERPOWERED, +37.5 points [-2.3, +77.3] over 4 task(s)"
    pairs = {i.runner: i for i in matrix.interactions}
    assert pairs["copilot"].paired.mean == pytest.approx(-37.5) and pairs[
        "codex"
    ].paired.mean == pytest.approx(-75)
    for runner in ("gemini-cli", "opencode"):  # the same effect as on claude, task by task
        lift = lifts[runner].paired
        assert lift is not None and lift.mean == pytest.approx(37.5)
        assert pairs[runner].paired.mean == 0 and not pairs[runner].differs
    assert pairs["codex"].paired.n == 4 and pairs["codex"].line.startswith(
        "lift on codex minus lift on claude: -75.0 points [-154.6, +4.6] over 4 tasks: no evidence"
    )
    # one report: every agent's arms are its variants, every task once with all ten
    assert set(report.meta.variants) == {f"{r}/{a}" for r in lifts for a in ("baseline", "with-skill")}
    assert len(report.results) == 4 and all(len(c.variants) == 10 for c in report.results)
    assert (tmp_path / "reports" / f"{report.id}.json").exists()
    md = (root / "report.md").read_text()
    assert md.startswith("# Cross-Agent Skill Report: calc-skill") and "| copilot | claude-sonnet-4-5 |" in md
    assert "copilot: UNDERPOWERED, +0.0 points" in out and "lift on codex minus lift on claude" in out
    for runner in AGENTS.split(","):  # four tasks settle no BETTER: each agent's gate says so
        assert f"skillab skill: FAIL {runner}: with-skill vs baseline: verdict UNDERPOWERED" in err
    # the report server shows the matrix on the run's page, linking each agent's own report
    from starlette.testclient import TestClient

    from flows.report.server import create_app

    client = TestClient(
        create_app(tmp_path / "reports", host="testserver", port=8000), base_url="http://testserver:8000"
    )
    page = client.get(f"/run/{report.id}")
    assert page.status_code == 200 and "Across agents" in page.text
    assert f'href="/run/{lifts["codex"].report}"' in page.text


def test_plans_name_each_agents_own_model_and_the_shared_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    project(tmp_path, ["Create calc.py."])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    plan = ["skill", "run", "--skill", "calc-skill", "--tasks", "suite", "--dry-run"]
    # one agent named with a stray space and comma is that agent, with its own model
    assert main([*plan, "--runner", " codex,", "--base-url", "codex=http://127.0.0.1:9/v1"]) == 0
    out = capsys.readouterr().out
    assert "on codex (1 case)" in out and "gpt-5.5" in out
    assert "codex has no hard turn limit: the bound assumes --max-turns 10" in out
    assert main([*plan, "--runner", "claude,opencode", "--max-calls", "3"]) == 0
    out = capsys.readouterr().out
    assert "on claude (1 case)" in out and "on opencode (1 case)" in out and " gpt-4.1 " in out
    assert "all 2 agents: 4 sessions; at most $" in out  # the grand total of the two plans
    assert "--max-calls and --budget-usd hold for all the agents together, in --runner order" in out
    assert (
        main([*plan, "--runner", "claude,codex", "--base-url", "http://127.0.0.1:9,codex=http://x/v1"]) == 2
    )
    assert "--base-url: 'http://127.0.0.1:9' is not runner=value" in capsys.readouterr().err


def test_the_caps_hold_for_all_agents_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    project(tmp_path, [f"Create calc.py ({i})." for i in (1, 2)])
    with FakeProvider(judge) as server:
        server.gemini_agent = gemini_agent
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["skill", "run", "--skill", "calc-skill", "--tasks", "suite", "--runner", "gemini-cli,codex"]
        args += ["--base-url", f"gemini-cli={server.url},codex={server.url}/v1", "--max-calls", "4"]
        args += ["--judge-model", "claude-opus-4", "--results-dir", str(tmp_path / "results")]
        main([*args, "--timeout", "60", "--concurrency", "4"])
        codex_calls = [c for c in server.calls if c.path == "/v1/responses"]
    out = capsys.readouterr().out
    (root,) = (tmp_path / "results").glob("calc-skill-agents-*")
    merged = load_report(root / "report.json", AgenticReport)
    matrix = merged.matrix
    assert matrix is not None
    gemini, codex = matrix.agents
    assert gemini.sessions == 4 and gemini.errors == 0  # its four sessions used the whole cap
    assert merged.meta.calls == 4 and not merged.meta.not_run  # every agent's sessions, counted once
    assert codex.report is None and not codex_calls  # none left for codex: not started at all
    assert codex.line == "codex: no report (not run: --max-calls 4 reached by the agents before it)"
    assert codex.line in out
