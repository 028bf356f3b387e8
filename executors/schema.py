"""Data that crosses the executor boundary. Frozen so it is safe across threads and hashes stably."""

from __future__ import annotations

import fnmatch
import json
import re
import unicodedata
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from executors.errors import ErrorKind, warn
from executors.parsing import JsonObject
from executors.sandbox import Isolation


def control_character(value: str) -> str | None:
    """The first control character in ``value``, if any: a line break included, and the invisible
    format characters (bidirectional overrides, zero-width ones) that reorder or hide text."""
    return next(
        (
            c
            for c in value
            if ord(c) < 32 or 127 <= ord(c) < 160 or unicodedata.category(c) in ("Cf", "Zl", "Zp")
        ),
        None,
    )


def terminal(text: str) -> str:
    """``text`` safe to print on a terminal: every control character (an escape sequence's ESC, a
    carriage return, a line break) shown as its escape, so text a model wrote can neither move the
    cursor, recolour the screen nor forge a line of skillab's own."""
    return "".join(c if control_character(c) is None else repr(c)[1:-1] for c in text)


def one_line(value: str) -> str:
    """A name shown in reports (a case, a grader, a task, a skill): one line, no control characters,
    so it cannot open a section, a row or a script in report.md, JUnit or a GitHub summary."""
    bad = control_character(value)
    if bad is not None:
        raise ValueError(f"must be one line without control characters (found {bad!r})")
    return value


#: A str validated by :func:`one_line`.
OneLine = Annotated[str, AfterValidator(one_line)]


class Frozen(BaseModel):
    """The base of data that crosses a boundary: immutable, hashable, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class RunRequest(Frozen):
    """One call to a model: everything that determines its answer (and nothing secret)."""

    executor: str = Field(description="registry name of the executor, e.g. 'openai'")
    model: str = Field(description="model id as the provider knows it")
    system: str | None = Field(default=None, description="the artifact under test, as system prompt")
    prompt: str = Field(description="the user prompt, context already appended")
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    response_schema: str | None = Field(
        default=None, description="JSON schema (as JSON text) for structured output, when wanted"
    )

    def sampling(self, max_tokens: str) -> dict[str, float | int]:
        """The sampling settings the request sets, under a provider's name for the output limit."""
        given = {"temperature": self.temperature, max_tokens: self.max_tokens, "seed": self.seed}
        return {k: v for k, v in given.items() if v is not None}


def not_negative(value: Any, info: ValidationInfo) -> Any:
    """A server's negative token count or cost is clamped at zero, with a warning: a negative total
    would keep --budget-usd from ever triggering."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        warn(f"the server reported {info.field_name} = {value}; counted as 0")
        return type(value)(0)
    return value


class Usage(Frozen):
    """Token counts of one call, with one meaning for every provider.

    The prompt is split by how it is billed, so the three prompt fields add up to the whole prompt:
    ``input_tokens`` is the *uncached* part (full input price), ``cache_write_tokens`` the part written
    to the provider's prompt cache (Anthropic bills it above the input price), ``cache_read_tokens``
    the part served from the cache (a fraction of the input price). Providers that count cached
    tokens inside the prompt total (OpenAI, Gemini, Codex) are converted at the boundary.
    A server reporting a negative count gets zero and a warning: a count cannot be negative.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    @field_validator("*", mode="before")
    @classmethod
    def _not_negative(cls, value: Any, info: ValidationInfo) -> Any:
        return 0 if value is None else not_negative(value, info)

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt, cached or not."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    _clamped = field_validator("input_tokens", "output_tokens", mode="before")(not_negative)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


class SessionStatus(StrEnum):
    """How an agent session ended."""

    SUCCESS = "success"
    ERROR = "error"  # the CLI reported an error of its own
    API_ERROR = "api_error"  # the model endpoint failed
    MAX_TURNS = "max_turns"
    TIMEOUT = "timeout"  # killed at the session's time limit
    CRASHED = "crashed"  # exited non-zero or without a result
    FLOOD = "flood"  # printed past the output cap and was killed


