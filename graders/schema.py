"""Samples, assertions and grades: the data graders read and produce."""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from executors.schema import Frozen, OneLine


def invalid(message: str) -> PydanticCustomError:
    """A parameter problem in skillab's own words (the message names the value itself)."""
    return PydanticCustomError("skillab", "{message}", {"message": message})


def rule(holds: Callable[[Any], bool], message: str) -> AfterValidator:
    """A parameter rule: ``message`` (with ``{}`` for the value) when the value breaks it."""

    def check(value: Any) -> Any:
        if not holds(value):
            raise invalid(message.format(value))
        return value

    return AfterValidator(check)


class AssertionBase(Frozen):
    """What every assertion has: its type, its weight in the score, and ``not``. Each type's
    parameters are declared by its subclass, and ``Assertion`` is their union, told apart by ``type``:
    a field a type does not read is an unknown field, a missing one is named, before any call."""

    type: str
    weight: Annotated[float, Field(allow_inf_nan=False), rule(lambda w: w >= 0, "must be >= 0, got {}")] = 1.0
    negate: bool = Field(default=False, alias="not")

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """``value: null`` in a file is a missing value, as an omitted one is."""
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data

    def described(self) -> dict[str, Any]:
        """The fields a reader needs to recognise this assertion in a report, in one order for all."""
        out: dict[str, Any] = {"type": self.type}
        # a model's fields are in its __dict__: asking it for a field its class lacks raises and catches
        # an AttributeError (70,000 of them for 10,000 results described)
        fields = vars(self)
        for name in DESCRIBED:
            field = fields.get(name)
            if field is not None:
                out[name] = list(field) if isinstance(field, tuple) else field
        if (schema := fields.get("json_schema")) is not None:
            out["schema"] = schema
        children: tuple[AssertionBase, ...] | None = fields.get("children")
        if children is not None:
            out["children"] = [c.described() for c in children]
        out["weight"] = self.weight
        if self.negate:
            out["not"] = True
        return out


DESCRIBED = ("value", "values", "pattern", "flags", "reference", "threshold", "fn", "n", "mode")


def _number(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(f"type {info.data.get('type')!r} needs a number, got {value!r}")
    return value


def _count(value: Any, info: ValidationInfo) -> Any:
    if _number(value, info) < 0:
        raise invalid(f"type {info.data.get('type')!r} needs a number >= 0, got {value!r}")
    return value


def _text(value: Any, info: ValidationInfo) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"type {info.data.get('type')!r} needs a non-empty string, got {value!r}")
    return value


def _scalar(value: Any, info: ValidationInfo) -> Any:
    if not isinstance(value, str | int | float):  # bool is an int
        raise invalid(f"type {info.data.get('type')!r} needs a string or a number, got {value!r}")
    return value


def _reference(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str) and not value.strip():
        raise invalid(f"type {info.data.get('type')!r} needs a non-empty reference")
    return value


def _between(low: float, high: float) -> AfterValidator:
    return rule(lambda v: low <= v <= high, f"must be between {low:g} and {high:g}, got {{}}")


Number = Annotated[int | float, BeforeValidator(_number)]
Count = Annotated[int | float, BeforeValidator(_count)]
Text = Annotated[str, BeforeValidator(_text)]
Reference = Annotated[str, BeforeValidator(_reference)]
Scalar = Annotated[StrictStr | StrictInt | StrictFloat | StrictBool, BeforeValidator(_scalar)]
JudgeThreshold = Annotated[float, Field(allow_inf_nan=False), _between(1, 5)]
UnitThreshold = Annotated[float, Field(allow_inf_nan=False), _between(0, 1)]


class TextAssertion(AssertionBase):
    type: Literal["contains", "not_contains", "starts_with", "ends_with", "equals", "not_equals"]
    value: Scalar


class NumberAssertion(AssertionBase):
    type: Literal["min_length", "max_length", "word_count_min", "word_count_max", "cost_max", "latency_max"]
    value: Number


class CountAssertion(AssertionBase):
    type: Literal["turns_max", "turns_min", "tools_count_max", "tools_count_min"]
    value: Count


