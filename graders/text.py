"""Text assertions, with the seed's exact semantics: substring checks ignore case, equals trims."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from executors.errors import InputError
from graders.schema import (
    GradingError,
    ListAssertion,
    NumberAssertion,
    Observation,
    Outcome,
    RegexAssertion,
    TextAssertion,
)

# JavaScript regex flags (the seed's format) by the regex module's names; g, u and y change nothing
# for a test.
REGEX_FLAGS = {"i": "IGNORECASE", "m": "MULTILINE", "s": "DOTALL", "g": "", "u": "", "y": ""}
#: A pattern such as ^(a+)+$ backtracks for ever on 200 characters: every match has this budget.
REGEX_TIMEOUT_S = 1.0


def compile_regex(pattern: str, flags: str | None) -> Any:
    """Compile with the seed's default flags "i" (a ``regex.Pattern``); raises InputError naming a bad
    flag or pattern. The regex module is imported here: 40 ms of every start otherwise, for a kind of
    assertion many suites do not use."""
    import regex as engine

    value = 0
    for flag in "i" if flags is None else flags:
        if flag not in REGEX_FLAGS:
            raise InputError(f"unknown regex flag {flag!r} (use i, m, s)")
        value |= getattr(engine, REGEX_FLAGS[flag]) if REGEX_FLAGS[flag] else 0
    try:
        return engine.compile(pattern, value | engine.VERSION0)
    except engine.error as exc:
        raise InputError(f"bad regex {pattern!r}: {exc}") from exc


def _has(output: str, needle: object) -> bool:
    return str(needle).lower() in output.lower()


def contains(a: TextAssertion, obs: Observation) -> Outcome:
    ok = _has(obs.output, a.value)
    return ok, "" if ok else f"missing {a.value!r}"


def not_contains(a: TextAssertion, obs: Observation) -> Outcome:
    ok = not _has(obs.output, a.value)
    return ok, "" if ok else f"contains {a.value!r}"


def regex(a: RegexAssertion, obs: Observation) -> Outcome:
    try:
        ok = compile_regex(a.pattern, a.flags).search(obs.output, timeout=REGEX_TIMEOUT_S) is not None
    except TimeoutError:
        raise GradingError(
            f"/{a.pattern}/ timed out after {REGEX_TIMEOUT_S:g}s (catastrophic backtracking)"
        ) from None
    return ok, "" if ok else f"no match for /{a.pattern}/{a.flags if a.flags is not None else 'i'}"


def starts_with(a: TextAssertion, obs: Observation) -> Outcome:
    ok = obs.output.lower().startswith(str(a.value).lower())
    return ok, "" if ok else f"starts with {obs.output[:30]!r}"


def ends_with(a: TextAssertion, obs: Observation) -> Outcome:
    ok = obs.output.lower().endswith(str(a.value).lower())
    return ok, "" if ok else f"ends with {obs.output[-30:]!r}"


def equals(a: TextAssertion, obs: Observation) -> Outcome:
    ok = obs.output.strip() == str(a.value).strip()
    return ok, "" if ok else f"got {obs.output.strip()[:60]!r}"


def not_equals(a: TextAssertion, obs: Observation) -> Outcome:
    ok = obs.output.strip() != str(a.value).strip()
    return ok, "" if ok else "output equals the value"


def word_count(text: str) -> int:
    return len(text.split())


def _bound(
    measure: Callable[[str], int], at_most: bool, told: str
) -> Callable[[NumberAssertion, Observation], Outcome]:
    """A check of the output's size (``measure``) against ``value``: at least, or at most."""

    def check(a: NumberAssertion, obs: Observation) -> Outcome:
        n = measure(obs.output)
        return (n <= float(a.value) if at_most else n >= float(a.value)), told.format(n)

    return check


min_length = _bound(len, False, "length {}")
max_length = _bound(len, True, "length {}")
word_count_min = _bound(word_count, False, "{} words")
word_count_max = _bound(word_count, True, "{} words")


def contains_all(a: ListAssertion, obs: Observation) -> Outcome:
    missing = [v for v in a.values or () if not _has(obs.output, v)]
    return not missing, f"missing {missing}" if missing else ""


def contains_any(a: ListAssertion, obs: Observation) -> Outcome:
    found = [v for v in a.values or () if _has(obs.output, v)]
    return bool(found), f"found {found}" if found else "none found"
