"""Claude Code headless: ``claude -p --output-format stream-json`` with the seed's flags.

With the skill: installed at ``.claude/skills/<name>/`` in the sandbox, allowed as ``Skill(<name>)``,
and its load forced by an appended system prompt. Baseline: the Skill tool disallowed. Trigger mode
(``force_skill`` False): skills installed, the Skill tool kept, nothing forced. A plugin
(``plugin_dir``): a copy loaded with ``--plugin-dir``, its parts listed, nothing forced. ``--model``
is always passed: the CLI's default alias resolves to a different model from release to release.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from executors.agent import ADD_DIRS, AgentExecutor, talks
from executors.case_env import case_env
from executors.contents import copy_file, copy_tree
from executors.conversation import STAND_INS, stand_ins
from executors.egress import ANTHROPIC, PLACEHOLDER_KEY
from executors.installing import install_skill, plugin_copy
from executors.listing import claude_budget
from executors.parsing import JsonObject
from executors.plugin import prepared_copy, read_plugin
from executors.schema import ENVIRONMENT_PARTS, AgentEvent, AgentRequest, AgentSession, SkillListing
from executors.support import CLAUDE_SUPPORT
from executors.versions import CLAUDE_BUILTIN_SKILLS

TOOLS = "Read,Edit,Bash,Grep,Glob,Write"
SKILL_KEYS = ("skill", "command", "name")
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
    vendor = "anthropic"
    binary = "claude"
    default_model = "sonnet"
    provider = ANTHROPIC
    skills_home = (".claude", "skills")
    support = CLAUDE_SUPPORT
    builtin_skills = CLAUDE_BUILTIN_SKILLS
    request_tokens = 30_000  # measured at 115 KB a request
    model_aliases: ClassVar[dict[str, str]] = {
        "sonnet": "claude-sonnet-4",
        "opus": "claude-opus-4",
        "haiku": "claude-haiku-4",
    }
    loads_plugins = True
    converses = True  # stream-json input, and permission prompts on it (--permission-prompt-tool stdio)
    serves_mcp = True  # --mcp-config --strict-mcp-config
    # plugin-dir: 2.1.197 (the oldest release run here) loads a plugin folder with --plugin-dir and
    # lists its parts in the init event. plugin-eval: ``claude plugin eval`` (absent from 2.1.197).
    # resume-file: resuming from a session file's path (not an id), as `claude plugin eval` does with
    # a case's history_file; checked live on 2.1.330, assumed from 2.1.269 where that command is.
    features: ClassVar[dict[str, tuple[str, str]]] = {
        "plugin-dir": ("2.1.197", "loading a plugin folder (--plugin-dir)"),
        "plugin-eval": ("2.1.269", "`claude plugin eval` suites"),
        "resume-file": ("2.1.269", "resuming a recorded session (a case's context.history_file)"),
    }
    env_prefixes = ("CLAUDE_CODE_", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_")

    @classmethod
    def invoked_skills(cls, event: AgentEvent) -> list[str]:
        """A ``Skill`` call names the skill in ``skill`` (2.1.x), ``command`` or ``name``; ``plugin:name``
        and a leading ``/`` are kept, for the trigger grader to match against the listing."""
        data = event.input or {}
        if event.tool != "Skill":
            return []
        value = next((data[k] for k in SKILL_KEYS if isinstance(data.get(k), str) and data[k].strip()), None)
        return [value.strip().lstrip("/")] if value else []

    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        talking = talks(request)
        # with a conversation, the prompt is its first message on the input, and every permission
        # prompt (AskUserQuestion's too) comes to skillab as a control request: nothing bypassed
        talk = [
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            "default",
        ]
        argv = ["-p", *(talk if talking else [request.prompt, "--dangerously-skip-permissions"])]
        argv += ["--output-format", "stream-json", "--verbose", "--model", request.model]
        argv += ["--max-turns", str(request.max_turns)]
        # pre-approved tools skip the prompts a policy answers: a conversation approves the Skill alone
        tools = "" if talking else f",{TOOLS}"
        appended = []
        for loaded in install_environment(request):
            argv += ["--plugin-dir", str(loaded)]
        installed = install_skill(request, *self.skills_home)
        plugin = plugin_copy(request)
        if plugin is not None:  # loaded for this session only, through the CLI's own mechanism
            argv += ["--plugin-dir", str(plugin)]
        if not request.force_skill or (plugin is not None and not installed):
            # trigger mode, or a whole plugin: its parts listed, nothing forced, the Skill tool kept
            argv += ["--allowedTools", f"Skill{tools}"]
        elif installed:
            argv += ["--allowedTools", f"Skill({request.skill_name}){tools}"]
            appended.append(FORCE_SKILL.format(name=request.skill_name))
        else:
            argv += [*(["--allowedTools", TOOLS] if not talking else []), "--disallowedTools", "Skill"]
        if request.system:
            appended.append(request.system)
        if appended:
            argv += ["--append-system-prompt", "\n\n".join(appended)]
        if request.tools is not None:
            argv += ["--tools", ",".join(request.tools)]
        if request.disallowed_tools:
            argv += ["--disallowedTools", ",".join(request.disallowed_tools)]
        if request.mcp:  # the case's MCP servers as stand-ins, and no other server of any config
            config = Path(request.home) / STAND_INS / "config.json"
            config.write_text(json.dumps({"mcpServers": stand_ins(request)}), encoding="utf-8")
            argv += ["--mcp-config", str(config), "--strict-mcp-config"]
        for folder in request.add_dirs:  # a copy the session reads (read-only in the sandbox)
            copy = copy_tree(folder, Path(request.home) / ADD_DIRS / Path(folder).name, "add_dirs")
            argv += ["--add-dir", str(copy)]
        if request.resume:  # a copy in the session's HOME: resuming appends to the file it reads
            copy = Path(request.home) / "skillab-history" / Path(request.resume).name
            copy_file(request.resume, copy, "history file")
            argv += ["--resume", str(copy)]
        # A case's env holds only what executors.case_env allows (checked at load, and again here).
        env = case_env(request.env) | self.base_env(request) | QUIET
        env |= {"ANTHROPIC_BASE_URL": endpoint, "ANTHROPIC_API_KEY": PLACEHOLDER_KEY}
        if self.settings.base_url:
            # A local server serves the model asked for: subagents (a plugin's agents too) use it
            # rather than a default of the CLI's that the server may not know.
            env["CLAUDE_CODE_SUBAGENT_MODEL"] = request.model
        return argv, env

    def budgeted(self, listing: SkillListing, session: AgentSession, request: AgentRequest) -> SkillListing:
        fraction = budget_fraction(Path(request.home), Path(request.sandbox))
        window = session.meta.context_window
        return listing.model_copy(update={"budget": claude_budget(window, fraction), "window": window})

    def parse(self, events: list[JsonObject], request: AgentRequest) -> AgentSession:
        if request.plugin_dir:
            plugin = read_plugin(Path(request.plugin_dir))
            return parse_claude(events, plugin=plugin.name, plugin_skills=plugin.skills)
        return parse_claude(events, request.skill_name)


def install_environment(request: AgentRequest) -> list[Path]:
    """The request's environment snapshot put in place: its home/ copied into HOME, project/ into the
    working folder, minus any skill the request installs itself (the version under test replaces the
    installed one) or leaves out; its plugins copied for --plugin-dir, MCP servers left out, one of the same name as
    the plugin under test left out. Returns the plugin copies."""
    if not request.environment:
        return []
    root = Path(request.environment)
    home, project, plugins = (root / part for part in ENVIRONMENT_PARTS)
    for part, into in ((home, request.home), (project, request.sandbox)):
        if part.is_dir():
            copy_tree(part, into, "environment")
    own = {s.name for s in request.skills} | ({request.skill_name} if request.skill_name else set())
    own |= set(request.environment_skip)
    for base in (Path(request.home), Path(request.sandbox)):
        for name in own:
            shutil.rmtree(base / ".claude" / "skills" / name, ignore_errors=True)
    under_test = read_plugin(Path(request.plugin_dir)).name if request.plugin_dir else None
    folders = sorted(p for p in plugins.iterdir() if p.name != under_test) if plugins.is_dir() else []
    dest = Path(request.home) / "skillab-environment-plugins"
    return [prepared_copy(folder, dest / folder.name, mcp=False) for folder in folders]


def budget_fraction(home: Path, project: Path) -> float | None:
    """``skillListingBudgetFraction`` as the user's and the project's ``.claude/settings.json`` set
    it (the project's, read last, wins as in the CLI); None when neither sets a share in (0, 1]."""
    fraction = None
    for root in (home, project):
        value = read_settings(root / ".claude" / "settings.json").get("skillListingBudgetFraction")
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
            fraction = float(value)
    return fraction


def read_settings(path: Path) -> JsonObject:
    """A settings.json of the session's as a mapping ({} when absent or not one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def under_test(
    called: str, skill_name: str | None, plugin: str | None, plugin_skills: tuple[str, ...]
) -> bool:
    """Whether a Skill call naming ``called`` loaded the artifact under test: ``skill_name`` (any
    skill when None), or with ``plugin`` one of its skills, by either name the CLI accepts
    (``greeting-style`` or ``greet-plugin:greeting-style``)."""
    name = called.strip().lstrip("/")
    if plugin is not None:
        if name.startswith(f"{plugin}:"):
            return True
        return name in plugin_skills
    return skill_name is None or name == skill_name


#: What a result event says of the session, kept in its meta.
RESULT_FIELDS = (
    "subtype", "is_error", "api_error_status", "duration_ms", "duration_api_ms", "num_turns",
    "stop_reason", "total_cost_usd", "usage", "permission_denials", "errors",
)  # fmt: skip


@dataclass
class _ClaudeStream:
    """What a Claude Code stream said so far (see :func:`parse_claude`)."""

    skill_name: str | None
    plugin: str | None
    plugin_skills: tuple[str, ...]
    out: list[AgentEvent] = field(default_factory=list)
    skills: tuple[str, ...] | None = None
    meta: JsonObject = field(default_factory=dict)
    result: JsonObject | None = None
    invoked: bool = False
    called: list[str] = field(default_factory=list)
    answered_as: list[str] = field(default_factory=list)  # the model ids the API's responses named

    def take(self, e: JsonObject) -> None:
        kind = e.get("type")
        if kind == "system" and e.get("subtype") == "init":
            self._init(e)
        elif kind == "assistant":
            message = e.get("message") or {}
            if isinstance(model := message.get("model"), str) and model and model not in self.answered_as:
                self.answered_as.append(model)
            for block in message.get("content") or []:
                self._assistant(block)
        elif kind == "user":
            for block in (e.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = _text(block.get("content"))[:4000]
                    is_error = bool(block.get("is_error"))
                    self.out.append(
                        AgentEvent(
                            kind="tool_result", tool_id=block.get("tool_use_id"), text=text, is_error=is_error
                        )
                    )
        elif kind == "system" and e.get("subtype") == "api_retry":
            self.out.append(AgentEvent(kind="error", text=f"API retry: {e.get('error') or e}", is_error=True))
        elif kind == "result":
            self.result = e

    def _init(self, e: JsonObject) -> None:
        self.skills = tuple(e.get("skills") or ())
        self.meta |= {
            "session_id": e.get("session_id"),
            "model": e.get("model"),
            "cwd": e.get("cwd"),
            "tools": e.get("tools"),
            "cli_version": e.get("claude_code_version"),
            "plugins": [str(p.get("name")) for p in e.get("plugins") or [] if isinstance(p, dict)],
            "mcp_servers": [str(m.get("name")) for m in e.get("mcp_servers") or [] if isinstance(m, dict)],
        }
        self.out.append(AgentEvent(kind="init", text=f"model {e.get('model')}, {len(self.skills)} skills"))

    def _assistant(self, block: JsonObject) -> None:
        if block.get("type") == "text" and block.get("text"):
            self.out.append(AgentEvent(kind="text", text=block["text"]))
        elif block.get("type") == "tool_use":
            name = block.get("name")
            tool_input: JsonObject = block["input"] if isinstance(block.get("input"), dict) else {}
            called = str(tool_input.get("skill") or "")
            if name == "Skill" and called:
                self.called.append(called)
                self.invoked = self.invoked or under_test(
                    called, self.skill_name, self.plugin, self.plugin_skills
                )
            self.out.append(AgentEvent(kind="tool_use", tool=name, tool_id=block.get("id"), input=tool_input))

    def session(self) -> AgentSession:
        self.meta["skills_invoked"] = list(dict.fromkeys(self.called))
        tool_names = {ev.tool_id: ev.tool for ev in self.out if ev.kind == "tool_use"}
        out = [
            ev.model_copy(update={"tool": tool_names.get(ev.tool_id)}) if ev.kind == "tool_result" else ev
            for ev in self.out
        ]
        seen = {
            "events": tuple(out),
            "skills_listed": self.skills,
            "skill_invoked": self.invoked,
            "meta": self.meta,
        }
        result = self.result
        if result is None:
            return AgentSession(
                ok=False, status="crashed", error="no result event (the process died)", **seen
            )
        self.meta |= {k: result.get(k) for k in RESULT_FIELDS}
        usage = result.get("modelUsage")
        if isinstance(usage, dict) and usage:
            self.meta["model"] = next(iter(usage))
            first = next(iter(usage.values()))
            if isinstance(first, dict) and isinstance(first.get("contextWindow"), int):
                self.meta["context_window"] = first["contextWindow"]
        if self.answered_as:  # what answered, not the name the CLI asked by (an alias moves)
            self.meta["model"] = self.answered_as[0]
        status = _result_status(result)
        text = str(result.get("result") or "")
        seen["events"] = (*out, AgentEvent(kind="result", text=text, is_error=status != "success"))
        error = None if status == "success" else str(result.get("result") or result.get("subtype"))
        return AgentSession(ok=status == "success", status=status, final_text=text, error=error, **seen)


def _result_status(result: JsonObject) -> str:
    subtype, is_error = result.get("subtype"), bool(result.get("is_error"))
    if subtype == "success" and not is_error:
        return "success"
    if subtype == "error_max_turns":
        return "max_turns"
    if result.get("api_error_status") or (subtype == "success" and is_error):
        return "api_error"
    return "error"


def parse_claude(
    events: list[JsonObject],
    skill_name: str | None = None,
    plugin: str | None = None,
    plugin_skills: tuple[str, ...] = (),
) -> AgentSession:
    """The session; ``skill_invoked`` when a Skill call loaded the artifact under test (see
    :func:`under_test`); ``meta["skills_invoked"]`` every skill a Skill call named, in order."""
    stream = _ClaudeStream(skill_name, plugin, plugin_skills)
    for e in events:
        stream.take(e)
    return stream.session()
