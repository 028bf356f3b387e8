"""The one table of assertion types, and the dispatcher that validates, runs, weights and negates.

Negation (``"not": true``) and weight are applied here once, never inside a check.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from executors.errors import InputError
from graders import custom, metrics, structured, text
from graders.schema import Assertion, AssertionResult, Observation

Check = Callable[[Assertion, Observation], tuple[bool, str]]
Kind = Literal["sync", "custom", "judge"]


@dataclass(frozen=True)
class AssertionType:
    kind: Kind
    check: Check | None
    required: tuple[str, ...] = ()
    numeric_value: bool = False


ASSERTIONS: dict[str, AssertionType] = {
    "contains": AssertionType("sync", text.contains, ("value",)),
    "not_contains": AssertionType("sync", text.not_contains, ("value",)),
    "regex": AssertionType("sync", text.regex, ("pattern",)),
    "min_length": AssertionType("sync", text.min_length, ("value",), numeric_value=True),
    "max_length": AssertionType("sync", text.max_length, ("value",), numeric_value=True),
    "json_valid": AssertionType("sync", structured.json_valid),
    "json_schema": AssertionType("sync", structured.json_schema, ("json_schema",)),
    "starts_with": AssertionType("sync", text.starts_with, ("value",)),
    "ends_with": AssertionType("sync", text.ends_with, ("value",)),
    "equals": AssertionType("sync", text.equals, ("value",)),
    "not_equals": AssertionType("sync", text.not_equals, ("value",)),
    "word_count_min": AssertionType("sync", text.word_count_min, ("value",), numeric_value=True),
    "word_count_max": AssertionType("sync", text.word_count_max, ("value",), numeric_value=True),
    "contains_all": AssertionType("sync", text.contains_all, ("values",)),
    "contains_any": AssertionType("sync", text.contains_any, ("values",)),
    "cost_max": AssertionType("sync", metrics.cost_max, ("value",), numeric_value=True),
    "latency_max": AssertionType("sync", metrics.latency_max, ("value",), numeric_value=True),
    "semantic_similarity": AssertionType("judge", None, ("reference",)),
    "custom": AssertionType("custom", None, ("fn",)),
}

# How a field is spelled in the samples file, for error messages.
FIELD_NAMES = {"json_schema": "schema"}


def closest_type(name: str) -> str | None:
    matches = difflib.get_close_matches(name, list(ASSERTIONS), n=1, cutoff=0.5)
    return matches[0] if matches else None


def validate(a: Assertion, source_dir: str) -> None:
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
    elif a.type == "semantic_similarity" and a.threshold is not None and not 1 <= a.threshold <= 5:
        raise InputError(f"threshold: must be between 1 and 5, got {a.threshold}")


def run_assertion(a: Assertion, obs: Observation) -> AssertionResult:
    """Run one deterministic or custom assertion. A check that raises is a failure with its message."""
    spec = ASSERTIONS[a.type]
    score: float | None = None
    try:
        if spec.kind == "custom":
            passed, message, score = custom.run_custom(a, obs)
        elif spec.check is not None:
            passed, message = spec.check(a, obs)
        else:
            raise InputError(f"assertion {a.type!r} is graded by the judge")
    except Exception as exc:  # a grader bug or odd input must not crash the run
        passed, message = False, f"check raised {type(exc).__name__}: {exc}"
    if a.negate:
        passed = not passed
        message = f"negated: {message}" if message else "negated"
    return AssertionResult(assertion=a, passed=passed, message=message, score=score)


def is_judged(a: Assertion) -> bool:
    return ASSERTIONS[a.type].kind == "judge"
