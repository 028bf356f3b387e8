"""The agent-CLI executors with the real binaries against a scripted server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from executors.base import ExecutorSettings
from executors.gemini_cli import GeminiCliExecutor
from executors.schema import AgentRequest
from tests.agents import agent_request, need
from tests.fakes.provider import FakeProvider, Fault, tool_results

SKILL = "---\nname: calc-skill\ndescription: Writes Python modules. Use for Python tasks.\n---\n# Calc\nBe exact.\n"


def gemini_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Loads the skill when told to, then writes calc.py, then answers."""
    text = json.dumps(body)
    done = sum(1 for c in body["contents"] for p in c.get("parts", []) if "functionResponse" in p)
    steps = (
        [{"functionCall": {"name": "activate_skill", "args": {"name": "calc-skill"}}}]
        if "MUST first call the activate_skill" in text
        else []
    )
    steps.append(
        {
            "functionCall": {
                "name": "write_file",
                "args": {"file_path": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
            }
        }
    )
    return [steps[done]] if done < len(steps) else [{"text": "calc.py written."}]


@pytest.fixture
def gemini() -> GeminiCliExecutor:
    need("gemini")
    return GeminiCliExecutor(ExecutorSettings())


def request(tmp_path: Path, name: str, skill: bool, timeout: float = 60) -> AgentRequest:
    skill_dir = tmp_path / "skill"
    skill_dir.mkdir(exist_ok=True)
    (skill_dir / "SKILL.md").write_text(SKILL)
    return agent_request(
        tmp_path / name,
        "gemini-cli",
        "gemini-2.5-pro",
        "Create calc.py with add(a, b).",
        skill_name="calc-skill" if skill else None,
        skill_dir=str(skill_dir) if skill else None,
        timeout_s=timeout,
    )


def test_gemini_with_skill_and_baseline(tmp_path: Path, gemini: GeminiCliExecutor) -> None:
    with FakeProvider() as server:
        server.gemini_agent = gemini_agent
        gemini.settings = ExecutorSettings(base_url=server.url)
        with_skill = asyncio.run(gemini.session(request(tmp_path, "a", skill=True)))
        baseline = asyncio.run(gemini.session(request(tmp_path, "b", skill=False)))
    assert with_skill.ok and with_skill.skill_invoked and with_skill.final_text == "calc.py written."
    assert with_skill.isolation == "bubblewrap"  # the default: every session in the OS sandbox
    assert [e.tool for e in with_skill.events if e.kind == "tool_use"] == ["activate_skill", "write_file"]
    assert (tmp_path / "a" / "sb" / "calc.py").read_text().startswith("def add")
    assert (tmp_path / "a" / "sb" / ".gemini" / "skills" / "calc-skill" / "SKILL.md").exists()
    assert baseline.ok and not baseline.skill_invoked
    assert not (tmp_path / "b" / "sb" / ".gemini").exists()


def test_gemini_api_error_and_timeout(tmp_path: Path, gemini: GeminiCliExecutor) -> None:
    with FakeProvider(fault_for=lambda call: Fault(status=500)) as server:
        gemini.settings = ExecutorSettings(base_url=server.url)
        failed = asyncio.run(gemini.session(request(tmp_path, "e", skill=False)))
    assert not failed.ok and failed.status in {"api_error", "crashed"} and failed.exit_code == 244
    with FakeProvider(fault_for=lambda call: Fault(delay=60)) as server:
        gemini.settings = ExecutorSettings(base_url=server.url)
        started = time.monotonic()
        hung = asyncio.run(gemini.session(request(tmp_path, "t", skill=False, timeout=4)))
    assert hung.status == "timeout" and time.monotonic() - started < 30


def codex_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    outputs = [
        i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    if not outputs:
        return [
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "call_1",
                "arguments": json.dumps({"cmd": "printf 'def add(a, b):\\n    return a + b\\n' > calc.py"}),
            }
        ]
    return [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "calc.py written."}],
        }
    ]


