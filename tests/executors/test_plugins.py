"""A whole plugin as the artifact: detection, manifest errors, MCP stripping, what each CLI is told,
the version gate, and the contamination check over streams captured from 2.1.197 and 2.1.330."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from executors.agent import read_events
from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor, parse_claude
from executors.codex_cli import CodexExecutor
from executors.errors import InputError
from executors.gemini_cli import GeminiCliExecutor
from executors.plugin import looks_like_plugin, prepared_copy, read_plugin, runner_problem
from executors.schema import AgentEvent, AgentRequest, AgentSession
from executors.versions import CLAUDE_BUILTIN_SKILLS, parse_version
from flows.inputs.skill_config import Skill, check_artifact, find_skill
from flows.modes.agentic.sessions import contamination, init_event
from flows.modes.triggers.plan import TriggerOptions, artifact_problems, variants_of
from graders.triggers import TriggerStatus, detect
from tasks.schema import Arm
from tests.executors.test_sandbox import ENDPOINT
from tests.fakes.capture_claude import write_plugin

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent-cli"
VERSIONS = ("2.1.197", "2.1.330")
PARTS = ("demo-plugin:calc-rules", "demo-plugin:tidy", "demo-plugin:reviewer")


def stream(version: str, name: str) -> list[dict]:
    return read_events(FIXTURES / version / f"claude-{name}.jsonl")


def test_a_plugin_folder_is_read_with_its_parts(tmp_path: Path) -> None:
    folder = write_plugin(tmp_path)
    assert looks_like_plugin(folder) and not looks_like_plugin(tmp_path)
    plugin = read_plugin(folder)
    assert (plugin.name, plugin.skills, plugin.commands, plugin.agents) == (
        "demo-plugin",
        ("calc-rules",),
        ("tidy",),
        ("reviewer",),
    )
    assert plugin.mcp_servers == ("notes",) and not plugin.hooks
    assert set(plugin.parts) == set(PARTS)
    assert "MCP servers NOT started: notes" in plugin.summary(mcp=False)
    assert "MCP servers started: notes" in plugin.summary(mcp=True)
    skill = find_skill(str(folder), tmp_path)
    assert skill.name == "demo-plugin" and skill.plugin == plugin
    assert skill.description == "Arithmetic helpers for Python work."


def test_manifest_paths_and_inline_servers(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / "extra").mkdir()
    (folder / "extra" / "deploy.md").write_text("Deploy.")
    manifest = {"name": "p", "commands": ["./extra/deploy.md"], "mcpServers": {"db": {"command": "x"}}}
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    plugin = read_plugin(folder)
    assert plugin.commands == ("deploy",) and plugin.mcp_servers == ("db",)
    copy = prepared_copy(folder, tmp_path / "copy", mcp=False)
    assert "mcpServers" not in json.loads((copy / ".claude-plugin" / "plugin.json").read_text())
    assert read_plugin(copy).mcp_servers == ()


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (None, ".claude-plugin/plugin.json: missing"),
        ("{not json", "not valid JSON (line 1"),
        ("[]", "expected a JSON object"),
        ('{"version": "1"}', "plugin.json: name: missing"),
        ('{"name": "My Plugin"}', "name: 'My Plugin' is not a plain name"),
    ],
)
def test_a_malformed_plugin_is_one_line_naming_the_file_and_field(
    tmp_path: Path, manifest: str | None, field: str
) -> None:
    folder = tmp_path / "broken"
    (folder / "skills" / "s").mkdir(parents=True)
    (folder / "skills" / "s" / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n")
    if manifest is not None:
        (folder / ".claude-plugin").mkdir()
        (folder / ".claude-plugin" / "plugin.json").write_text(manifest)
    with pytest.raises(InputError) as caught:
        find_skill(str(folder), tmp_path)
    (line,) = caught.value.lines
    assert str(folder) in line and field in line and "\n" not in line


def test_an_empty_plugin_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text('{"name": "empty"}')
    with pytest.raises(InputError, match="nothing to load"):
        read_plugin(folder)


def test_mcp_servers_are_stripped_unless_opted_in(tmp_path: Path) -> None:
    folder = write_plugin(tmp_path / "src")
    stripped = prepared_copy(folder, tmp_path / "a", mcp=False)
    assert (
        not (stripped / ".mcp.json").exists() and (stripped / "skills" / "calc-rules" / "SKILL.md").exists()
    )
    assert (folder / ".mcp.json").exists()  # the user's folder is untouched
    kept = prepared_copy(folder, tmp_path / "b", mcp=True)
    assert read_plugin(kept).mcp_servers == ("notes",)


def request(tmp_path: Path, **fields: object) -> AgentRequest:
    return AgentRequest(
        cli="claude",
        model="claude-sonnet-4-5",
        prompt="p",
        sandbox=str(tmp_path / "sb"),
        home=str(tmp_path / "home"),
        raw_stream=str(tmp_path / "out.jsonl"),
        **fields,  # type: ignore[arg-type]
    )


def test_claude_loads_a_stripped_copy_with_plugin_dir_and_always_names_the_model(tmp_path: Path) -> None:
    folder = write_plugin(tmp_path / "src")
    claude = ClaudeCodeExecutor(ExecutorSettings(base_url="http://127.0.0.1:9"))
    argv, env = claude.prepare(request(tmp_path, plugin_dir=str(folder)), ENDPOINT)
    copy = Path(argv[argv.index("--plugin-dir") + 1])
    assert copy.is_relative_to(tmp_path / "home") and not (copy / ".mcp.json").exists()
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"
    assert env["CLAUDE_CODE_SUBAGENT_MODEL"] == "claude-sonnet-4-5"  # a plugin's agents too
    assert "--append-system-prompt" not in argv and "Skill" in argv[argv.index("--allowedTools") + 1]
    argv, _ = claude.prepare(request(tmp_path / "m", plugin_dir=str(folder), plugin_mcp=True), ENDPOINT)
    assert (Path(argv[argv.index("--plugin-dir") + 1]) / ".mcp.json").exists()
    baseline, _ = claude.prepare(request(tmp_path / "b"), ENDPOINT)
    assert "--plugin-dir" not in baseline and baseline[baseline.index("--model") + 1] == "claude-sonnet-4-5"


def test_codex_and_gemini_take_only_the_plugins_skills(tmp_path: Path) -> None:
    folder = tmp_path / "skills-only"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text('{"name": "skills-only"}')
    (folder / "skills" / "calc-rules").mkdir(parents=True)
    (folder / "skills" / "calc-rules" / "SKILL.md").write_text("---\nname: calc-rules\ndescription: d\n---\n")
    CodexExecutor(ExecutorSettings()).prepare(request(tmp_path / "c", plugin_dir=str(folder)), ENDPOINT)
    assert (tmp_path / "c" / "sb" / ".agents" / "skills" / "calc-rules" / "SKILL.md").exists()
    GeminiCliExecutor(ExecutorSettings()).prepare(request(tmp_path / "g", plugin_dir=str(folder)), ENDPOINT)
    assert (tmp_path / "g" / "sb" / ".gemini" / "skills" / "calc-rules" / "SKILL.md").exists()
    assert runner_problem(read_plugin(folder), "codex", False) is None
    full = read_plugin(write_plugin(tmp_path / "src"))
    problem = runner_problem(full, "gemini-cli", False) or ""
    assert "commands/tidy" in problem and "--runner claude" in problem
    assert runner_problem(full, "claude", True) is None


def fake_cli(tmp_path: Path, version: str) -> str:
    binary = tmp_path / f"claude-{version}"
    binary.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return str(binary)


def test_the_version_gate_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_version("2.1.330 (Claude Code)") == (2, 1, 330)
    claude = ClaudeCodeExecutor
    assert claude.feature_problem("plugin-dir", "2.1.330") is None
    assert claude.feature_problem("plugin-dir", None) is None  # unknown: not gated
    old = claude.feature_problem("plugin-eval", "2.1.197") or ""
    assert "needs claude >= 2.1.269, but 2.1.197 is installed" in old
    plugin = Skill("demo-plugin", write_plugin(tmp_path / "src"))
    monkeypatch.setenv("SKILLAB_CLAUDE_BIN", fake_cli(tmp_path, "2.1.100"))
    with pytest.raises(InputError, match=r"--plugin-dir\) needs claude >= 2.1.197, but 2.1.100 is installed"):
        check_artifact(plugin, "claude")
    monkeypatch.setenv("SKILLAB_CLAUDE_BIN", fake_cli(tmp_path, "2.1.330"))
    assert check_artifact(plugin, "claude") == "2.1.330"
    with pytest.raises(InputError, match="only a plugin's skills load outside Claude Code"):
        check_artifact(plugin, "codex")


@pytest.mark.parametrize("version", VERSIONS)
def test_builtin_skills_are_neither_the_skill_nor_contamination(version: str) -> None:
    raw = stream(version, "plugin-baseline")
    session = parse_claude(raw)
    builtins = set(session.skills_listed or ()) & CLAUDE_BUILTIN_SKILLS
    assert len(builtins) >= 12  # 2.1.197 lists 12 of its own, 2.1.330 16
    assert (
        contamination(
            session,
            Arm.BASELINE,
            "calc-skill",
            init_event(raw),
            "Writes exact modules.",
            cli=ClaudeCodeExecutor,
        )
        is None
    )
    # a user's skill named like a built-in one replaces it in the with-arm; the baseline's is the CLI's
    assert (
        contamination(
            session, Arm.BASELINE, "code-review", init_event(raw), "Reviews diffs.", cli=ClaudeCodeExecutor
        )
        is None
    )
    leaked = dict(init_event(raw) or {}, skills=["calc-skill"])
    assert "lists 'calc-skill'" in (
        contamination(session, Arm.BASELINE, "calc-skill", leaked, cli=ClaudeCodeExecutor) or ""
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_plugin_contamination_on_captured_streams(version: str, tmp_path: Path) -> None:
    plugin = read_plugin(write_plugin(tmp_path))
    loaded, bare = stream(version, "plugin"), stream(version, "plugin-baseline")
    with_arm, baseline = parse_claude(loaded, plugin="demo-plugin"), parse_claude(bare)
    assert with_arm.skill_invoked and not parse_claude(loaded, plugin="other").skill_invoked
    assert (with_arm.meta.plugins or [""])[0] == "demo-plugin" and with_arm.meta.mcp_servers == []
    assert (
        contamination(
            with_arm, Arm.WITH_SKILL, plugin.name, init_event(loaded), plugin=plugin, cli=ClaudeCodeExecutor
        )
        is None
    )
    assert (
        contamination(
            baseline, Arm.BASELINE, plugin.name, init_event(bare), plugin=plugin, cli=ClaudeCodeExecutor
        )
        is None
    )
    leak = (
        contamination(
            with_arm, Arm.BASELINE, plugin.name, init_event(loaded), plugin=plugin, cli=ClaudeCodeExecutor
        )
        or ""
    )
    assert "plugin 'demo-plugin'" in leak
    init = dict(init_event(loaded) or {}, plugins=[])
    leak = (
        contamination(baseline, Arm.BASELINE, plugin.name, init, plugin=plugin, cli=ClaudeCodeExecutor) or ""
    )
    assert "'demo-plugin:calc-rules' of plugin 'demo-plugin' in skills" in leak
    missing = (
        contamination(
            baseline, Arm.WITH_SKILL, plugin.name, init_event(bare), plugin=plugin, cli=ClaudeCodeExecutor
        )
        or ""
    )
    assert "does not list plugin 'demo-plugin'" in missing
    servers = parse_claude(stream(version, "plugin-mcp")).meta.mcp_servers
    assert servers == ["plugin:demo-plugin:notes"]  # what stripping prevents


@pytest.mark.parametrize("version", VERSIONS)
def test_the_plugins_skill_firing_is_detected(version: str) -> None:
    session = parse_claude(stream(version, "plugin"))
    triggers = detect(session, ["demo-plugin:calc-rules"])
    assert triggers.status == TriggerStatus.OK and triggers.fired == ("demo-plugin:calc-rules",)
    quiet = detect(parse_claude(stream(version, "plugin-baseline")), ["demo-plugin:calc-rules"])
    assert quiet.status == TriggerStatus.NOT_LISTED  # without the plugin its skill is not listed


def test_trigger_candidates_of_a_plugin_are_namespaced(tmp_path: Path) -> None:
    folder = write_plugin(tmp_path / "src")
    variants, candidates = variants_of(TriggerOptions(skill=(str(folder),)), tmp_path)
    assert candidates == ("demo-plugin:calc-rules",) and variants[0].skills[0].plugin is not None
    assert artifact_problems(variants[0].skills[0]) == []
    (folder / "skills" / "calc-rules" / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    (problem,) = artifact_problems(variants[0].skills[0])
    assert "name: 'other' differs" in problem


def test_a_built_in_skill_firing_is_not_the_candidates() -> None:
    listed = ("demo-plugin:debug", "calc-skill", *sorted(CLAUDE_BUILTIN_SKILLS))
    calls = [AgentEvent(kind="tool_use", tool="Skill", tool_id="t1", input={"skill": "debug"})]
    session = AgentSession(ok=True, status="success", events=tuple(calls), skills_listed=listed)
    triggers = detect(session, ["demo-plugin:debug", "calc-skill"])
    assert triggers.status == TriggerStatus.OK and triggers.fired == ("debug",)  # the CLI's own
    assert not triggers.fired_skill("demo-plugin:debug") and not triggers.fired_skill("calc-skill")
