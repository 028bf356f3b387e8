"""Codex CLI headless: ``codex exec --json`` with a config that keeps it quiet and local.

The skill is installed at ``.agents/skills/<name>/`` and its body injected by ``$<name>`` in the prompt
(Codex has no Skill tool and no skill event); in trigger mode (``force_skill`` False) only installed. Codex has no turn limit flag: ``max_turns`` is not
enforced by it, and the timeout bounds the session instead.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from executors.agent import AgentExecutor, json_object, skill_file_reads
from executors.conversation import stand_ins
from executors.egress import OPENAI, PLACEHOLDER_KEY
from executors.installing import install_plugin_skills, install_skill
from executors.parsing import JsonObject
from executors.schema import AgentEvent, AgentRequest, AgentSession
from executors.support import CODEX_SUPPORT

CONFIG = """\
check_for_update_on_startup = false
approval_policy = "never"
sandbox_mode = "danger-full-access"
{provider}
[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
"""
PROVIDER = """\
model_provider = "skillab"

[model_providers.skillab]
name = "skillab"
base_url = "{base_url}"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


class CodexExecutor(AgentExecutor):
    name = "codex"
    vendor = "openai"
    binary = "codex"
    default_model = "gpt-5.5"
    provider = OPENAI
    skills_home = (".agents", "skills")
    support = CODEX_SUPPORT
    workspace_dirs = (".agents", ".codex")
    request_tokens = 12_000
    turn_limit = False
    env_prefixes = ("CODEX_",)

    @classmethod
    def invoked_skills(cls, event: AgentEvent) -> list[str]:
        """Codex has no Skill tool and no skill event: a shell command that reads a skill's SKILL.md
        under ``.agents/skills/<name>/`` or ``.codex/skills/<name>/`` loads it. Its ``$name``
        expansion happens before the request and never shows in the ``exec --json`` stream (and a
        trigger benchmark must not put ``$name`` in a prompt: that forces the skill)."""
        if event.tool != "shell":
            return []
        return skill_file_reads(
            str((event.input or {}).get("command") or ""), ".agents/skills", ".codex/skills"
        )

    resumes = True  # a simulated user's answers as runs resuming the thread (`codex exec resume`)
    serves_mcp = True  # config.toml's [mcp_servers.<name>]

    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        codex_home = Path(request.home) / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        provider = PROVIDER.format(base_url=endpoint)
        config = CONFIG.format(provider=provider)
        # the case's stand-ins (a server's name is a TOML bare key: letters, digits, - and _; a JSON
        # string is a TOML basic string)
        for name, server in (stand_ins(request) if request.mcp else {}).items():
            config += f"\n[mcp_servers.{name}]\ncommand = {json.dumps(server['command'])}\n"
            config += f"args = {json.dumps(server['args'])}\n"
        (codex_home / "config.toml").write_text(config, encoding="utf-8")
        prompt = request.prompt
        install_plugin_skills(request, *self.skills_home)
        if install_skill(request, *self.skills_home) and request.force_skill:
            prompt = f"${request.skill_name} {prompt}"
        if request.system:
            (Path(request.sandbox) / "AGENTS.md").write_text(request.system, encoding="utf-8")
        argv = [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            request.model,
            "--disable",
            "plugins",
            "--disable",
            "remote_plugin",
            "--disable",
            "apps",
            prompt,
        ]
        env = self.base_env(request) | {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": PLACEHOLDER_KEY}
        return argv, env

    def resume_argv(self, argv: list[str], session_id: str, message: str) -> list[str]:
        # `codex exec [its flags] resume <thread id> <prompt>`: the prompt, the last argument, replaced
        return [*argv[:-1], "resume", session_id, message]

    def parse(self, events: list[JsonObject], request: AgentRequest) -> AgentSession:
        forced = bool(request.skill_name and request.skill_dir and request.force_skill)
        return parse_codex(events, request.skill_name, forced=forced)


def _codex_item(item: JsonObject, skill_name: str | None) -> tuple[list[AgentEvent], bool]:
    """A completed item as events, and whether it read the skill under test."""
    kind, tool_id = item.get("type"), item.get("id")
    if kind == "agent_message":
        return [AgentEvent(kind="text", text=str(item.get("text") or ""))], False
    if kind == "command_execution":
        command, code = str(item.get("command") or ""), item.get("exit_code")
        output = str(item.get("aggregated_output") or "")[:4000]
        return [
            AgentEvent(kind="tool_use", tool="shell", tool_id=tool_id, input={"command": command}),
            AgentEvent(
                kind="tool_result", tool="shell", tool_id=tool_id, text=output, is_error=code not in (0, None),
                exit_code=code,
            ),
        ], bool(skill_name and f"skills/{skill_name}/" in command)  # fmt: skip
    if kind == "file_change":
        failed = item.get("status") not in ("completed", None)
        return [
            AgentEvent(
                kind="tool_use",
                tool="file_change",
                tool_id=tool_id,
                input={"changes": item.get("changes") or []},
            ),
            AgentEvent(kind="tool_result", tool="file_change", tool_id=tool_id, is_error=failed),
        ], False
    if kind == "mcp_tool_call":  # named as Claude Code names an MCP tool, as graders and policies do
        tool = f"mcp__{item.get('server')}__{item.get('tool')}"
        result, error = json_object(item.get("result")), json_object(item.get("error"))
        said = [str(c.get("text") or "") for c in result.get("content") or [] if isinstance(c, dict)]
        text = str(error.get("message") or "") if error else "".join(said)
        return [
            AgentEvent(kind="tool_use", tool=tool, tool_id=tool_id, input=json_object(item.get("arguments"))),
            AgentEvent(
                kind="tool_result", tool=tool, tool_id=tool_id, text=text[:4000],
                is_error=bool(error) or item.get("status") == "failed",
            ),
        ], False  # fmt: skip
    if kind == "error":
        return [AgentEvent(kind="error", text=str(item.get("message") or ""), is_error=True)], False
    return [], False


def _codex_end(failed: str | None, completed: bool, meta: JsonObject) -> tuple[str, str | None]:
    """The session's status and error, from how its last turn ended."""
    if failed is not None:
        with contextlib.suppress(json.JSONDecodeError, AttributeError):
            meta["api_error"] = json.loads(failed).get("error", {})
        return "api_error", failed
    if completed:
        return "success", None
    return "crashed", "no turn.completed event (the process died)"


def parse_codex(
    events: list[JsonObject], skill_name: str | None = None, forced: bool = False
) -> AgentSession:
    out: list[AgentEvent] = []
    meta: JsonObject = {}
    final = ""
    failed: str | None = None
    completed = False
    usage = {"input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0, "cache_write_input_tokens": 0}
    invoked = forced
    for e in events:
        kind = e.get("type")
        if kind == "thread.started":
            meta["session_id"] = e.get("thread_id")
            out.append(AgentEvent(kind="init", text="thread started"))
        elif kind == "item.completed":
            item = e.get("item") or {}
            taken, read_skill = _codex_item(item, skill_name)
            out += taken
            invoked = invoked or read_skill
            if item.get("type") == "agent_message":
                final = str(item.get("text") or "")
        elif kind == "error":
            out.append(AgentEvent(kind="error", text=str(e.get("message") or ""), is_error=True))
        elif kind == "turn.completed":
            completed = True
            u = e.get("usage") or {}
            # cached and cache-write tokens are parts of input_tokens (OpenAI's convention);
            # executors.agent.usage_of splits them out
            for name in usage:
                usage[name] += int(u.get(name) or 0)
        elif kind == "turn.failed":
            failed = str((e.get("error") or {}).get("message") or "turn failed")
    meta["usage"] = usage
    meta["num_turns"] = sum(1 for e in events if e.get("type") == "turn.started")
    status, error = _codex_end(failed, completed, meta)
    out.append(AgentEvent(kind="result", text=final, is_error=status != "success"))
    return AgentSession.ended(status, final, out, skill_invoked=invoked, meta=meta, error=error)
