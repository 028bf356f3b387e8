"""Captures Claude Code streams as parser fixtures: the real binary through the real executor, against
the scripted server on 127.0.0.1; paths rewritten to /home/user.

``python -m tests.fakes.capture_claude tests/fixtures/agent-cli/2.1.330`` (the binary found the way
skillab finds it: $SKILLAB_CLAUDE_BIN, $SKILLAB_AGENT_CLI_DIR, PATH).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.schema import AgentRequest
from tests.fakes.provider import FakeProvider, Fault, SkillScript, tool_results

SKILL = "---\nname: calc-skill\ndescription: Writes exact arithmetic Python modules. Use for calculator tasks.\n---\n# Calc\nAlways return the exact result.\n"
PLUGIN_SKILL = "---\nname: calc-rules\ndescription: Rules for writing exact arithmetic Python modules. Use for calculator tasks.\n---\n# Calc rules\nAlways return the exact arithmetic result.\n"
PROMPT = "Create calc.py with add(a, b)."


def write_plugin(root: Path, name: str = "demo-plugin") -> Path:
    """A plugin with a skill, a command, an agent and an MCP server declaration."""
    folder = root / name
    (folder / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": name, "version": "0.1.0", "description": "Arithmetic helpers for Python work."})
    )
    (folder / "skills" / "calc-rules").mkdir(parents=True, exist_ok=True)
    (folder / "skills" / "calc-rules" / "SKILL.md").write_text(PLUGIN_SKILL)
    (folder / "commands").mkdir(exist_ok=True)
    (folder / "commands" / "tidy.md").write_text(
        "---\ndescription: Tidy the Python files of the project.\n---\nRun a formatter over the Python files.\n"
    )
    (folder / "agents").mkdir(exist_ok=True)
    (folder / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews arithmetic code for exactness.\n---\nYou review code.\n"
    )
    (folder / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"notes": {"command": "/nonexistent/notes-server", "args": []}}})
    )
    return folder


def bash_then_answer(body: dict[str, Any], headers: Mapping[str, str]) -> list[dict[str, Any]]:
    done = len(tool_results(body))
    if done:
        return [{"type": "text", "text": "calc.py is written."}]
    command = "printf 'def add(a, b):\\n    return a + b\\n' > calc.py"
    return [{"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "write"}}]


def capture(
    out: Path, tag: str, agent: Callable[..., Any] | None, fault: Fault | None, **fields: Any
) -> None:
    with tempfile.TemporaryDirectory(prefix="cap-") as tmp, FakeProvider() as server:
        if isinstance(agent, SkillScript):
            agent.install(server)
        elif agent is not None:
            server.claude_agent = agent
        if fault is not None:
            server.fault_for = lambda call: fault
        root = Path(tmp)
        if fields.pop("skill", False):
            (root / "skill").mkdir()
            (root / "skill" / "SKILL.md").write_text(SKILL)
            fields |= {"skill_name": "calc-skill", "skill_dir": str(root / "skill")}
        if fields.pop("plugin", False):
            fields["plugin_dir"] = str(write_plugin(root / "src"))
        request = AgentRequest(
            cli="claude",
            model="sonnet",
            prompt=PROMPT,
            sandbox=str(root / "project"),
            home=str(root / "home"),
            raw_stream=str(root / "out" / "raw_stream.jsonl"),
            timeout_s=120,
            **fields,
        )
        session = asyncio.run(ClaudeCodeExecutor(ExecutorSettings(base_url=server.url)).session(request))
        text = (root / "out" / "raw_stream.jsonl").read_text()
        text = text.replace(str(root / "project"), "/home/user/project").replace(str(root), "/home/user")
        (out / f"claude-{tag}.jsonl").write_text(text)
        print(f"{tag}: {session.status} ({len(text)} bytes)")


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    capture(out, "stream", bash_then_answer, None)
    capture(out, "skill", SkillScript("calc-skill"), None, skill=True)
    capture(out, "maxturns", SkillScript("calc-skill", before=("Bash", "Bash")), None, max_turns=1)
    capture(
        out,
        "apierr",
        None,
        Fault(
            status=400,
            body='{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}',
        ),
    )
    capture(out, "plugin", SkillScript("demo-plugin:calc-rules"), None, plugin=True, force_skill=False)
    capture(out, "plugin-baseline", SkillScript("demo-plugin:calc-rules"), None, force_skill=False)
    capture(out, "plugin-mcp", None, None, plugin=True, plugin_mcp=True)


if __name__ == "__main__":
    main(sys.argv[1:])
