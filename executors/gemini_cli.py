"""Gemini CLI headless: ``gemini -p --output-format stream-json --approval-mode yolo``.

The skill is installed at ``.gemini/skills/<name>/`` (it becomes an allowed name of the
``activate_skill`` tool) and its load is asked for in the sandbox's GEMINI.md context file (not in
trigger mode, ``force_skill`` False).
"""

from __future__ import annotations

import json
from pathlib import Path

from executors.agent import AgentExecutor
from executors.conversation import stand_ins
from executors.egress import GEMINI, PLACEHOLDER_KEY
from executors.installing import install_and_instruct
from executors.parsing import JsonObject
from executors.schema import AgentEvent, AgentRequest, AgentSession
from executors.support import GEMINI_SUPPORT

EXIT_TURN_LIMIT = 53
FORCE_SKILL = (
    "IMPORTANT: Before starting any work, you MUST first call the activate_skill tool with name "
    '"{name}" and follow the skill\'s instructions throughout your work.'
)


class GeminiCliExecutor(AgentExecutor):
    name = "gemini-cli"
    vendor = "google"
    binary = "gemini"
    default_model = "gemini-2.5-pro"
    provider = GEMINI
    skills_home = (".gemini", "skills")
    support = GEMINI_SUPPORT
    request_tokens = 10_000
    env_prefixes = ("GEMINI_CLI_",)

    @classmethod
    def invoked_skills(cls, event: AgentEvent) -> list[str]:
        """An ``activate_skill`` call names the skill in ``name``."""
        value = (event.input or {}).get("name") if event.tool == "activate_skill" else None
        return [value.strip().lstrip("/")] if isinstance(value, str) and value.strip() else []

    resumes = True  # a simulated user's answers as runs resuming the session (`gemini --resume`)
    serves_mcp = True  # settings.json's mcpServers; a tool is named mcp_<server>_<tool>

    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        settings_dir = Path(request.home) / ".gemini"
        settings_dir.mkdir(parents=True, exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "model": {"maxSessionTurns": request.max_turns},
        }
        if request.mcp:  # the case's stand-ins, trusted: no confirmation (yolo approves the rest)
            settings["mcpServers"] = stand_ins(request, trust=True)
        (settings_dir / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        install_and_instruct(request, self.skills_home, FORCE_SKILL, Path(request.sandbox) / "GEMINI.md")
        env = self.base_env(request) | {
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        env |= {"GOOGLE_GEMINI_BASE_URL": endpoint, "GEMINI_API_KEY": PLACEHOLDER_KEY}
        argv = [
            "-p",
            request.prompt,
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "-m",
            request.model,
        ]
        return argv, env

    def resume_argv(self, argv: list[str], session_id: str, message: str) -> list[str]:
        # `gemini --resume <session id> -p <message>`: the first run's `-p <prompt>` replaced
        return ["--resume", session_id, "-p", message, *argv[2:]]

    def parse(self, events: list[JsonObject], request: AgentRequest) -> AgentSession:
        return parse_gemini(events, request.skill_name)


def parse_gemini(events: list[JsonObject], skill_name: str | None = None) -> AgentSession:
    out: list[AgentEvent] = []
    meta: JsonObject = {}
    text_parts: list[str] = []
    final = ""  # the last run's text
    result: JsonObject | None = None
    invoked = False
    tools: dict[str, str] = {}
    for e in events:
        kind = e.get("type")
        if kind == "init":
            meta |= {"session_id": e.get("session_id"), "model": e.get("model")}
            out.append(AgentEvent(kind="init", text=f"model {e.get('model')}"))
        elif kind == "message" and e.get("role") == "assistant":
            text_parts.append(str(e.get("content") or ""))
        elif kind == "tool_use":
            name, params = e.get("tool_name"), e.get("parameters") or {}
            tools[str(e.get("tool_id"))] = str(name)
            if name == "activate_skill" and (skill_name is None or params.get("name") == skill_name):
                invoked = True
            out.append(AgentEvent(kind="tool_use", tool=name, tool_id=e.get("tool_id"), input=params))
        elif kind == "tool_result":
            err = e.get("error") or {}
            out.append(
                AgentEvent(
                    kind="tool_result",
                    tool=tools.get(str(e.get("tool_id"))),
                    tool_id=e.get("tool_id"),
                    text=str(e.get("output") or err.get("message") or "")[:4000],
                    is_error=e.get("status") == "error",
                )
            )
        elif kind == "error":
            out.append(AgentEvent(kind="error", text=str(e.get("message") or e), is_error=True))
        elif kind == "result":  # a run's end (a resumed session has one per turn): its text is whole
            result, final, text_parts = e, "".join(text_parts), []
            if final:
                out.append(AgentEvent(kind="text", text=final))
    if text_parts:  # a run that died before its result
        final = "".join(text_parts)
        out.append(AgentEvent(kind="text", text=final))
    seen = {"final_text": final, "skill_invoked": invoked, "meta": meta}
    if result is None:
        died = "no result event (the process died or hit the turn limit)"
        return AgentSession(ok=False, status="crashed", events=tuple(out), error=died, **seen)
    meta |= _gemini_stats(result.get("stats") or {})
    ok = result.get("status") == "success"
    error = None if ok else str((result.get("error") or {}).get("message") or "error")
    status = "success" if ok else ("api_error" if error and "API Error" in error else "error")
    out.append(AgentEvent(kind="result", text=final, is_error=not ok))
    return AgentSession(ok=ok, status=status, events=tuple(out), error=error, **seen)


def _gemini_stats(stats: JsonObject) -> JsonObject:
    """The result event's figures, as the session's meta holds them."""
    meta = {
        "usage": {
            "input_tokens": stats.get("input_tokens", 0),
            "output_tokens": stats.get("output_tokens", 0),
            "cached_input_tokens": stats.get("cached", 0),  # part of input_tokens
        },
        "duration_ms": stats.get("duration_ms"),
        "tool_calls": stats.get("tool_calls"),
    }
    if stats.get("models"):
        meta["model"] = next(iter(stats["models"]))
    return meta
