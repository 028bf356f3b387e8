"""The one table of assertion types, and the dispatcher that validates, runs and weights them.

Negation (``"not": true``) is applied once, by ``AssertionResult.of``, for checked and judged types
alike; weight is applied here; neither inside a check.
"""

from __future__ import annotations

import difflib
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from executors.errors import InputError
from graders import custom, metrics, similarity, structured, text, tools
from graders.schema import Assertion, AssertionResult, Observation

Check = Callable[[Assertion, Observation], tuple[bool, str]]
Kind = Literal["sync", "custom", "judge"]


@dataclass(frozen=True)
class AssertionType:
    kind: Kind
    check: Check | None
    required: tuple[str, ...] = ()
    numeric_value: bool = False
    summary: str = ""  # one line for the documentation's generated table (docs/inputs.md)


ASSERTIONS: dict[str, AssertionType] = {
    "contains": AssertionType(
        "sync",
        text.contains,
        ("value",),
        summary="the output contains `value` (case-insensitive)",
    ),
    "not_contains": AssertionType(
        "sync",
        text.not_contains,
        ("value",),
        summary="the output does not contain `value` (case-insensitive)",
    ),
    "regex": AssertionType(
        "sync",
        text.regex,
        ("pattern",),
        summary="`pattern` matches the output (`flags`, default `i`; a time budget bounds the match)",
    ),
    "min_length": AssertionType(
        "sync",
        text.min_length,
        ("value",),
        numeric_value=True,
        summary="at least `value` characters",
    ),
    "max_length": AssertionType(
        "sync",
        text.max_length,
        ("value",),
        numeric_value=True,
        summary="at most `value` characters",
    ),
    "json_valid": AssertionType(
        "sync",
        structured.json_valid,
        summary="the output parses as JSON",
    ),
    "json_schema": AssertionType(
        "sync",
        structured.json_schema,
        ("json_schema",),
        summary="the output is JSON valid against `schema` (the full JSON Schema spec)",
    ),
    "starts_with": AssertionType(
        "sync",
        text.starts_with,
        ("value",),
        summary="the output starts with `value` (case-insensitive)",
    ),
    "ends_with": AssertionType(
        "sync",
        text.ends_with,
        ("value",),
        summary="the output ends with `value` (case-insensitive)",
    ),
    "equals": AssertionType(
        "sync",
        text.equals,
        ("value",),
        summary="the output equals `value` after trimming",
    ),
    "not_equals": AssertionType(
        "sync",
        text.not_equals,
        ("value",),
        summary="the output differs from `value` after trimming",
    ),
    "word_count_min": AssertionType(
        "sync",
        text.word_count_min,
        ("value",),
        numeric_value=True,
        summary="at least `value` words",
    ),
    "word_count_max": AssertionType(
        "sync",
        text.word_count_max,
        ("value",),
        numeric_value=True,
        summary="at most `value` words",
    ),
    "contains_all": AssertionType(
        "sync",
        text.contains_all,
        ("values",),
        summary="every one of `values` is in the output (case-insensitive)",
    ),
    "contains_any": AssertionType(
        "sync",
        text.contains_any,
        ("values",),
        summary="at least one of `values` is in the output (case-insensitive)",
    ),
    "cost_max": AssertionType(
        "sync",
        metrics.cost_max,
        ("value",),
        numeric_value=True,
        summary="the call cost at most `value` USD",
    ),
    "latency_max": AssertionType(
        "sync",
        metrics.latency_max,
        ("value",),
        numeric_value=True,
        summary="the call took at most `value` ms",
    ),
    "semantic_similarity": AssertionType(
        "judge",
        None,
        ("reference",),
        summary="the judge scores the output's closeness to `reference` at least `threshold` (default 3 of 5)",
    ),
    "custom": AssertionType(
        "custom",
        None,
        ("fn",),
        summary="a Python (`check(output, ctx)`) or JavaScript check file `fn`, run confined",
    ),
    # oh-my-knowledge's types beyond the seed's (0.54): how the answer was produced ...
    "turns_max": AssertionType(
        "sync",
        tools.turns_max,
        ("value",),
        numeric_value=True,
        summary="the agent took at most `value` turns",
    ),
    "turns_min": AssertionType(
        "sync",
        tools.turns_min,
        ("value",),
        numeric_value=True,
        summary="the agent took at least `value` turns",
    ),
    "tools_called": AssertionType(
        "sync",
        tools.tools_called,
        ("values",),
        summary="every tool named in `values` was called (case-insensitive)",
    ),
    "tools_not_called": AssertionType(
        "sync",
        tools.tools_not_called,
        ("values",),
        summary="no tool named in `values` was called",
    ),
    "tools_count_max": AssertionType(
        "sync",
        tools.tools_count_max,
        ("value",),
        numeric_value=True,
        summary="at most `value` tool calls",
    ),
    "tools_count_min": AssertionType(
        "sync",
        tools.tools_count_min,
        ("value",),
        numeric_value=True,
        summary="at least `value` tool calls",
    ),
    "tool_output_contains": AssertionType(
        "sync",
        tools.tool_output_contains,
        ("value",),
        summary="a call of tool T returned text X (`value: T:X`, case-insensitive)",
    ),
    "tool_input_contains": AssertionType(
        "sync",
        tools.tool_input_contains,
        ("value",),
        summary="a call of tool T was given X in its input (`value: T:X`)",
    ),
    "tool_input_not_contains": AssertionType(
        "sync",
        tools.tool_input_not_contains,
        ("value",),
        summary="no call of tool T was given X in its input (`value: T:X`)",
    ),
    "mock_hit": AssertionType(
        "sync",
        tools.mock_hit,
        ("value",),
        summary="the mock `value` was hit at least `threshold` times (default 1)",
    ),
    # ... closeness to a reference text ...
    "rouge_n_min": AssertionType(
        "sync",
        similarity.rouge_n_min,
        ("reference",),
        summary="ROUGE-N against `reference` at least `threshold` (0-1)",
    ),
    "levenshtein_max": AssertionType(
        "sync",
        similarity.levenshtein_max,
        ("reference", "value"),
        numeric_value=True,
        summary="edit distance to `reference` at most `value`",
    ),
    "bleu_min": AssertionType(
        "sync",
        similarity.bleu_min,
        ("reference",),
        summary="BLEU against `reference` at least `threshold` (0-1)",
    ),
    # ... a combination of checks, and the RAG judgements (skillab's judge scores them).
    "assert-set": AssertionType(
        "sync",
        None,
        ("children",),
        summary="`children` combined: `mode: all` (default) or `any`",
    ),
    "faithfulness": AssertionType(
        "judge",
        None,
        summary="the judge finds the output faithful to `reference`, else to the sample's context",
    ),
    "answer_relevancy": AssertionType(
        "judge",
        None,
        summary="the judge finds the output relevant to the prompt",
    ),
    "context_recall": AssertionType(
        "judge",
        None,
        summary="the judge finds the facts of `reference`, else of the context, in the output",
    ),
}
#: Types whose value must not be negative, and those whose value is a non-empty string.
NON_NEGATIVE = frozenset({"turns_max", "turns_min", "tools_count_max", "tools_count_min", "levenshtein_max"})
STRING_VALUE = frozenset(
    {"tool_output_contains", "tool_input_contains", "tool_input_not_contains", "mock_hit"}
)
#: The types the judge scores (each as the aspect ``<type>#<index>``), their threshold on its 1-5
#: scale; similarity types' thresholds are on 0-1.
JUDGED = frozenset(name for name, spec in ASSERTIONS.items() if spec.kind == "judge")
UNIT_THRESHOLD = frozenset({"rouge_n_min", "bleu_min"})
MAX_NESTING = 16

