"""The one table of assertion types, and the dispatcher that parses, runs and weights them.

Each type names the model of its parameters (``graders.schema``), the check that runs it and what it
checks when the file is loaded beyond its fields. Negation (``"not": true``) is applied once, by
``AssertionResult.of``, for checked and judged types alike; weight is applied here; neither inside a
check.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import ValidationError

from executors.errors import InputError
from graders import custom, metrics, similarity, structured, text, tools
from graders.loading import closest
from graders.schema import (
    Assertion,
    AssertionBase,
    AssertionResult,
    CountAssertion,
    CustomAssertion,
    DistanceAssertion,
    GradingError,
    JsonSchemaAssertion,
    JsonValidAssertion,
    JudgedAssertion,
    ListAssertion,
    MockHitAssertion,
    NumberAssertion,
    Observation,
    Outcome,
    OverlapAssertion,
    RegexAssertion,
    SetAssertion,
    SimilarityAssertion,
    TextAssertion,
    ToolTextAssertion,
)

A = TypeVar("A", bound=AssertionBase)
Kind = Literal["sync", "custom", "judge"]


@dataclass(frozen=True)
class AssertionType(Generic[A]):
    kind: Kind
    model: type[A]  # its parameters
    check: Callable[[A, Observation], Outcome] | None
    summary: str = ""  # one line for the documentation's generated table (docs/inputs.md)
    loads: Callable[[A, str], None] | None = None  # what is checked at load time beyond the fields

    @property
    def required(self) -> tuple[str, ...]:
        """Its required parameters, as they are spelled in a file."""
        fields = self.model.model_fields.items()
        return tuple(f.alias or name for name, f in fields if f.is_required() and name != "type")


def _compiles(a: RegexAssertion, source_dir: str) -> None:
    text.compile_regex(a.pattern, a.flags)


def _valid_schema(a: JsonSchemaAssertion, source_dir: str) -> None:
    structured.check_schema(a.json_schema)


def _loads_check(a: CustomAssertion, source_dir: str) -> None:
    custom.validate_file(custom.resolve(a.fn, source_dir))


def assert_set(a: SetAssertion, obs: Observation) -> Outcome:
    """oh-my-knowledge's combinator: each child checked (its own ``not`` applied), then all of them
    (mode ``all``, the default) or at least one (``any``) must pass."""
    children = [run_assertion(child, obs) for child in a.children]
    if not children:
        return False, "no assertion in the set"
    undecided = [f"{c.assertion.type}: {c.message}" for c in children if c.error]
    if undecided:  # a set that holds an undecided check is undecided too
        raise GradingError("; ".join(undecided))
    mode = a.mode or "all"
    passed = any(c.passed for c in children) if mode == "any" else all(c.passed for c in children)
    failed = [
        f"{c.assertion.type}: {c.message}" if c.message else c.assertion.type
        for c in children
        if not c.passed
    ]
    summary = f"{len(children) - len(failed)}/{len(children)} passed ({mode})"
    return passed, summary + (f"; failed: {'; '.join(failed)}" if failed else "")


ASSERTIONS: dict[str, AssertionType[Any]] = {
    "contains": AssertionType(
        "sync",
        TextAssertion,
        text.contains,
        summary="the output contains `value` (case-insensitive)",
    ),
    "not_contains": AssertionType(
        "sync",
        TextAssertion,
        text.not_contains,
        summary="the output does not contain `value` (case-insensitive)",
    ),
    "regex": AssertionType(
        "sync",
        RegexAssertion,
        text.regex,
        loads=_compiles,
        summary="`pattern` matches the output (`flags`, default `i`; a time budget bounds the match)",
    ),
    "min_length": AssertionType(
        "sync",
        NumberAssertion,
        text.min_length,
        summary="at least `value` characters",
    ),
    "max_length": AssertionType(
        "sync",
        NumberAssertion,
        text.max_length,
        summary="at most `value` characters",
    ),
    "json_valid": AssertionType(
        "sync",
        JsonValidAssertion,
        structured.json_valid,
        summary="the output parses as JSON",
    ),
    "json_schema": AssertionType(
        "sync",
        JsonSchemaAssertion,
        structured.json_schema,
        loads=_valid_schema,
        summary="the output is JSON valid against `schema` (the full JSON Schema spec)",
    ),
    "starts_with": AssertionType(
        "sync",
        TextAssertion,
        text.starts_with,
        summary="the output starts with `value` (case-insensitive)",
    ),
    "ends_with": AssertionType(
        "sync",
        TextAssertion,
        text.ends_with,
        summary="the output ends with `value` (case-insensitive)",
    ),
    "equals": AssertionType(
        "sync",
        TextAssertion,
        text.equals,
        summary="the output equals `value` after trimming",
    ),
    "not_equals": AssertionType(
        "sync",
        TextAssertion,
        text.not_equals,
        summary="the output differs from `value` after trimming",
    ),
    "word_count_min": AssertionType(
        "sync",
        NumberAssertion,
        text.word_count_min,
        summary="at least `value` words",
    ),
    "word_count_max": AssertionType(
        "sync",
        NumberAssertion,
        text.word_count_max,
        summary="at most `value` words",
    ),
    "contains_all": AssertionType(
        "sync",
        ListAssertion,
        text.contains_all,
        summary="every one of `values` is in the output (case-insensitive)",
    ),
    "contains_any": AssertionType(
        "sync",
        ListAssertion,
        text.contains_any,
        summary="at least one of `values` is in the output (case-insensitive)",
    ),
    "cost_max": AssertionType(
        "sync",
        NumberAssertion,
        metrics.cost_max,
        summary="the call cost at most `value` USD",
    ),
    "latency_max": AssertionType(
        "sync",
        NumberAssertion,
        metrics.latency_max,
        summary="the call took at most `value` ms",
    ),
    "semantic_similarity": AssertionType(
        "judge",
        SimilarityAssertion,
        None,
        summary="the judge scores the output's closeness to `reference` at least `threshold` (default 3 of 5)",
    ),
    "custom": AssertionType(
        "custom",
        CustomAssertion,
        None,
        loads=_loads_check,
        summary="a Python (`check(output, ctx)`) or JavaScript check file `fn`, run confined",
    ),
    # oh-my-knowledge's types beyond the seed's (0.54): how the answer was produced ...
    "turns_max": AssertionType(
        "sync",
        CountAssertion,
        tools.turns_max,
        summary="the agent took at most `value` turns",
    ),
    "turns_min": AssertionType(
        "sync",
        CountAssertion,
        tools.turns_min,
        summary="the agent took at least `value` turns",
    ),
    "tools_called": AssertionType(
        "sync",
        ListAssertion,
        tools.tools_called,
        summary="every tool named in `values` was called (case-insensitive)",
    ),
    "tools_not_called": AssertionType(
        "sync",
        ListAssertion,
        tools.tools_not_called,
        summary="no tool named in `values` was called",
    ),
    "tools_count_max": AssertionType(
        "sync",
        CountAssertion,
        tools.tools_count_max,
        summary="at most `value` tool calls",
    ),
    "tools_count_min": AssertionType(
        "sync",
        CountAssertion,
        tools.tools_count_min,
        summary="at least `value` tool calls",
    ),
    "tool_output_contains": AssertionType(
        "sync",
        ToolTextAssertion,
        tools.tool_output_contains,
        summary="a call of tool T returned text X (`value: T:X`, case-insensitive)",
    ),
    "tool_input_contains": AssertionType(
        "sync",
        ToolTextAssertion,
        tools.tool_input_contains,
        summary="a call of tool T was given X in its input (`value: T:X`)",
    ),
    "tool_input_not_contains": AssertionType(
        "sync",
        ToolTextAssertion,
        tools.tool_input_not_contains,
        summary="no call of tool T was given X in its input (`value: T:X`)",
    ),
    "mock_hit": AssertionType(
        "sync",
        MockHitAssertion,
        tools.mock_hit,
        summary="the mock `value` was hit at least `threshold` times (default 1)",
    ),
    # ... closeness to a reference text ...
    "rouge_n_min": AssertionType(
        "sync",
        OverlapAssertion,
        similarity.rouge_n_min,
        summary="ROUGE-N against `reference` at least `threshold` (0-1)",
    ),
    "levenshtein_max": AssertionType(
        "sync",
        DistanceAssertion,
        similarity.levenshtein_max,
        summary="edit distance to `reference` at most `value`",
    ),
    "bleu_min": AssertionType(
        "sync",
        OverlapAssertion,
        similarity.bleu_min,
        summary="BLEU against `reference` at least `threshold` (0-1)",
    ),
    # ... a combination of checks, and the RAG judgements (skillab's judge scores them).
    "assert-set": AssertionType(
        "sync",
        SetAssertion,
        assert_set,
        summary="`children` combined: `mode: all` (default) or `any`",
    ),
    "faithfulness": AssertionType(
        "judge",
        JudgedAssertion,
        None,
        summary="the judge finds the output faithful to `reference`, else to the sample's context",
    ),
    "answer_relevancy": AssertionType(
        "judge",
        JudgedAssertion,
        None,
        summary="the judge finds the output relevant to the prompt",
    ),
    "context_recall": AssertionType(
        "judge",
        JudgedAssertion,
        None,
        summary="the judge finds the facts of `reference`, else of the context, in the output",
    ),
}
#: The types the judge scores (each as the aspect ``<type>#<index>``) on its 1-5 scale.
JUDGED = frozenset(name for name, spec in ASSERTIONS.items() if spec.kind == "judge")
MAX_NESTING = 16
#: Every parameter name of every type, as spelled in a file (for "did you mean" and error locations).
FIELDS = sorted(
    {"type", *(f.alias or n for spec in ASSERTIONS.values() for n, f in spec.model.model_fields.items())}
)


def closest_type(name: str) -> str | None:
    matches = difflib.get_close_matches(name, list(ASSERTIONS), n=1, cutoff=0.5)
    return matches[0] if matches else None


def parse(raw: Any, source_dir: str, depth: int = 0) -> Assertion:
    """One assertion of a file, by its type's model, then what the type checks at load time (a regex
    compiles, a schema is valid, a custom file defines check, a set's children). Raises InputError
    ('field: problem', the first problem found) for anything that would fail at grading time."""
    if not isinstance(raw, dict):
        raise InputError(f"expected an object, got {type(raw).__name__}")
    name = raw.get("type")
    if name is None:
        raise InputError("type: required field missing")
    spec = ASSERTIONS.get(str(name))
    if spec is None:
        hint = closest_type(str(name))
        raise InputError(
            f"type: unknown assertion type {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
        )
    fields = dict(raw)
    if spec.model is SetAssertion and isinstance(raw.get("children"), list):
        fields["children"] = _children(raw["children"], source_dir, depth)
    try:
        a: Assertion = spec.model.model_validate(fields)
    except ValidationError as exc:
        raise InputError(_problem(exc, str(name))) from None
    if spec.loads is not None:
        spec.loads(a, source_dir)
    return a


def _problem(exc: ValidationError, name: str) -> str:
    """One pydantic error in skillab's words; a missing parameter is named with its type, unless an
    unknown field is its misspelling (then that is the problem to name)."""
    errors = exc.errors()
    missing = [str(e["loc"][-1]) for e in errors if e["type"] == "missing"]
    typos = [e for e in errors if e["type"] == "extra_forbidden" and closest(str(e["loc"][-1]), missing)]
    err = typos[0] if typos else errors[0]
    field = ".".join(str(part) for part in err["loc"])
    if err["type"] == "missing":
        return f"{field}: required for type {name!r}"
    if err["type"] == "extra_forbidden":
        return f"{field}: unknown field{closest(field, FIELDS)}"
    if err["type"] == "skillab":
        return f"{field}: {err['msg']}" if field else str(err["msg"])
    got = f" (got {err.get('input')!r})" if field else ""
    return f"{field}: {str(err['msg']).removeprefix('Value error, ')}{got}"


def _children(raw: list[Any], source_dir: str, depth: int) -> list[Assertion]:
    """assert-set: a non-empty list of checks, each valid, none graded by the judge or custom code
    (oh-my-knowledge's rule: a set is decided at once, without an LLM), nested at most 16 deep."""
    if not raw:
        raise InputError("children: assert-set needs at least one assertion")
    if depth + 1 >= MAX_NESTING:
        raise InputError(f"children: assert-set nested deeper than {MAX_NESTING} levels")
    children = []
    for i, child in enumerate(raw):
        spec = ASSERTIONS.get(str(child.get("type"))) if isinstance(child, dict) else None
        if spec is not None and spec.kind != "sync":
            raise InputError(
                f"children: [{i}] {child['type']!r} cannot be inside an assert-set (not deterministic)"
            )
        try:
            children.append(parse(child, source_dir, depth + 1))
        except InputError as exc:
            raise InputError(f"children: [{i}] {exc}") from None
    return children


def run_assertion(a: Assertion, obs: Observation) -> AssertionResult:
    """Run one deterministic or custom assertion. A check that cannot decide (it raised, timed out,
    answered nothing usable) is a grading error with its message, never a pass or a model failure."""
    spec = ASSERTIONS[a.type]
    score: float | None = None
    try:
        if isinstance(a, CustomAssertion):
            passed, message, score = custom.run_custom(a, obs)
        elif spec.check is not None:
            passed, message = spec.check(a, obs)
        else:
            raise InputError(f"assertion {a.type!r} is graded by the judge")
    except GradingError as exc:
        return AssertionResult.errored(a, str(exc))
    except Exception as exc:  # a grader bug or odd input must not crash the run
        return AssertionResult.errored(a, f"check raised {type(exc).__name__}: {exc}")
    return AssertionResult.of(a, passed, message, score)


def is_judged(a: Assertion) -> bool:
    return a.type in JUDGED
