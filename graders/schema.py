"""Samples, assertions and grades: the data graders read and produce."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from executors.schema import Frozen, OneLine


class Assertion(Frozen):
    """One check on an output. Which fields a type needs is declared in ``graders.registry``."""

    type: str
    value: Any = None
    values: tuple[str, ...] | None = None
    pattern: str | None = None
    flags: str | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    reference: str | None = None
    threshold: float | None = Field(default=None, allow_inf_nan=False)
    fn: str | None = None
    weight: float = Field(default=1.0, allow_inf_nan=False)
    negate: bool = Field(default=False, alias="not")
    timeout_s: float | None = None
    n: int | None = Field(default=None, description="rouge_n_min: the n-gram size (default 1)")
    mode: Literal["any", "all"] | None = Field(default=None, description="assert-set: any or all")
    children: tuple[Assertion, ...] | None = Field(default=None, description="assert-set: its checks")

    def described(self) -> dict[str, Any]:
        """The fields a reader needs to recognise this assertion in a report."""
        out: dict[str, Any] = {"type": self.type}
        for name in ("value", "values", "pattern", "flags", "reference", "threshold", "fn", "n", "mode"):
            field = getattr(self, name)
            if field is not None:
                out[name] = list(field) if isinstance(field, tuple) else field
        if self.json_schema is not None:
            out["schema"] = self.json_schema
        if self.children is not None:
            out["children"] = [c.described() for c in self.children]
        out["weight"] = self.weight
        if self.negate:
            out["not"] = True
        return out


class Sample(Frozen):
    """One test case. ``prompt`` plus optional ``context`` make the text the model receives."""

    sample_id: OneLine
    prompt: str
    context: str | None = None
    rubric: str | None = None
    assertions: tuple[Assertion, ...] = ()
    dimensions: dict[str, str] | None = None
    tags: tuple[str, ...] = ()
    cluster: str | None = None
    source_dir: str = Field(default=".", exclude=True, description="folder of the samples file")

    @property
    def full_prompt(self) -> str:
        """Exactly the seed's construction: prompt, or prompt + fenced context."""
        if self.context:
            return f"{self.prompt}\n\n```\n{self.context}\n```"
        return self.prompt

    @property
    def judged(self) -> bool:
        return bool(self.rubric or self.dimensions)


class ToolCall(Frozen):
    """One tool call of an agent run, for the tool assertions."""

    tool: str
    input: Any = None
    output: str | None = None


class Observation(Frozen):
    """What an assertion may look at: the output, what the call cost, and how it was produced (a
    sample-mode call is one turn with no tool call and no mock)."""

    output: str
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    sample: Sample | None = None
    num_turns: int | None = 1
    tool_calls: tuple[ToolCall, ...] = ()
    mock_hits: dict[str, int] | None = Field(default=None, description="hits per Tool:N mock, when mocks ran")


class AssertionResult(Frozen):
    assertion: Assertion
    passed: bool
    message: str = ""
    score: float | None = None

    @classmethod
    def of(
        cls, assertion: Assertion, passed: bool, message: str, score: float | None = None
    ) -> AssertionResult:
        """The outcome of ``assertion``'s check with its ``not`` applied: the one place negation happens,
        for checked and judged types alike."""
        if assertion.negate:
            passed, message = not passed, f"negated: {message}" if message else "negated"
        return cls(assertion=assertion, passed=passed, message=message, score=score)

    def detail(self) -> dict[str, Any]:
        out = self.assertion.described()
        out["passed"] = self.passed
        if self.message:
            out["message"] = self.message
        if self.score is not None:
            out["score"] = self.score
        return out


class JudgeStatus(StrEnum):
    GRADED = "graded"
    UNGRADED = "ungraded"  # the judge failed twice: no score, the raw reply kept, counted
    SKIPPED = "skipped"  # no judged criterion, or --no-judge


class JudgeResult(Frozen):
    """The judge layer for one output. UNGRADED keeps the raw reply and never counts as a score."""

    status: JudgeStatus = JudgeStatus.SKIPPED
    score: float | None = None
    reason: str = ""
    dimension_scores: dict[str, float] | None = None
    raw: str | None = None
    judges: dict[str, float] | None = Field(default=None, description="per judge model, in an ensemble")


class Grade(Frozen):
    assertions: tuple[AssertionResult, ...] = ()
    assertion_score: float | None = None
    judge: JudgeResult = JudgeResult()
    composite: float | None = Field(default=0.0, description="None when a judged layer is UNGRADED")
    scored: bool = Field(
        default=True,
        description="False when no criterion applied (no weighted assertion, no judge): the seed's "
        "composite 0, which no statistic may count",
    )