# How a field is spelled in the samples file, for error messages.
FIELD_NAMES = {"json_schema": "schema"}


def closest_type(name: str) -> str | None:
    matches = difflib.get_close_matches(name, list(ASSERTIONS), n=1, cutoff=0.5)
    return matches[0] if matches else None


def validate(a: Assertion, source_dir: str, depth: int = 0) -> None:
    """Raise ValueError ('field: problem') for anything that would fail at grading time."""
    spec = ASSERTIONS.get(a.type)
    if spec is None:
        hint = closest_type(a.type)
        raise InputError(
            f"type: unknown assertion type {a.type!r}" + (f" (did you mean {hint!r}?)" if hint else "")
        )
    for name in spec.required:
        if getattr(a, name) is None:
            raise InputError(f"{FIELD_NAMES.get(name, name)}: required for type {a.type!r}")
    if spec.numeric_value and (isinstance(a.value, bool) or not isinstance(a.value, numbers.Real)):
        raise InputError(f"value: type {a.type!r} needs a number, got {a.value!r}")
    if a.weight < 0:
        raise InputError(f"weight: must be >= 0, got {a.weight}")
    if a.type == "regex":
        text.compile_regex(str(a.pattern), a.flags)
    elif a.type == "json_schema":
        structured.check_schema(a.json_schema)
    elif a.type == "custom":
        custom.validate_file(custom.resolve(str(a.fn), source_dir))
    elif a.type == "assert-set":
        validate_set(a, source_dir, depth)
    _validate_extra(a)


