"""GitHub Copilot CLI headless: ``copilot -p --output-format json --allow-all`` in offline mode, its
model reached through a bring-your-own-key provider (the forwarder, speaking Anthropic's API).

``COPILOT_OFFLINE=true`` keeps it off GitHub (no sign-in, telemetry, update or web tools); without
it the CLI spends seconds reaching api.github.com first. The skill is installed at
``.agents/skills/<name>/`` (a project folder Copilot searches; ``.github/`` is left to the agent's
work) and its load asked for in the user's custom instructions (``~/.copilot/copilot-instructions.md``,
not in trigger mode). A ``skill`` tool call loads a skill. The CLI has no turn limit: the timeout
bounds a session. It unpacks about 235 MB of its own files into ``$XDG_CACHE_HOME`` on first start:
that is done once per installed version outside any session (:func:`unpacked_cache`) and each
session reads it read-only.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path

from executors.agent import ADD_DIRS, AgentExecutor, find_binary, json_object, read_events, skill_file_reads
from executors.contents import copy_tree
from executors.conversation import stand_ins
from executors.egress import ANTHROPIC, PLACEHOLDER_KEY
from executors.installing import install_and_instruct
from executors.parsing import JsonObject
from executors.schema import AgentEvent, AgentRequest, AgentSession
from executors.support import COPILOT_SUPPORT
from executors.versions import installed_version

FORCE_SKILL = (
    'IMPORTANT: Before starting any work, you MUST first call the skill tool with skill="{name}" and '
    "follow the skill's instructions throughout your work."
)
QUIET = {
    "COPILOT_OFFLINE": "true",
    "COPILOT_AUTO_UPDATE": "false",
    "COPILOT_PROVIDER_TYPE": "anthropic",
    "USE_TGREP": "false",
}
#: The project folders Copilot CLI 1.0.102 discovers skills in.
SKILL_FOLDERS = (".agents/skills", ".github/skills", ".claude/skills")
#: Skills every Copilot CLI session lists of its own (1.0.102).
BUILTIN_SKILLS = frozenset({"customize-cloud-agent", "github-pr-media"})
UNPACK_TIMEOUT_S = 300
UNPACKED = ".unpacked"  # written once the CLI's files are in the cache
#: A usage record's counts, named as executors.agent.usage_of reads them.
USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cacheReadTokens": "cached_input_tokens",
    "cacheWriteTokens": "cache_write_input_tokens",
}


class CopilotCliExecutor(AgentExecutor):
    name = "copilot"
    vendor = "anthropic"
    binary = "copilot"
    default_model = "claude-sonnet-4-5"
    provider = ANTHROPIC
    skills_home = (".agents", "skills")
    support = COPILOT_SUPPORT
    builtin_skills = BUILTIN_SKILLS
    request_tokens = 13_000  # a ~23 KB system prompt and ~27 KB of tool definitions
    turn_limit = False

    @classmethod
    def invoked_skills(cls, event: AgentEvent) -> list[str]:
        """A ``skill`` call names the skill in ``skill``; ``view`` of a project skill's SKILL.md (its
        listing gives the location) or a ``bash`` command reading one loads it too."""
        data = event.input or {}
        if event.tool == "skill":
            value = data.get("skill")
            return [value.strip().lstrip("/")] if isinstance(value, str) and value.strip() else []
        if event.tool in ("view", "bash"):
            return skill_file_reads(str(data.get("path") or data.get("command") or ""), *SKILL_FOLDERS)
        return []

    def readable(self) -> tuple[Path, ...]:
        return (unpacked_cache(),)

    resumes = True  # a simulated user's answers as runs resuming the session (`--resume=<id>`)
    serves_mcp = True  # --additional-mcp-config

    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        instructions = Path(request.home) / ".copilot" / "copilot-instructions.md"
        install_and_instruct(request, self.skills_home, FORCE_SKILL, instructions)
        argv = [
            "-p",
            request.prompt,
            "--output-format",
            "json",
            "--allow-all",
            "--no-ask-user",
            "--no-color",
            "--disable-client-telemetry",
            "--session-id",
            session_id(request),
        ]
        for folder in request.add_dirs:  # a copy the session reads (read-only in the sandbox)
            copy = copy_tree(folder, Path(request.home) / ADD_DIRS / Path(folder).name, "add_dirs")
            argv += ["--add-dir", str(copy)]
        if request.mcp:  # the case's stand-ins, every tool of theirs enabled
            servers = stand_ins(request, type="local", tools=["*"])
            argv += ["--additional-mcp-config", json.dumps({"mcpServers": servers})]
        env = self.base_env(request) | QUIET
        env |= {
            "COPILOT_PROVIDER_BASE_URL": endpoint,
            "COPILOT_PROVIDER_API_KEY": PLACEHOLDER_KEY,
            "COPILOT_MODEL": request.model,
            "XDG_CACHE_HOME": str(unpacked_cache()),
        }
        return argv, env

    def resume_argv(self, argv: list[str], session_id: str, message: str) -> list[str]:
        # `copilot -p <message> --resume=<id>`: the first run's prompt and its --session-id replaced
        at = argv.index("--session-id")
        return ["-p", message, *argv[2:at], *argv[at + 2 :], f"--resume={session_id}"]

    def parse(self, events: list[JsonObject], request: AgentRequest) -> AgentSession:
        state = Path(request.home) / ".copilot" / "session-state" / session_id(request) / "events.jsonl"
        return parse_copilot(events, request.skill_name, read_events(state))


def session_id(request: AgentRequest) -> str:
    """The id the session is started with (``--session-id``), so its state folder is known after it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, request.raw_stream))