def test_codex_with_skill_and_baseline(tmp_path: Path) -> None:
    from executors.codex_cli import CodexExecutor

    need("codex")
    with FakeProvider() as server:
        server.responses_agent = codex_agent
        codex = CodexExecutor(ExecutorSettings(base_url=f"{server.url}/v1"))
        req = request(tmp_path, "c", skill=True).model_copy(update={"cli": "codex", "model": "gpt-5.5"})
        with_skill = asyncio.run(codex.session(req))
        base = asyncio.run(
            codex.session(request(tmp_path, "d", skill=False).model_copy(update={"cli": "codex"}))
        )
        first = server.calls[0].body
    assert with_skill.ok and with_skill.final_text == "calc.py written." and with_skill.skill_invoked
    assert with_skill.isolation == "bubblewrap"
    assert "Be exact." in json.dumps(first["input"])  # $calc-skill injected the skill's body
    assert (tmp_path / "c" / "sb" / "calc.py").read_text().startswith("def add")
    assert [e.tool for e in with_skill.events if e.kind == "tool_use"] == ["shell"]
    assert base.ok and not base.skill_invoked and not (tmp_path / "d" / "sb" / ".agents").exists()


def test_codex_api_error(tmp_path: Path) -> None:
    from executors.codex_cli import CodexExecutor

    with FakeProvider(
        fault_for=lambda call: Fault(status=400, body='{"error": {"message": "bad model"}}')
    ) as server:
        codex = CodexExecutor(ExecutorSettings(base_url=f"{server.url}/v1"))
        failed = asyncio.run(
            codex.session(request(tmp_path, "x", skill=False).model_copy(update={"cli": "codex"}))
        )
    assert not failed.ok and failed.status in {"api_error", "crashed"}