def _validate_extra(a: Assertion) -> None:
    """The parameter rules of oh-my-knowledge's types (and the judged types' threshold scale)."""
    if a.type in NON_NEGATIVE and float(a.value) < 0:
        raise InputError(f"value: type {a.type!r} needs a number >= 0, got {a.value!r}")
    if a.type in STRING_VALUE and (not isinstance(a.value, str) or not a.value.strip()):
        raise InputError(f"value: type {a.type!r} needs a non-empty string, got {a.value!r}")
    if a.type == "mock_hit" and not re.fullmatch(r"[^:]+:[1-9]\d*", str(a.value)):
        raise InputError(f"value: mock_hit needs Tool:N (N from 1), got {a.value!r}")
    if a.type in {"tools_called", "tools_not_called"} and not a.values:
        raise InputError(f"values: type {a.type!r} needs at least one tool name")
    if a.reference is not None and a.type in UNIT_THRESHOLD | {"levenshtein_max"} and not a.reference.strip():
        raise InputError(f"reference: type {a.type!r} needs a non-empty reference")
    if a.n is not None and a.n < 1:
        raise InputError(f"n: must be a positive integer, got {a.n}")
    if a.threshold is not None:
        if a.type in JUDGED and not 1 <= a.threshold <= 5:
            raise InputError(f"threshold: must be between 1 and 5, got {a.threshold}")
        if a.type in UNIT_THRESHOLD and not 0 <= a.threshold <= 1:
            raise InputError(f"threshold: must be between 0 and 1, got {a.threshold}")


def validate_set(a: Assertion, source_dir: str, depth: int) -> None:
    """assert-set: a non-empty list of checks, each valid, none graded by the judge or custom code
    (oh-my-knowledge's rule: a set is decided at once, without an LLM), nested at most 16 deep."""
    if not a.children:
        raise InputError("children: assert-set needs at least one assertion")
    if depth + 1 >= MAX_NESTING:
        raise InputError(f"children: assert-set nested deeper than {MAX_NESTING} levels")
    for i, child in enumerate(a.children):
        spec = ASSERTIONS.get(child.type)
        if spec is not None and spec.kind != "sync":
            raise InputError(
                f"children: [{i}] {child.type!r} cannot be inside an assert-set (not deterministic)"
            )
        try:
            validate(child, source_dir, depth + 1)
        except InputError as exc:
            raise InputError(f"children: [{i}] {exc}") from None


def run_assertion(a: Assertion, obs: Observation) -> AssertionResult:
    """Run one deterministic or custom assertion. A check that raises is a failure with its message."""
    spec = ASSERTIONS[a.type]
    score: float | None = None
    try:
        if spec.kind == "custom":
            passed, message, score = custom.run_custom(a, obs)
        elif a.type == "assert-set":
            passed, message = assert_set(a, obs)
        elif spec.check is not None:
            passed, message = spec.check(a, obs)
        else:
            raise InputError(f"assertion {a.type!r} is graded by the judge")
    except Exception as exc:  # a grader bug or odd input must not crash the run
        passed, message = False, f"check raised {type(exc).__name__}: {exc}"
    return AssertionResult.of(a, passed, message, score)


def assert_set(a: Assertion, obs: Observation) -> tuple[bool, str]:
    """oh-my-knowledge's combinator: each child checked (its own ``not`` applied), then all of them
    (mode ``all``, the default) or at least one (``any``) must pass."""
    children = [run_assertion(child, obs) for child in a.children or ()]
    if not children:
        return False, "no assertion in the set"
    mode = a.mode or "all"
    passed = any(c.passed for c in children) if mode == "any" else all(c.passed for c in children)
    failed = [
        f"{c.assertion.type}: {c.message}" if c.message else c.assertion.type
        for c in children
        if not c.passed
    ]
    summary = f"{len(children) - len(failed)}/{len(children)} passed ({mode})"
    return passed, summary + (f"; failed: {'; '.join(failed)}" if failed else "")


def is_judged(a: Assertion) -> bool:
    return a.type in JUDGED
