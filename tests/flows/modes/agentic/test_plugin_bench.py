"""A whole plugin as the artifact, end to end with the real claude CLI against a scripted model on
127.0.0.1: loaded with --plugin-dir in the with-arm only, its MCP servers stripped unless opted in,
the baseline listing none of its parts, and the trigger benchmark seeing the plugin's skill fire."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from executors.agent import read_events
from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.plugin import read_plugin
from executors.schema import AgentRequest
from flows.cli.main import main
from flows.modes.agentic.sessions import contamination, init_event
from tasks.schema import Arm
from tests.agents import agent_request, need
from tests.fakes.capture_claude import write_plugin
from tests.fakes.provider import FakeProvider, SkillScript, skill_listing, tool_results
from tests.flows.modes.agentic.test_skill_bench import judge, task_md

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = "demo-plugin:calc-rules"
PARTS = {"skills": SKILL, "slash_commands": "demo-plugin:tidy", "agents": "demo-plugin:reviewer"}


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    need("claude")
    return write_plugin(tmp_path / "plugins")


def agent(body: dict[str, Any], headers: Mapping[str, str]) -> list[dict[str, Any]]:
    """Loads the plugin's skill when the request lists it, then writes a correct file; without the
    plugin, a wrong one."""
    done = len(tool_results(body))
    loaded = SKILL in skill_listing(body)
    op = "+" if loaded else "-"
    command = f"printf 'def add(a, b):\\n    return a {op} b\\n' > calc.py"
    steps = [{"type": "tool_use", "name": "Skill", "input": {"skill": SKILL}}] if loaded else []
    steps.append({"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "write"}})
    return [steps[done]] if done < len(steps) else [{"type": "text", "text": "calc.py is written."}]


def session(server: FakeProvider, root: Path, tag: str, **fields: Any) -> tuple[Any, list[dict[str, Any]]]:
    request = AgentRequest(
        cli="claude",
        model="sonnet",
        prompt="Create calc.py with add(a, b).",
        sandbox=str(root / tag / "sb"),
        home=str(root / tag / "home"),
        raw_stream=str(root / tag / "out" / "raw_stream.jsonl"),
        timeout_s=120,
        **fields,
    )
    result = asyncio.run(ClaudeCodeExecutor(ExecutorSettings(base_url=server.url)).session(request))
    return result, read_events(Path(request.raw_stream))


def test_plugin_in_the_with_arm_only_and_mcp_stripped(plugin: Path, tmp_path: Path) -> None:
    parts = read_plugin(plugin)
    with FakeProvider() as server:
        server.claude_agent = agent
        loaded, raw = session(server, tmp_path, "with", plugin_dir=str(plugin))
        base, base_raw = session(server, tmp_path, "base")
        opted, opted_raw = session(server, tmp_path, "mcp", plugin_dir=str(plugin), plugin_mcp=True)
    init = init_event(raw) or {}
    assert loaded.ok and loaded.isolation == "bubblewrap"
    assert [e.input for e in loaded.events if e.kind == "tool_use" and e.tool == "Skill"] == [
        {"skill": SKILL}
    ]
    for key, name in PARTS.items():
        assert name in init[key], key
        assert not any(str(n).startswith("demo-plugin:") for n in (init_event(base_raw) or {})[key]), key
    assert loaded.meta.mcp_servers == [] and "demo-plugin" in (loaded.meta.plugins or [])
    assert (
        contamination(loaded, Arm.WITH_SKILL, parts.name, init, plugin=parts, cli=ClaudeCodeExecutor) is None
    )
    assert (
        base.ok
        and contamination(
            base, Arm.BASELINE, parts.name, init_event(base_raw), plugin=parts, cli=ClaudeCodeExecutor
        )
        is None
    )
    assert (tmp_path / "with" / "sb" / "calc.py").read_text().endswith("a + b\n")
    assert (tmp_path / "base" / "sb" / "calc.py").read_text().endswith("a - b\n")
    assert not (tmp_path / "with" / "sb" / ".claude").exists()  # loaded by the CLI, not copied in
    assert opted.meta.mcp_servers == ["plugin:demo-plugin:notes"] and init_event(opted_raw)


def test_skill_run_with_a_plugin(
    plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "task-01-easy.md").write_text(task_md("add numbers", "Create calc.py with add(a, b)."))
    (suite / "task-02-easy.md").write_text(task_md("add again", "Write calc.py defining add(a, b)."))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeProvider(judge) as server:
        server.claude_agent = agent
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        args = ["skill", "run", "--skill", str(plugin), "--tasks", "suite", "--base-url", server.url]
        args += ["--judge-model", "claude-opus-4", "--results-dir", str(tmp_path / "results")]
        code = main([*args, "--timeout", "60", "--concurrency", "2"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    (results,) = (tmp_path / "results").glob("demo-plugin-*")
    report = json.loads((results / "report.json").read_text())
    meta = report["meta"]
    assert meta["skill"] == "demo-plugin" and meta["contaminated"] == []
    assert meta["plugin"].startswith("plugin demo-plugin: 1 skill(s), 1 command(s), 1 agent(s)")
    assert "MCP servers NOT started: notes (stripped; --plugin-mcp starts them)" in meta["plugin"]
    with_meta = json.loads((results / "outputs/task-01/with-skill/meta.json").read_text())
    base_meta = json.loads((results / "outputs/task-01/baseline/meta.json").read_text())
    assert with_meta["skill_invoked"] and "demo-plugin" in with_meta["plugins"]
    assert not base_meta["skill_invoked"] and "demo-plugin" not in base_meta["plugins"]
    version = with_meta["cli_version"]
    assert meta["agentCliVersion"] == f"claude {version}"
    md = (results / "report.md").read_text()
    assert f"Agent CLI: claude {version}" in md and "Plugin: plugin demo-plugin: 1 skill(s)" in md
    summary = report["summary"]
    assert summary["with-skill"]["avgCompositeScore"] == 90 and summary["baseline"]["avgCompositeScore"] == 40


def test_bad_plugin_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "no-manifest"
    (folder / "skills" / "x").mkdir(parents=True)
    (folder / "skills" / "x" / "SKILL.md").write_text("---\nname: x\ndescription: d\n---\n")
    (tmp_path / "suite").mkdir()
    monkeypatch.chdir(tmp_path)
    code = main(["skill", "run", "--skill", str(folder), "--tasks", "suite"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert str(folder) in err[0] and ".claude-plugin/plugin.json: missing" in err[0]


def test_a_full_plugin_is_refused_by_codex_in_one_line(
    plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "queries.yaml").write_text(
        yaml.safe_dump({"queries": [{"id": "q", "query": "x", "expect": SKILL}]})
    )
    monkeypatch.chdir(tmp_path)
    code = main(
        ["skill", "triggers", "run", "--skill", str(plugin), "--queries", "queries.yaml", "--runner", "codex"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "only a plugin's skills load outside Claude Code" in err[0]
    assert "commands/tidy" in err[0] and "--runner claude" in err[0]


def test_trigger_benchmark_sees_the_plugins_skill_fire(
    plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = {
        "q1": ("Please write an exact calculator module", SKILL),
        "q2": ("Add two numbers in a Python file for me", SKILL),
        "q3": ("What is the capital of France?", "none"),
    }
    rows = [{"id": k, "query": q, "expect": e} for k, (q, e) in queries.items()]
    (tmp_path / "queries.yaml").write_text(yaml.safe_dump({"queries": rows}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    should = {q: (1.0 if e != "none" else 0.0) for q, e in queries.values()}
    with FakeProvider() as server:
        script = SkillScript(SKILL, p_by_query=should).install(server)
        args = ["skill", "triggers", "run", "--skill", str(plugin), "--queries", "queries.yaml"]
        args += ["--base-url", server.url, "--quiet", "--results-dir", str(tmp_path / "results")]
        code = main([*args, "--no-cache", "--runs", "2", "--timeout", "60", "--min-recall", "0.9"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{SKILL}: recall 100%" in out and "false-fire 0%" in out
    assert all(SKILL in listing for listing in script.listings.values()) and len(script.listings) == 6
    (path,) = (tmp_path / "results").glob("*.json")
    meta = json.loads(path.read_text())["meta"]
    assert "MCP servers NOT started: notes" in meta["plugin"] and meta["agentCliVersion"].startswith(
        "claude 2."
    )


def gemini_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Activates the plugin's skill when the CLI offers it, then answers."""
    done = sum(1 for c in body["contents"] for p in c.get("parts", []) if "functionResponse" in p)
    offered = "calc-rules" in json.dumps(body.get("tools") or [])
    if offered and not done:
        return [{"functionCall": {"name": "activate_skill", "args": {"name": "calc-rules"}}}]
    return [{"text": "calc.py written."}]


