"""OpenCode headless: ``opencode run --format json``, its model an OpenAI-compatible provider (the
forwarder) declared in the session's own global config, every permission allowed but leaving the
sandbox, asking questions and fetching the web.

The skill is installed at ``.opencode/skills/<name>/`` and its load asked for in the global rules
file (``~/.config/opencode/AGENTS.md``, not in trigger mode); a ``skill`` tool call loads a skill.
OpenCode quotes a prompt word that holds a space, so the prompt goes in on stdin. Its step limit
(``agent.build.steps``) only asks the model to stop: the timeout bounds a session, and a busy
session ignores SIGTERM (the process group is killed). Its ``skill``, ``grep`` and ``glob`` tools run
ripgrep, which must be on PATH (offline, OpenCode cannot download its own).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from executors.agent import AgentExecutor, json_object, skill_file_reads
from executors.conversation import stand_ins
from executors.egress import OPENAI, PLACEHOLDER_KEY
from executors.installing import install_and_instruct
from executors.parsing import JsonObject
from executors.schema import AgentEvent, AgentRequest, AgentSession
from executors.support import OPENCODE_SUPPORT

FORCE_SKILL = (
    'IMPORTANT: Before starting any work, you MUST first call the skill tool with name "{name}" and '
    "follow the skill's instructions throughout your work."
)
PROVIDER = "skillab"
QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",  # no ~/.claude or project CLAUDE.md of anyone's
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_PURE": "1",  # no plugin of any config or folder runs inside the process writing the stream
    "npm_config_offline": "true",  # its background install of its own npm packages
}
BUILTIN_SKILLS = frozenset({"customize-opencode"})


class OpenCodeExecutor(AgentExecutor):
    name = "opencode"
    vendor = "openai"
    binary = "opencode"
    default_model = "gpt-4.1"
    provider = OPENAI
    skills_home = (".opencode", "skills")
    support = OPENCODE_SUPPORT
    builtin_skills = BUILTIN_SKILLS
    request_tokens = 5_000  # a ~10 KB system prompt and ten tool definitions
    turn_limit = False
    prompt_on_stdin = True

    @classmethod
    def invoked_skills(cls, event: AgentEvent) -> list[str]:
        """A ``skill`` call names the skill in ``name``; ``read`` of a skill's SKILL.md (its listing
        gives the location) or a ``bash`` command reading one loads it too."""
        data = event.input or {}
        if event.tool == "skill":
            value = data.get("name")
            return [value.strip().lstrip("/")] if isinstance(value, str) and value.strip() else []
        if event.tool in ("read", "bash"):
            return skill_file_reads(
                str(data.get("filePath") or data.get("command") or ""), ".opencode/skills"
            )
        return []

    def problem(self) -> str | None:
        if shutil.which("rg") is None:
            return "opencode needs ripgrep (rg) on PATH for its skill, grep and glob tools: apt-get install ripgrep"
        return super().problem()

    resumes = True  # a simulated user's answers as runs continuing the session (`run --session`)
    serves_mcp = True  # opencode.json's mcp; a tool is named <server>_<tool>

    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        config_dir = Path(request.home) / ".config" / "opencode"
        config_dir.mkdir(parents=True, exist_ok=True)
        model = {"name": request.model, "limit": {"context": 128_000, "output": 8_192}}
        config = {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "skillab",
                    "options": {"baseURL": endpoint, "apiKey": PLACEHOLDER_KEY},
                    "models": {request.model: model},
                }
            },
            "model": f"{PROVIDER}/{request.model}",
            "small_model": f"{PROVIDER}/{request.model}",
            "enabled_providers": [PROVIDER],
            "autoupdate": False,
            "share": "disabled",
            "lsp": False,
            "formatter": False,
            "permission": {
                "*": "allow",
                "external_directory": "deny",
                "question": "deny",
                "webfetch": "deny",
            },
            "agent": {"build": {"steps": request.max_turns}},
        }
        if request.mcp:  # the case's stand-ins (a local server's command is one list)
            servers = stand_ins(request).items()
            config["mcp"] = {n: {"type": "local", "command": [s["command"], *s["args"]]} for n, s in servers}
        (config_dir / "opencode.json").write_text(json.dumps(config), encoding="utf-8")
        install_and_instruct(request, self.skills_home, FORCE_SKILL, config_dir / "AGENTS.md")
        env = self.base_env(request) | QUIET
        # --title: no extra request for a session title
        return ["run", "--format", "json", "--title", "skillab"], env

    def resume_argv(self, argv: list[str], session_id: str, message: str) -> list[str]:
        # `opencode run --session <id>`, the message on stdin as every prompt is
        return [*argv, "--session", session_id]

    def parse(self, events: list[JsonObject], request: AgentRequest) -> AgentSession:
        return parse_opencode(events, request.skill_name)


def parse_opencode(events: list[JsonObject], skill_name: str | None = None) -> AgentSession:
    """The session from the ``--format json`` stream: steps (one per model call), the text and tool
    parts each finished, the token counts of each step, and errors. It has no closing event: a
    session ended well when its last step stopped (not at a tool call) with no error."""
    out: list[AgentEvent] = []
    meta: JsonObject = {}
    usage = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    step_text: list[str] = []
    final = ""
    reason: str | None = None
    errors: list[str] = []
    called: list[str] = []
    invoked = False
    steps = 0
    for e in events:
        kind, part = e.get("type"), json_object(e.get("part"))
        meta.setdefault("session_id", e.get("sessionID"))
        if kind == "step_start":
            steps += 1
            step_text = []
        elif kind == "text" and part.get("text"):
            step_text.append(str(part["text"]))
            out.append(AgentEvent(kind="text", text=str(part["text"])))
        elif kind == "tool_use":
            use, result = _tool_part(part)
            for skill in OpenCodeExecutor.invoked_skills(use):
                called.append(skill)
                invoked = invoked or skill_name is None or skill == skill_name
            out += [use, result]
        elif kind == "step_finish":
            reason = str(part.get("reason") or "")
            _add_tokens(usage, json_object(part.get("tokens")))
            if reason == "stop":
                final = "".join(step_text)
        elif kind == "error":
            error = json_object(e.get("error"))
            data = json_object(error.get("data"))
            errors.append(f"{error.get('name') or 'error'}: {data.get('message') or error}")
            meta["api_error_status"] = data.get("statusCode")
            out.append(AgentEvent(kind="error", text=errors[-1], is_error=True))
    meta |= {"usage": usage, "num_turns": steps, "skills_invoked": list(dict.fromkeys(called))}
    status, error_text = _opencode_end(errors, reason, steps, meta)
    if status == "success":
        out.append(AgentEvent(kind="result", text=final))
    return AgentSession.ended(status, final, out, skill_invoked=invoked, meta=meta, error=error_text)


def _tool_part(part: JsonObject) -> tuple[AgentEvent, AgentEvent]:
    """A finished tool part as its call and its result (OpenCode reports both in one)."""
    state = json_object(part.get("state"))
    name, call_id = str(part.get("tool") or ""), part.get("callID")
    use = AgentEvent(kind="tool_use", tool=name, tool_id=call_id, input=json_object(state.get("input")))
    failed = state.get("status") == "error"
    text = str(state.get("error") if failed else state.get("output") or "")
    return use, AgentEvent(kind="tool_result", tool=name, tool_id=call_id, text=text[:4000], is_error=failed)


def _add_tokens(usage: dict[str, int], tokens: JsonObject) -> None:
    """A finished step's token counts added to the session's."""
    cache = json_object(tokens.get("cache"))
    usage["input_tokens"] += int(tokens.get("input") or 0)  # without cache reads, as Anthropic's
    usage["output_tokens"] += int(tokens.get("output") or 0) + int(tokens.get("reasoning") or 0)
    usage["cache_read_input_tokens"] += int(cache.get("read") or 0)
    usage["cache_creation_input_tokens"] += int(cache.get("write") or 0)


def _opencode_end(
    errors: list[str], reason: str | None, steps: int, meta: JsonObject
) -> tuple[str, str | None]:
    """The session's status and error: it ended well when its last step stopped with no error."""
    if not errors and reason == "stop":
        return "success", None
    if errors:
        status = "api_error" if meta.get("api_error_status") or "APIError" in errors[-1] else "error"
        return status, "; ".join(errors)
    # the loop stopped at a tool call: a rejected permission, or the process died
    if steps:
        return "error", "the session ended without a final answer"
    return "crashed", "no step (the process died)"
