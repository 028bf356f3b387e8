"""Graders tested against known answers, before any model call.

A sample may carry a reference output: what a correct answer looks like; an agentic task a reference
solution, the folder of files a correct agent would leave (its checks are run on a copy of it, and on
the untouched start: a check that passes there is decided before the agent acts). Every deterministic grader of
the case (custom checks included) is run on it, and on mutants derived from it: the reference with
what the grader asserts removed or violated (a ``contains`` value deleted, a ``not_contains`` value
added, the text cut below a ``min_length``...) and the empty output. A grader that fails (or cannot
decide on) the reference, or that passes its own violation, cannot tell a right answer from a wrong
one: it is broken, and its results are left out of the run. One that passes the empty output and
has no derivable violation is untested: it may not read the output at all. Judged criteria need a
model call and are not tested here.

Samples here; agentic tasks in graders/task_validation.py (a sample run imports none of the agents').
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from executors.schema import Frozen
from graders.registry import is_judged, run_assertion
from graders.schema import Assertion, NumberAssertion, Observation, Sample
from graders.text import REGEX_TIMEOUT_S, compile_regex

GraderStatus = Literal["ok", "broken", "untested"]


class GraderFinding(Frozen):
    """One grader of one case, tried on the case's reference and its mutants."""

    case: str
    index: int  # 1-based, in the case's list of assertions
    type: str
    status: GraderStatus
    reason: str

    @property
    def grader(self) -> str:
        """The grader as every report names an assertion: ``case#N (type)``."""
        return f"{self.case}#{self.index} ({self.type})"


def broken_notices(findings: Sequence[GraderFinding]) -> list[str]:
    """What the user is told before the run about the graders left out."""
    return [
        f"grader {f.grader} is broken and left out of the run: {f.reason}"
        for f in findings
        if f.status == "broken"
    ]


def _drop(text: str, needles: Sequence[object]) -> str:
    for needle in needles:
        text = re.sub(re.escape(str(needle)), "", text, flags=re.IGNORECASE)
    return text


def _add(text: str, needles: Sequence[object]) -> str:
    return " ".join([text, *(str(n) for n in needles)])


def _values(a: Assertion) -> list[object]:
    values = getattr(a, "values", None)
    return list(values) if values is not None else [getattr(a, "value", "")]


def _regex_dropped(a: Assertion, text: str) -> str:
    return str(compile_regex(a.pattern, a.flags).sub("", text, timeout=REGEX_TIMEOUT_S))  # type: ignore[union-attr]


def _other(a: Assertion) -> str:
    """A word that neither starts nor ends like the assertion's value."""
    value = str(getattr(a, "value", "")).lower()
    return next(w for w in ("~", "#", "%") if not value.startswith(w) and not value.endswith(w))


def _count(a: Assertion) -> int:
    return int(float(a.value)) if isinstance(a, NumberAssertion) else 0


#: Per type, the reference made to break the assertion: what it asserts taken out, or its opposite
#: put in.
MUTANTS: dict[str, Callable[[Assertion, str], str]] = {
    "contains": lambda a, t: _drop(t, _values(a)),
    "contains_all": lambda a, t: _drop(t, _values(a)),
    "contains_any": lambda a, t: _drop(t, _values(a)),
    "regex": _regex_dropped,
    "not_contains": lambda a, t: _add(t, _values(a)),
    "starts_with": lambda a, t: _other(a) + " " + _drop(t, _values(a)),
    "ends_with": lambda a, t: _drop(t, _values(a)) + " " + _other(a),
    "equals": lambda a, t: _add(t, ["x"]),
    "not_equals": lambda a, t: str(getattr(a, "value", "")),
    "min_length": lambda a, t: t[: max(_count(a) - 1, 0)],
    "max_length": lambda a, t: t + "x" * (_count(a) + 1),
    "word_count_min": lambda a, t: " ".join(t.split()[: max(_count(a) - 1, 0)]),
    "word_count_max": lambda a, t: _add(t, ["word"] * (_count(a) + 1)),
    "json_valid": lambda a, t: t + " {",
    "json_schema": lambda a, t: "not json",
}
#: ``not: true`` on a presence type: the violation puts the values in (or, for not_contains, takes
#: them out); other negated types get no derived mutant.
NEGATED: dict[str, Callable[[Assertion, str], str]] = {
    "contains": MUTANTS["not_contains"],
    "contains_all": MUTANTS["not_contains"],
    "contains_any": MUTANTS["not_contains"],
    "not_contains": MUTANTS["contains"],
}


#: The longest text a mutant may grow to (a max_length of two billion is no reason to allocate it).
MUTANT_MAX_CHARS = 1_000_000


def violation(a: Assertion, reference: str) -> str | None:
    """The reference made to break ``a``, or None where no such mutant is derived (or it would be
    too long to build)."""
    mutate = (NEGATED if a.negate else MUTANTS).get(a.type)
    if mutate is None or len(reference) + _count(a) * 5 > MUTANT_MAX_CHARS:
        return None
    return mutate(a, reference)


def try_grader(sample: Sample, index: int, a: Assertion, reference: str) -> GraderFinding:
    """``a`` on the reference, on its violation and on the empty output."""

    def found(status: GraderStatus, reason: str) -> GraderFinding:
        return GraderFinding(
            case=sample.sample_id, index=index + 1, type=a.type, status=status, reason=reason
        )

    def run(output: str) -> tuple[bool, bool, str]:
        result = run_assertion(a, Observation(output=output, sample=sample))
        return result.passed, result.error, result.message

    passed, error, message = run(reference)
    if error:
        return found("broken", f"could not decide on the reference answer: {message}")
    if not passed:
        negated = " (with not: true the reference must not satisfy it)" if a.negate else ""
        return found("broken", f"fails the reference answer: {message or 'failed'}{negated}")
    try:
        mutant = violation(a, reference)
    except TimeoutError:
        mutant = None
    if mutant is not None and mutant != reference:
        passed, error, message = run(mutant)
        if passed and not error:
            return found("broken", "passes the reference with what it asserts removed: it cannot fail")
        return found("ok", "passes the reference, fails its violation")
    passed, error, message = run("")
    if error:
        return found("untested", f"passes the reference, could not decide on an empty output: {message}")
    if passed:
        return found("untested", "passes the reference and an empty output: it may not read the output")
    return found("ok", "passes the reference, fails an empty output")


def validate_samples(samples: Sequence[Sample]) -> list[GraderFinding]:
    """Every deterministic grader of every case that carries a reference output."""
    return [
        try_grader(s, i, a, s.reference_output)
        for s in samples
        if s.reference_output is not None
        for i, a in enumerate(s.assertions)
        if not is_judged(a)
    ]


def without_broken(samples: Sequence[Sample], findings: Sequence[GraderFinding]) -> list[Sample]:
    """The samples with their broken graders taken out (their results are not believed)."""
    broken = {(f.case, f.index) for f in findings if f.status == "broken"}
    if not broken:
        return list(samples)
    return [
        s.model_copy(
            update={
                "assertions": tuple(
                    a for i, a in enumerate(s.assertions) if (s.sample_id, i + 1) not in broken
                )
            }
        )
        if any(case == s.sample_id for case, _ in broken)
        else s
        for s in samples
    ]