class ListAssertion(AssertionBase):
    type: Literal["contains_all", "contains_any", "tools_called", "tools_not_called"]
    values: tuple[str, ...]

    @field_validator("values")
    @classmethod
    def _tools_named(cls, values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        kind = str(info.data.get("type"))
        if kind.startswith("tools_") and not values:
            raise invalid(f"type {kind!r} needs at least one tool name")
        return values


class ToolTextAssertion(AssertionBase):
    type: Literal["tool_output_contains", "tool_input_contains", "tool_input_not_contains"]
    value: Text = Field(description="Tool:text")


class MockHitAssertion(AssertionBase):
    type: Literal["mock_hit"]
    value: Text = Field(description="Tool:N, the mock")
    threshold: float | None = Field(
        default=None, allow_inf_nan=False, description="the least hits (default 1)"
    )

    @field_validator("value")
    @classmethod
    def _mock(cls, value: str) -> str:
        if not re.fullmatch(r"[^:]+:[1-9]\d*", value):
            raise invalid(f"mock_hit needs Tool:N (N from 1), got {value!r}")
        return value


class RegexAssertion(AssertionBase):
    type: Literal["regex"]
    pattern: str
    flags: str | None = None


class JsonValidAssertion(AssertionBase):
    type: Literal["json_valid"]


class JsonSchemaAssertion(AssertionBase):
    type: Literal["json_schema"]
    json_schema: dict[str, Any] = Field(alias="schema")


class JudgedAssertion(AssertionBase):
    """The types the judge scores on its 1-5 scale; the RAG ones ground on ``reference``, else on the
    sample's context."""

    type: Literal["faithfulness", "answer_relevancy", "context_recall"]
    reference: str | None = None
    threshold: JudgeThreshold | None = None


class SimilarityAssertion(JudgedAssertion):
    type: Literal["semantic_similarity"]  # type: ignore[assignment]
    reference: str


class OverlapAssertion(AssertionBase):
    """Closeness to a reference text on 0-1: ROUGE-N (``n``, default 1) or BLEU."""

    type: Literal["rouge_n_min", "bleu_min"]
    reference: Reference
    threshold: UnitThreshold | None = None
    n: Annotated[int, rule(lambda n: n >= 1, "must be a positive integer, got {}")] | None = Field(
        default=None, description="rouge_n_min: the n-gram size (default 1)"
    )


class DistanceAssertion(AssertionBase):
    type: Literal["levenshtein_max"]
    reference: Reference
    value: Count


class CustomAssertion(AssertionBase):
    type: Literal["custom"]
    fn: str
    timeout_s: (
        Annotated[float, Field(allow_inf_nan=False), rule(lambda t: t > 0, "must be > 0, got {}")] | None
    ) = Field(default=None, description="custom: seconds the check may take (default 10)")


class SetAssertion(AssertionBase):
    type: Literal["assert-set"]
    children: tuple[Assertion, ...] = Field(description="assert-set: its checks")
    mode: Literal["any", "all"] | None = Field(default=None, description="assert-set: any or all")


Assertion = Annotated[
    TextAssertion
    | NumberAssertion
    | CountAssertion
    | ListAssertion
    | ToolTextAssertion
    | MockHitAssertion
    | RegexAssertion
    | JsonValidAssertion
    | JsonSchemaAssertion
    | JudgedAssertion
    | SimilarityAssertion
    | OverlapAssertion
    | DistanceAssertion
    | CustomAssertion
    | SetAssertion,
    Field(discriminator="type"),
]
SetAssertion.model_rebuild()


def _quoted(value: Any) -> Any:
    """A reference answer is text as written: YAML turns ``1.50``, ``007`` or ``12:30:00`` into numbers
    that print otherwise, and a date into a date; asked for in quotes instead of guessed."""
    if value is not None and not isinstance(value, str):
        raise invalid(
            f"write the answer in quotes: the file gave a {type(value).__name__} ({value!r}), not text"
        )
    return value


class Sample(Frozen):
    """One test case. ``prompt`` plus optional ``context`` make the text the model receives."""

    sample_id: OneLine
    prompt: str
    context: str | None = None
    rubric: str | None = None
    assertions: tuple[Assertion, ...] = ()
    reference_output: Annotated[str | None, BeforeValidator(_quoted)] = Field(
        default=None, description="a correct answer: every grader is tried on it (and on its mutants)"
    )
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


#: What a check says: passed, and why (one line for the report).
Outcome = tuple[bool, str]


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


class GradingError(Exception):
    """A check that could not decide (it raised, hung, crashed, answered nothing usable or ran over
    its budget): a grading error, never a pass and never the model's failure."""


class AssertionResult(Frozen):
    assertion: Assertion
    passed: bool
    message: str = ""
    score: float | None = None
    error: bool = Field(default=False, description="the check could not decide: a grading error")

    @classmethod
    def of(
        cls, assertion: Assertion, passed: bool, message: str, score: float | None = None
    ) -> AssertionResult:
        """The outcome of ``assertion``'s check with its ``not`` applied: the one place negation happens,
        for checked and judged types alike."""
        if assertion.negate:
            passed, message = not passed, f"negated: {message}" if message else "negated"
        return cls(assertion=assertion, passed=passed, message=message, score=score)

    @classmethod
    def errored(cls, assertion: Assertion, message: str) -> AssertionResult:
        """A check that could not decide: not passed, and ``not`` does not turn it into a pass."""
        return cls(assertion=assertion, passed=False, message=f"grading error: {message}", error=True)

    def detail(self) -> dict[str, Any]:
        out = self.assertion.described()
        out["passed"] = self.passed
        if self.error:
            out["error"] = True
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
    grading_error: str | None = Field(
        default=None,
        description="an assertion that could not decide: the run has no score (excluded, counted apart "
        "from the model's errors)",
    )