class RunResult(Frozen):
    """What one call produced. A failed call is data too: ``ok`` False with its error and cause."""

    ok: bool
    output: str = ""
    usage: Usage = Usage()
    cost_usd: float = Field(default=0.0, allow_inf_nan=False)
    latency_ms: float = 0.0
    model: str = ""
    error: str | None = None
    error_kind: ErrorKind | SessionStatus | None = Field(
        default=None, description="why the call failed (an agent session: how it ended)"
    )
    attempts: int = 1
    cached: bool = False
    cache_error: str | None = Field(
        default=None, description="why the result could not be cached (it is kept all the same)"
    )
    price_multiplier: float = Field(
        default=1.0, description="what the provider charges of the list price: 0.5 for a batch API result"
    )
    tools: tuple[str, ...] = Field(
        default=(), description="sample mode through an agent CLI: the tools the CLI offered the session"
    )

    _clamped = field_validator("cost_usd", mode="before")(not_negative)


class Session(Frozen):
    """The base of an agent session's parts: built at first use, not at import (~12 ms of every
    command before its first call; a sample run never builds them). pydantic from 2.14 builds a
    deferred model under a lock: sessions in threads may first use one at once."""

    model_config = ConfigDict(defer_build=True)


class InstalledSkill(Session):
    """A skill copied into the sandbox under ``name``, the name the CLI lists it by."""

    name: str = Field(description="folder name, which is the name the CLI lists")
    path: str = Field(description="folder holding SKILL.md")

    @field_validator("name")
    @classmethod
    def _one_folder(cls, name: str) -> str:
        if name in ("", ".", "..") or any(c in name for c in "/\\\0"):
            raise ValueError(f"a skill name must be a plain folder name, got {name!r}")
        return one_line(name)


#: The parts of an environment snapshot (flows/inputs/environment.py): copied over the session's
#: HOME and working folder, and plugin folders loaded beside them.
ENVIRONMENT_PARTS = ("home", "project", "plugins")


# ---------------------------------------------------------------- sessions that talk to the world


Decision = Literal["allow", "deny", "ask"]
#: How much of an agent's question (or a tool call's input) a case's patterns are matched against:
#: the agent writes it, so a pattern that backtracks badly meets a bounded text.
MATCHED_CHARS = 4000