def test_gemini_runs_a_plugin_of_skills_alone(tmp_path: Path) -> None:
    from executors.gemini_cli import GeminiCliExecutor
    from graders.triggers import TriggerStatus, detect

    need("gemini")
    folder = tmp_path / "skills-only"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text('{"name": "demo-plugin"}')
    (folder / "skills" / "calc-rules").mkdir(parents=True)
    (folder / "skills" / "calc-rules" / "SKILL.md").write_text(
        "---\nname: calc-rules\ndescription: Exact arithmetic modules.\n---\nBe exact.\n"
    )
    with FakeProvider() as server:
        server.gemini_agent = gemini_agent
        request = agent_request(
            tmp_path,
            "gemini-cli",
            "gemini-2.5-pro",
            "Create calc.py with add(a, b).",
            plugin_dir=str(folder),
            force_skill=False,
        )
        result = asyncio.run(GeminiCliExecutor(ExecutorSettings(base_url=server.url)).session(request))
    assert result.ok, result.error
    assert (tmp_path / "sb" / ".gemini" / "skills" / "calc-rules" / "SKILL.md").exists()
    triggers = detect(result, [SKILL])  # activate_skill "calc-rules" is the plugin's skill
    assert triggers.status == TriggerStatus.OK and triggers.fired == (SKILL,)
