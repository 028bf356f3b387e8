"""Data that crosses the executor boundary. Frozen so it is safe across threads and hashes stably."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from executors.sandbox import Isolation


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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


class Usage(Frozen):
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class RunResult(Frozen):
    """What one call produced. A failed call is data too: ``ok`` False with its error and cause."""

    ok: bool
    output: str = ""
    usage: Usage = Usage()
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    model: str = ""
    error: str | None = None
    error_kind: str | None = Field(default=None, description="transient | permanent | timeout | budget")
    attempts: int = 1
    cached: bool = False


class AgentRequest(Frozen):
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
    isolation: Isolation = Field(
        default="bubblewrap",
        description="the OS sandbox: bubblewrap (an error where it cannot run) or none (a fresh HOME only)",
    )


class AgentEvent(Frozen):
    """One step of a session in the model shared by the three CLIs."""

    kind: str = Field(description="init | text | tool_use | tool_result | error | result")
    tool: str | None = None
    tool_id: str | None = None
    input: dict[str, Any] | None = None
    text: str = ""
    is_error: bool = False
    exit_code: int | None = None


class AgentSession(Frozen):
    """A parsed session. ``status`` is success, error, api_error, max_turns, timeout or crashed."""

    ok: bool
    status: str
    final_text: str = ""
    events: tuple[AgentEvent, ...] = ()
    skills_listed: tuple[str, ...] | None = Field(
        default=None, description="skills the CLI announced, if it does"
    )
    skill_invoked: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)
    exit_code: int | None = None
    error: str | None = None
    duration_ms: float = 0.0
    isolation: Isolation | None = Field(
        default=None, description="the OS sandbox the session ran in; None when it did not run"
    )