def _regex(value: str, what: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{what}: not a regular expression ({exc})") from None
    return value


class Reply(Session):
    """What the user says to a question that matches ``when`` (a regular expression, any case)."""

    when: str
    say: str

    @model_validator(mode="after")
    def _valid(self) -> Reply:
        _regex(self.when, "when")
        return self


class SimulatedUser(Session):
    """Who the agent talks to: what they want, the facts only they hold (a fact is told when a
    question names its key), scripted replies (first match wins), what they say otherwise, and
    how many times they answer before they leave."""

    persona: str = ""
    goal: str = ""
    facts: dict[str, str] = Field(default_factory=dict)
    replies: tuple[Reply, ...] = ()
    default: str = "I don't know; decide yourself."
    turns: int = Field(default=3, ge=1, le=50, description="the most answers the user gives")
    satisfied: str | None = Field(default=None, description="when the user is satisfied (for the judge)")
    model: str | None = Field(
        default=None, description="a model plays the user (its persona, goal and facts); None: scripted only"
    )
    executor: str = Field(default="local", description="the executor of the model playing the user")

    def scripted(self, question: str) -> str | None:
        """The first scripted reply whose pattern the question matches."""
        asked = question[:MATCHED_CHARS]
        return next((r.say for r in self.replies if re.search(r.when, asked, re.I)), None)

    def answer(self, question: str) -> str:
        """A scripted user's answer: a reply, else the facts the question names, else the default."""
        if (said := self.scripted(question)) is not None:
            return said
        told = [v for k, v in self.facts.items() if re.search(rf"\b{re.escape(k)}\b", question, re.I)]
        return " ".join(told) if told else self.default


class PermissionRule(Session):
    """A decision for the tools ``tool`` names (a glob: ``Bash``, ``mcp__*``), when ``when`` (a
    regular expression) is found in the call's input as JSON, or always."""

    tool: OneLine
    when: str | None = None
    decision: Decision

    @model_validator(mode="after")
    def _valid(self) -> PermissionRule:
        if self.when is not None:
            _regex(self.when, "when")
        return self

    def applies(self, tool: str, given: JsonObject) -> bool:
        if not fnmatch.fnmatchcase(tool, self.tool):
            return False
        called = json.dumps(given, sort_keys=True)[:MATCHED_CHARS]
        return self.when is None or re.search(self.when, called, re.I) is not None


class PermissionPolicy(Session):
    """How a case's permission prompts are answered: the first rule that applies, else ``default``;
    ``ask`` puts the question to the simulated user (no user: denied)."""

    default: Decision = "allow"
    rules: tuple[PermissionRule, ...] = ()

    def decide(self, tool: str, given: JsonObject) -> Decision:
        return next((r.decision for r in self.rules if r.applies(tool, given)), self.default)


class Utterance(Session):
    """One exchange of a conversation, in order: who said it, and what."""

    who: Literal["user", "agent", "policy"]
    kind: Literal["prompt", "question", "answer", "permission"]
    text: str
    tool: str | None = None
    decision: Literal["allow", "deny"] | None = None


MCP_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def mcp_name(value: str, what: str) -> str:
    """A server's or tool's name as the CLIs spell it in ``mcp__<server>__<tool>``."""
    if not MCP_NAME.match(value):
        raise ValueError(f"{what}: {value!r}: letters, digits, '_' and '-' only (at most 64)")
    return value


class McpResponse(Session):
    """A stand-in tool's answer: to calls whose arguments equal every ``when`` (none: any call); its
    text may name them as ``{{input.<name>}}``; ``error``: a failed tool call."""

    when: JsonObject | None = None
    text: str = ""
    error: bool = False


class McpTool(Session):
    """A tool of an MCP stand-in, answered from its responses (the first that matches)."""

    name: OneLine
    description: str = ""
    input_schema: JsonObject | None = None
    responses: tuple[McpResponse, ...] = ()

    @model_validator(mode="after")
    def _named(self) -> McpTool:
        mcp_name(self.name, "name")
        return self


class McpRecord(Session):
    """The real MCP server a stand-in records from, once, under ``--mocks record``: a stdio command
    the stand-in starts inside the session's sandbox, in a copy of ``folder`` (a folder beside the
    task files, under the copy rules) when one is named. Later runs replay what it answered."""

    command: tuple[str, ...] = Field(min_length=1, description="the server's argv")
    env: dict[str, str] = Field(default_factory=dict, description="its environment, on top of the session's")
    folder: str | None = Field(default=None, description="its files: a folder beside the task files")


class McpServer(Session):
    """An MCP server a case's sessions meet, played by skillab (executors.mcp_standin) in each
    session's sandbox: no real server, nothing of the host; or, under ``--mocks record`` only, a real
    one the stand-in relays to and records."""

    tools: tuple[McpTool, ...] = ()
    files: dict[str, str] = Field(
        default_factory=dict, description="fixture files a response names as {{file:<path>}} (path -> text)"
    )
    record: McpRecord | None = Field(
        default=None, description="a real server to record from (--mocks record); replayed from its recording"
    )

    @model_validator(mode="after")
    def _answers(self) -> McpServer:
        if not self.tools and self.record is None:
            raise ValueError(
                "tools: give the tools' scripted responses, or a real server to record from (record)"
            )
        return self


def mcp_servers(value: dict[str, McpServer] | None) -> dict[str, McpServer] | None:
    for name in value or {}:
        mcp_name(name, "server")
    return value


class AgentRequest(Session):
    """One headless agent session in its own sandbox."""

    cli: str = Field(description="claude | codex | gemini")
    model: str
    prompt: str
    sandbox: str = Field(description="the session's working directory (created fresh per session)")
    home: str = Field(description="a fresh HOME for the session")
    skill_name: str | None = Field(default=None, description="the skill under test; None in the baseline arm")
    skill_dir: str | None = Field(
        default=None, description="folder holding SKILL.md, installed in the with-skill arm"
    )
    system: str | None = Field(default=None, description="extra system instructions (sample mode's artifact)")
    max_turns: int = 10
    timeout_s: float = 600.0
    raw_stream: str = Field(description="file the CLI's output stream is written to")
    # Trigger mode (does a skill fire on its own?): install, never force, keep the Skill tool.
    force_skill: bool = Field(
        default=True,
        description="True: the skill under test is forced and the baseline has no Skill tool (agentic "
        "mode); False: skills are only installed and listed, and the model decides (trigger mode)",
    )
    skills: tuple[InstalledSkill, ...] = Field(
        default=(), description="further skills installed beside skill_name, never forced"
    )
    isolation: Isolation = Field(
        default="bubblewrap",
        description="the OS sandbox: bubblewrap (an error where it cannot run) or none (a fresh HOME only)",
    )
    add_dirs: tuple[str, ...] = Field(
        default=(),
        description="folders the session may read besides its sandbox (a plugin eval case's add_dirs): "
        "copied into its HOME, read-only inside the sandbox, passed with --add-dir",
    )
    allow_network: bool = Field(
        default=False,
        description="share the host's network (--allow-network); False: only the model endpoint, through "
        "the forwarder",
    )
    plugin_dir: str | None = Field(
        default=None,
        description="a plugin folder loaded in this session only (Claude Code: --plugin-dir; Codex and "
        "Gemini: its skills installed like skills); None in the baseline arm",
    )
    plugin_mcp: bool = Field(
        default=False,
        description="start the plugin's MCP servers; False loads a copy without .mcp.json and mcpServers",
    )
    # A plugin eval case's own settings (claude only); None / empty: the executor's defaults.
    tools: tuple[str, ...] | None = Field(
        default=None, description="the only built-in tools offered to the model (claude --tools)"
    )
    user: SimulatedUser | None = Field(
        default=None, description="a simulated user who answers the agent's questions (a case's ## User)"
    )
    permissions: PermissionPolicy | None = Field(
        default=None, description="how permission prompts are answered (a case's ## Permissions)"
    )
    mcp: Annotated[dict[str, McpServer] | None, AfterValidator(mcp_servers)] = Field(
        default=None, description="MCP servers the session meets, as stand-ins (a case's ## MCP)"
    )
    disallowed_tools: tuple[str, ...] = Field(default=(), description="tools withheld (--disallowedTools)")
    environment: str | None = Field(
        default=None,
        description="a snapshot of a user's setup (Claude Code): its home/ copied into HOME, project/ into "
        "the working folder, plugins/<name>/ loaded; the request's own skills replace any of the same name",
    )
    environment_skip: tuple[str, ...] = Field(
        default=(), description="installed skills of the environment left out of this session"
    )
    resume: str | None = Field(
        default=None,
        description="a recorded Claude Code session (.jsonl) this session continues, the prompt being "
        "its next turn (claude --resume); a copy is resumed, the file itself is never written",
    )
    env: tuple[tuple[str, str], ...] = Field(
        default=(),
        description="extra environment of the session; never overrides HOME, keys or quiet settings",
    )


class AgentEvent(Session):
    """One step of a session in the model shared by the three CLIs."""

    kind: str = Field(description="init | text | tool_use | tool_result | error | result")
    tool: str | None = None
    tool_id: str | None = None
    input: JsonObject | None = None
    text: str = ""
    is_error: bool = False
    exit_code: int | None = None


class ListingState(StrEnum):
    FULL = "full"  # listed with its whole description
    TRUNCATED = "truncated"  # listed with its description cut short
    DROPPED = "dropped"  # listed by name alone: the model saw no description
    ABSENT = "absent"  # not in the listing at all


class ListedSkill(Session):
    name: str
    state: ListingState
    chars: int  # of its description as listed


class SkillListing(Session):
    """One session's skill listing as the model received it (descriptions are not kept: only how much
    of each arrived)."""

    skills: tuple[ListedSkill, ...]
    chars: int  # the listing's size, its heading excluded
    budget: int | None = None  # the CLI's budget for it, where the session told its context window
    window: int | None = None  # the model's context window (tokens), as the session told it

    def state(self, name: str) -> ListingState:
        return next((s.state for s in self.skills if s.name == name), ListingState.ABSENT)

    @property
    def over_budget(self) -> bool:
        """Descriptions were left out to fit (a name-only entry); known from the listing alone."""
        return any(s.state == ListingState.DROPPED for s in self.skills)


class SessionMeta(BaseModel):
    """What a session's CLI told of it (its init and result events, its own logs), as every parser
    keeps it: typed where skillab reads a figure, the rest of what a CLI says kept as it came (extra
    keys). A value of the wrong shape from a CLI is dropped, never a failed parse."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)  # as Session's

    session_id: str | None = None
    model: str | None = Field(default=None, description="the model the responses named, else the CLI's")
    cli_version: str | None = None
    tools: list[str] | None = Field(default=None, description="the tools the CLI offered the model")
    plugins: list[str] | None = None
    mcp_servers: list[str] | None = None
    skills_invoked: list[str] = Field(default_factory=list, description="every skill a call loaded, in order")
    num_turns: int | None = None
    usage: JsonObject | None = Field(default=None, description="token counts in the CLI's convention")
    total_cost_usd: float | None = None
    api_error_status: int | None = None
    context_window: int | None = None
    permission_denials: list[Any] = Field(default_factory=list)
    user_calls: int = 0
    user_cost_usd: float = 0.0
    user_errors: int = 0
    reused_from: str | None = Field(default=None, description="the run a reused baseline session came from")
    image: str | None = Field(default=None, description="the fleet image the session's container named")

    @field_validator("*", mode="wrap")
    @classmethod
    def _lenient(cls, value: Any, handler: Any, info: ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValueError:
            field = cls.model_fields[str(info.field_name)]
            return field.get_default(call_default_factory=True)


class AgentSession(Session):
    """A parsed session; ``ok`` only when ``status`` is SUCCESS."""

    ok: bool
    status: SessionStatus
    final_text: str = ""
    events: tuple[AgentEvent, ...] = ()
    skills_listed: tuple[str, ...] | None = Field(
        default=None, description="skills the CLI announced, if it does"
    )
    skill_invoked: bool = False
    listing: SkillListing | None = Field(
        default=None, description="the skill listing the model received, read from the session's request"
    )
    meta: SessionMeta = Field(default_factory=SessionMeta)
    exit_code: int | None = None
    error: str | None = None
    duration_ms: float = 0.0
    isolation: Isolation | None = Field(
        default=None, description="the OS sandbox the session ran in; None when it did not run"
    )
    conversation: tuple[Utterance, ...] = Field(
        default=(), description="a session with a user or a permission policy: who said what, in order"
    )

    @classmethod
    def ended(cls, status: str, final_text: str, events: list[AgentEvent], **fields: Any) -> AgentSession:
        """The session a parsed stream tells of: ``ok`` as its status says."""
        ended = SessionStatus(status)
        ok = ended == SessionStatus.SUCCESS
        return cls(ok=ok, status=ended, final_text=final_text, events=tuple(events), **fields)

    @property
    def cost_usd(self) -> float:
        """What the session cost, as its CLI reported it (0 when it reported nothing)."""
        return self.meta.total_cost_usd or 0.0