def copilot_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Copilot CLI's model: loads the skill when its instructions say so, writes calc.py with the
    ``create`` tool, then answers."""
    done = len(tool_results(body))
    steps = (
        [{"type": "tool_use", "name": "skill", "input": {"skill": "calc-skill"}}]
        if "MUST first call the skill tool" in json.dumps(body)
        else []
    )
    steps.append(
        {
            "type": "tool_use",
            "name": "create",
            "input": {"path": "calc.py", "file_text": "def add(a, b):\n    return a + b\n"},
        }
    )
    return [steps[done]] if done < len(steps) else [{"type": "text", "text": "calc.py written."}]


def copilot_request(tmp_path: Path, name: str, skill: bool, timeout: float = 60) -> AgentRequest:
    return request(tmp_path, name, skill, timeout).model_copy(
        update={"cli": "copilot", "model": "claude-sonnet-4-5"}
    )


def test_copilot_with_skill_and_baseline(tmp_path: Path) -> None:
    from executors.copilot_cli import CopilotCliExecutor

    need("copilot")
    with FakeProvider() as server:
        server.agent = copilot_agent
        copilot = CopilotCliExecutor(ExecutorSettings(base_url=server.url))
        with_skill = asyncio.run(copilot.session(copilot_request(tmp_path, "a", skill=True)))
        baseline = asyncio.run(copilot.session(copilot_request(tmp_path, "b", skill=False)))
        calls = [c for c in server.calls if c.path == "/v1/messages"]
    assert with_skill.ok and with_skill.skill_invoked and with_skill.final_text == "calc.py written."
    assert with_skill.isolation == "bubblewrap" and with_skill.meta.cli_version
    assert [e.tool for e in with_skill.events if e.kind == "tool_use"] == ["skill", "create"]
    assert with_skill.skills_listed and "calc-skill" in with_skill.skills_listed
    assert (tmp_path / "a" / "sb" / "calc.py").read_text().startswith("def add")
    assert (tmp_path / "a" / "sb" / ".agents" / "skills" / "calc-skill" / "SKILL.md").exists()
    # the skill's body reached the model once the skill tool had loaded it, not before
    assert "Be exact." not in json.dumps(calls[0].body) and "Be exact." in json.dumps(calls[1].body)
    usage = with_skill.meta.usage or {}
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert baseline.ok and not baseline.skill_invoked and baseline.final_text == "calc.py written."
    assert baseline.skills_listed is not None and "calc-skill" not in baseline.skills_listed
    assert not (tmp_path / "b" / "sb" / ".agents").exists()
    assert (tmp_path / "b" / "sb" / "calc.py").exists()


def test_copilot_api_error_and_timeout(tmp_path: Path) -> None:
    from executors.copilot_cli import CopilotCliExecutor

    # A 400 is not retried by the CLI (a 500 is, five times over some 16 s).
    with FakeProvider(
        fault_for=lambda call: Fault(status=400, body='{"type": "error", "error": {"message": "bad"}}')
    ) as server:
        copilot = CopilotCliExecutor(ExecutorSettings(base_url=server.url))
        failed = asyncio.run(copilot.session(copilot_request(tmp_path, "e", skill=False)))
    assert not failed.ok and failed.status == "api_error" and failed.meta.api_error_status == 400
    assert failed.exit_code == 1 and "bad" in (failed.error or "")
    with FakeProvider(fault_for=lambda call: Fault(delay=60)) as server:
        copilot = CopilotCliExecutor(ExecutorSettings(base_url=server.url))
        started = time.monotonic()
        hung = asyncio.run(copilot.session(copilot_request(tmp_path, "t", skill=False, timeout=4)))
    assert hung.status == "timeout" and time.monotonic() - started < 30


def opencode_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenCode's model (chat completions): loads the skill when its rules say so, writes calc.py
    with the ``write`` tool, then answers."""
    done = sum(1 for m in body["messages"] if m["role"] == "tool")
    steps = (
        [{"tool": "skill", "arguments": {"name": "calc-skill"}}]
        if "MUST first call the skill tool" in json.dumps(body)
        else []
    )
    steps.append(
        {
            "tool": "write",
            "arguments": {"filePath": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
        }
    )
    return [steps[done]] if done < len(steps) else [{"text": "calc.py written."}]


def opencode_request(tmp_path: Path, name: str, skill: bool, timeout: float = 90) -> AgentRequest:
    return request(tmp_path, name, skill, timeout).model_copy(update={"cli": "opencode", "model": "gpt-4.1"})


def test_opencode_with_skill_and_baseline(tmp_path: Path) -> None:
    from executors.opencode import OpenCodeExecutor

    need("opencode")
    with FakeProvider() as server:
        server.chat_agent = opencode_agent
        opencode = OpenCodeExecutor(ExecutorSettings(base_url=f"{server.url}/v1"))
        assert opencode.problem() is None  # ripgrep is on PATH
        with_skill = asyncio.run(opencode.session(opencode_request(tmp_path, "a", skill=True)))
        baseline = asyncio.run(opencode.session(opencode_request(tmp_path, "b", skill=False)))
        first = next(c.body for c in server.calls if c.body.get("tools"))
    assert with_skill.ok and with_skill.skill_invoked and with_skill.final_text == "calc.py written."
    assert with_skill.isolation == "bubblewrap" and with_skill.meta.num_turns == 3
    assert [e.tool for e in with_skill.events if e.kind == "tool_use"] == ["skill", "write"]
    loaded = next(e for e in with_skill.events if e.kind == "tool_result" and e.tool == "skill")
    assert "Be exact." in loaded.text and not loaded.is_error  # ripgrep listed the skill's folder
    assert (tmp_path / "a" / "sb" / "calc.py").read_text().startswith("def add")
    assert (tmp_path / "a" / "sb" / ".opencode" / "skills" / "calc-skill" / "SKILL.md").exists()
    # the prompt arrives as written (on stdin: OpenCode quotes an argv word holding a space)
    assert first["messages"][-1] == {"role": "user", "content": "Create calc.py with add(a, b)."}
    assert "webfetch" not in {t["function"]["name"] for t in first["tools"]}
    assert (with_skill.meta.usage or {})["input_tokens"] > 0
    assert baseline.ok and not baseline.skill_invoked and baseline.final_text == "calc.py written."
    assert not (tmp_path / "b" / "sb" / ".opencode" / "skills").exists()


def test_opencode_api_error_and_timeout(tmp_path: Path) -> None:
    from executors.opencode import OpenCodeExecutor

    # A 400 is not retried by OpenCode (a 500 is, five times over about 80 s).
    with FakeProvider(
        fault_for=lambda call: Fault(status=400, body='{"error": {"message": "bad model"}}')
    ) as server:
        opencode = OpenCodeExecutor(ExecutorSettings(base_url=f"{server.url}/v1"))
        failed = asyncio.run(opencode.session(opencode_request(tmp_path, "e", skill=False)))
    assert not failed.ok and failed.status == "api_error" and failed.meta.api_error_status == 400
    assert failed.exit_code == 1 and "bad model" in (failed.error or "")
    with FakeProvider(fault_for=lambda call: Fault(delay=60)) as server:
        opencode = OpenCodeExecutor(ExecutorSettings(base_url=f"{server.url}/v1"))
        started = time.monotonic()
        hung = asyncio.run(opencode.session(opencode_request(tmp_path, "t", skill=False, timeout=6)))
    # a busy OpenCode ignores SIGTERM: the whole group is killed at the timeout
    assert hung.status == "timeout" and time.monotonic() - started < 30
