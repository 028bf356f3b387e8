"""Claude Code headless: ``claude -p --output-format stream-json`` with the seed's flags.

With the skill: installed at ``.claude/skills/<name>/`` in the sandbox, allowed as ``Skill(<name>)``,
and its load forced by an appended system prompt. Baseline: the Skill tool disallowed. Trigger mode
(``force_skill`` False): skills installed, the Skill tool kept, nothing forced.
"""

from __future__ import annotations

from typing import Any

from executors.agent import LOCAL_KEY, AgentExecutor, install_skill
from executors.schema import AgentEvent, AgentRequest, AgentSession

TOOLS = "Read,Edit,Bash,Grep,Glob,Write"
FORCE_SKILL = (
    'IMPORTANT: Before starting any work, you MUST first call the Skill tool with skill="{name}" to '
    "load the relevant skill instructions. Follow whatever instructions the skill provides throughout "
    "your work."
)
QUIET = {
    "IS_SANDBOX": "1",  # --dangerously-skip-permissions refuses to run as root without it
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_MAX_RETRIES": "1",
}


class ClaudeCodeExecutor(AgentExecutor):
    name = "claude"
    binary = "claude"
    default_model = "sonnet"

    def prepare(self, request: AgentRequest) -> tuple[list[str], dict[str, str]]:
        argv = [
            "-p",
            request.prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--model",
            request.model,
            "--max-turns",
            str(request.max_turns),
        ]
        appended = []
        installed = install_skill(request, ".claude", "skills")
        if not request.force_skill:  # trigger mode: listed, never forced, the Skill tool kept
            argv += ["--allowedTools", f"Skill,{TOOLS}"]
        elif installed:
            argv += ["--allowedTools", f"Skill({request.skill_name}),{TOOLS}"]
            appended.append(FORCE_SKILL.format(name=request.skill_name))
        else:
            argv += ["--allowedTools", TOOLS, "--disallowedTools", "Skill"]
        if request.system:
            appended.append(request.system)
        if appended:
            argv += ["--append-system-prompt", "\n\n".join(appended)]
        if request.tools is not None:
            argv += ["--tools", ",".join(request.tools)]
        if request.disallowed_tools:
            argv += ["--disallowedTools", ",".join(request.disallowed_tools)]
        env = dict(request.env) | self.base_env(request) | QUIET
        if self.settings.base_url:
            env["ANTHROPIC_BASE_URL"] = self.settings.base_url
            env.setdefault(
                "ANTHROPIC_API_KEY", LOCAL_KEY
            )  # a local server needs no key, the CLI insists on one
        return argv, env

    def parse(self, events: list[dict[str, Any]], request: AgentRequest) -> AgentSession:
        return parse_claude(events, request.skill_name)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def parse_claude(events: list[dict[str, Any]], skill_name: str | None = None) -> AgentSession:
    out: list[AgentEvent] = []
    skills: tuple[str, ...] | None = None
    meta: dict[str, Any] = {}
    result: dict[str, Any] | None = None
    invoked = False
    for e in events:
        kind = e.get("type")
        if kind == "system" and e.get("subtype") == "init":
            skills = tuple(e.get("skills") or ())
            meta |= {
                "session_id": e.get("session_id"),
                "model": e.get("model"),
                "cwd": e.get("cwd"),
                "tools": e.get("tools"),
                "cli_version": e.get("claude_code_version"),
            }
            out.append(AgentEvent(kind="init", text=f"model {e.get('model')}, {len(skills)} skills"))
        elif kind == "assistant":
            for block in (e.get("message") or {}).get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    out.append(AgentEvent(kind="text", text=block["text"]))
                elif block.get("type") == "tool_use":
                    name = block.get("name")
                    tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                    if name == "Skill" and (skill_name is None or tool_input.get("skill") == skill_name):
                        invoked = True
                    out.append(
                        AgentEvent(kind="tool_use", tool=name, tool_id=block.get("id"), input=tool_input)
                    )
        elif kind == "user":
            for block in (e.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(
                        AgentEvent(
                            kind="tool_result",
                            tool_id=block.get("tool_use_id"),
                            text=_text(block.get("content"))[:4000],
                            is_error=bool(block.get("is_error")),
                        )
                    )
        elif kind == "system" and e.get("subtype") == "api_retry":
            out.append(AgentEvent(kind="error", text=f"API retry: {e.get('error') or e}", is_error=True))
        elif kind == "result":
            result = e
    tool_names = {ev.tool_id: ev.tool for ev in out if ev.kind == "tool_use"}
    out = [
        ev.model_copy(update={"tool": tool_names.get(ev.tool_id)}) if ev.kind == "tool_result" else ev
        for ev in out
    ]
    if result is None:
        return AgentSession(
            ok=False,
            status="crashed",
            events=tuple(out),
            skills_listed=skills,
            skill_invoked=invoked,
            meta=meta,
            error="no result event (the process died)",
        )
    subtype = result.get("subtype")
    is_error = bool(result.get("is_error"))
    meta |= {
        k: result.get(k)
        for k in (
            "subtype",
            "is_error",
            "api_error_status",
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "stop_reason",
            "total_cost_usd",
            "usage",
            "permission_denials",
            "errors",
        )
    }
    if result.get("modelUsage"):
        meta["model"] = next(iter(result["modelUsage"]))
    if subtype == "success" and not is_error:
        status = "success"
    elif subtype == "error_max_turns":
        status = "max_turns"
    elif result.get("api_error_status") or (subtype == "success" and is_error):
        status = "api_error"
    else:
        status = "error"
    out.append(AgentEvent(kind="result", text=str(result.get("result") or ""), is_error=status != "success"))
    return AgentSession(
        ok=status == "success",
        status=status,
        final_text=str(result.get("result") or ""),
        events=tuple(out),
        skills_listed=skills,
        skill_invoked=invoked,
        meta=meta,
        error=None if status == "success" else str(result.get("result") or subtype),
    )
