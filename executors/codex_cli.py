"""Codex CLI headless: ``codex exec --json`` with a config that keeps it quiet and local.

The skill is installed at ``.agents/skills/<name>/`` and its body injected by ``$<name>`` in the prompt
(Codex has no Skill tool and no skill event); in trigger mode (``force_skill`` False) only installed. Codex has no turn limit flag: ``max_turns`` is not
enforced by it, and the timeout bounds the session instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from executors.agent import AgentExecutor, install_plugin_skills, install_skill, skill_file_reads
from executors.egress import OPENAI, PLACEHOLDER_KEY
from executors.pricing import OPENAI_RATIOS
from executors.schema import AgentEvent, AgentRequest, AgentSession

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
    cache_ratios = OPENAI_RATIOS
    binary = "codex"
    default_model = "gpt-5.5"
    provider = OPENAI
    skills_home = (".agents", "skills")
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

    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        codex_home = Path(request.home) / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        provider = PROVIDER.format(base_url=endpoint)
        (codex_home / "config.toml").write_text(CONFIG.format(provider=provider), encoding="utf-8")
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

    def parse(self, events: list[dict[str, Any]], request: AgentRequest) -> AgentSession:
        forced = bool(request.skill_name and request.skill_dir and request.force_skill)
        return parse_codex(events, request.skill_name, forced=forced)


def parse_codex(
    events: list[dict[str, Any]], skill_name: str | None = None, forced: bool = False
) -> AgentSession:
    out: list[AgentEvent] = []
    meta: dict[str, Any] = {}
    final = ""
    failed: str | None = None
    completed = False
    usage = {"input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0, "cache_write_input_tokens": 0}
    invoked = forced
    for e in events:
        kind = e.get("type")
        item = e.get("item") or {}
        if kind == "thread.started":
            meta["session_id"] = e.get("thread_id")
            out.append(AgentEvent(kind="init", text="thread started"))
        elif kind == "item.completed" and item.get("type") == "agent_message":
            final = str(item.get("text") or "")
            out.append(AgentEvent(kind="text", text=final))
        elif kind == "item.completed" and item.get("type") == "command_execution":
            command = str(item.get("command") or "")
            if skill_name and f"skills/{skill_name}/" in command:
                invoked = True
            code = item.get("exit_code")
            out.append(
                AgentEvent(kind="tool_use", tool="shell", tool_id=item.get("id"), input={"command": command})
            )
            out.append(
                AgentEvent(
                    kind="tool_result",
                    tool="shell",
                    tool_id=item.get("id"),
                    text=str(item.get("aggregated_output") or "")[:4000],
                    is_error=code not in (0, None),
                    exit_code=code,
                )
            )
        elif kind == "item.completed" and item.get("type") == "file_change":
            changes = item.get("changes") or []
            out.append(
                AgentEvent(
                    kind="tool_use", tool="file_change", tool_id=item.get("id"), input={"changes": changes}
                )
            )
            out.append(
                AgentEvent(
                    kind="tool_result",
                    tool="file_change",
                    tool_id=item.get("id"),
                    is_error=item.get("status") not in ("completed", None),
                )
            )
        elif kind == "item.completed" and item.get("type") == "error":
            out.append(AgentEvent(kind="error", text=str(item.get("message") or ""), is_error=True))
        elif kind == "error":
            out.append(AgentEvent(kind="error", text=str(e.get("message") or ""), is_error=True))
        elif kind == "turn.completed":
            completed = True
            u = e.get("usage") or {}
            usage["input_tokens"] += int(u.get("input_tokens") or 0)
            usage["output_tokens"] += int(u.get("output_tokens") or 0)
            # Parts of input_tokens (OpenAI's convention); executors.agent.usage_of splits them out.
            usage["cached_input_tokens"] += int(u.get("cached_input_tokens") or 0)
            usage["cache_write_input_tokens"] += int(u.get("cache_write_input_tokens") or 0)
        elif kind == "turn.failed":
            failed = str((e.get("error") or {}).get("message") or "turn failed")
    meta["usage"] = usage
    meta["num_turns"] = sum(1 for e in events if e.get("type") == "turn.started")
    if failed is not None:
        status, error = "api_error", failed
        try:
            inner = json.loads(failed).get("error", {})
            meta["api_error"] = inner
        except (json.JSONDecodeError, AttributeError):
            pass
    elif completed:
        status, error = "success", None
    else:
        status, error = "crashed", "no turn.completed event (the process died)"
    out.append(AgentEvent(kind="result", text=final, is_error=status != "success"))
    return AgentSession(
        ok=status == "success",
        status=status,
        final_text=final,
        events=tuple(out),
        skills_listed=None,
        skill_invoked=invoked,
        meta=meta,
        error=error,
    )
