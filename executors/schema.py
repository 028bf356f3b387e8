"""Data that crosses the executor boundary. Frozen so it is safe across threads and hashes stably."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