def unpacked_cache() -> Path:
    """The ``XDG_CACHE_HOME`` holding the installed CLI's unpacked files, beside its npm folder,
    unpacked on first use by the CLI's own ``--version`` (outside any session; nothing of a user's
    runs is there). Sessions bind it read-only: one session cannot change what the next one runs."""
    binary = find_binary(CopilotCliExecutor.binary)
    if binary is None:  # a session stops before this (executors.agent.AgentExecutor.problem)
        return Path.home() / ".cache" / "skillab-copilot-cache" / "missing"
    modules = next((p for p in Path(binary).absolute().parents if p.name == "node_modules"), None)
    base = (modules.parent if modules else Path.home() / ".cache") / "skillab-copilot-cache"
    cache = base / (installed_version(binary) or "unknown")
    if (cache / UNPACKED).exists():
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # sessions of other processes may start at the same time
        if not (cache / UNPACKED).exists():
            quiet = {k: QUIET[k] for k in ("COPILOT_OFFLINE", "COPILOT_AUTO_UPDATE")}
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(cache), "XDG_CACHE_HOME": str(cache)}
            done = subprocess.run(
                [binary, "--version"],
                capture_output=True,
                timeout=UNPACK_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                env=env | quiet,
                check=False,
            )
            if done.returncode == 0:
                (cache / UNPACKED).touch()
    return cache


def parse_copilot(
    events: list[JsonObject], skill_name: str | None = None, state: Sequence[JsonObject] = ()
) -> AgentSession:
    """The session from the ``--output-format json`` stream, with what only the CLI's own event log
    (``state``: ``session-state/<id>/events.jsonl``) holds: the version and the token counts."""
    out: list[AgentEvent] = []
    meta: JsonObject = {}
    listed: tuple[str, ...] | None = None
    result: JsonObject | None = None
    texts: list[str] = []
    errors: list[str] = []
    tools: dict[str, str] = {}
    called: list[str] = []
    invoked = False
    for e in events:
        kind, data = e.get("type"), json_object(e.get("data"))
        if kind == "session.skills_loaded":
            skills = [s for s in data.get("skills") or [] if isinstance(s, dict) and s.get("enabled", True)]
            listed = tuple(str(s.get("name")) for s in skills)
            out.append(AgentEvent(kind="init", text=f"{len(listed)} skills"))
        elif kind == "assistant.message":
            if data.get("content"):
                texts.append(str(data["content"]))
                out.append(AgentEvent(kind="text", text=str(data["content"])))
            meta["model"] = data.get("model") or meta.get("model")
        elif kind == "tool.execution_start":
            name = str(data.get("toolName") or "")
            args = json_object(data.get("arguments"))
            tools[str(data.get("toolCallId"))] = name
            event = AgentEvent(kind="tool_use", tool=name, tool_id=data.get("toolCallId"), input=args)
            for skill in CopilotCliExecutor.invoked_skills(event):
                called.append(skill)
                invoked = invoked or skill_name is None or skill == skill_name
            out.append(event)
        elif kind == "tool.execution_complete":
            out.append(_copilot_result(data, tools))
        elif kind == "session.error":
            errors.append(str(data.get("message") or data.get("errorType") or "error"))
            meta["api_error_status"] = data.get("statusCode")
            out.append(AgentEvent(kind="error", text=errors[-1], is_error=True))
        elif kind == "result":
            result = e
    meta["skills_invoked"] = list(dict.fromkeys(called))
    meta |= state_meta(state)
    final = texts[-1] if texts else ""
    seen = {"final_text": final, "skills_listed": listed, "skill_invoked": invoked, "meta": meta}
    if result is None:
        return AgentSession(
            ok=False, status="crashed", events=tuple(out), error="no result event (the process died)", **seen
        )
    usage = json_object(result.get("usage"))
    meta |= {"session_id": result.get("sessionId"), "duration_ms": usage.get("sessionDurationMs")}
    ok = result.get("exitCode") == 0 and not errors
    status = "success" if ok else ("api_error" if meta.get("api_error_status") else "error")
    out.append(AgentEvent(kind="result", text=final, is_error=not ok))
    error = None if ok else ("; ".join(errors) or f"exit code {result.get('exitCode')}")
    return AgentSession(ok=ok, status=status, events=tuple(out), error=error, **seen)


def _copilot_result(data: JsonObject, tools: dict[str, str]) -> AgentEvent:
    """A finished tool call: its result's content, or its error's message."""
    ok = bool(data.get("success"))
    body = data.get("result") if ok else data.get("error")
    text = str((body or {}).get("content" if ok else "message") or "") if isinstance(body, dict) else ""
    call = data.get("toolCallId")
    return AgentEvent(
        kind="tool_result", tool=tools.get(str(call)), tool_id=call, text=text[:4000], is_error=not ok
    )


def state_meta(state: Sequence[JsonObject]) -> JsonObject:
    """The CLI's version and the session's summed token counts from its own event log. Its input
    count includes cache reads and writes whatever the provider's convention (measured on 1.0.102
    against an Anthropic server), as the Codex and Gemini parsers' counts do."""
    meta: JsonObject = {}
    usage = dict.fromkeys(USAGE_KEYS.values(), 0)
    for e in state:
        data = json_object(e.get("data"))
        record = json_object(data.get("usage"))
        if e.get("type") == "session.start":
            meta["cli_version"] = data.get("copilotVersion")
        elif e.get("type") == "session.usage_record":
            for source, key in USAGE_KEYS.items():
                usage[key] += int(record.get(source) or 0)
    if any(usage.values()):
        meta["usage"] = usage
    return meta
