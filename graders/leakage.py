"""Leakage lint: a case that already holds the artifact's own words tests recall of the artifact, not
whether it helps. Checked before any call; each finding is a warning naming the case, the field and
the words, never an error (a quoted API name can be legitimate; the reader decides).

- A sample's prompt, context or expected text (an assertion's value or reference) that repeats a long
  verbatim run of a variant's artifact (``ARTIFACT_WORDS`` words or more).
- An agentic task's prompt that repeats a long run of SKILL.md.
- A trigger query that repeats a run of a skill's description (``DESCRIPTION_WORDS`` words or more):
  it measures whether the model matches the description's wording, not whether it routes an ask.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: A verbatim run this long from an artifact is its text, not a coincidence of phrasing.
ARTIFACT_WORDS = 12
#: Descriptions are a sentence or two: a shorter run of their words already gives the answer away.
DESCRIPTION_WORDS = 6
#: Words of a span shown in a warning.
SHOWN_WORDS = 16

WORD = re.compile(r"\w[\w'-]*")  # a word starts with a letter or digit (a --- rule is none)


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def shared_run(text: str, source: str, min_words: int) -> list[str] | None:
    """The longest run of ``min_words`` or more consecutive words of ``source`` found in ``text``
    (case and punctuation aside), or None."""
    have, want = words(text), words(source)
    if len(have) < min_words or len(want) < min_words:
        return None
    starts: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(want) - min_words + 1):
        starts.setdefault(tuple(want[i : i + min_words]), []).append(i)
    best: list[str] | None = None
    i = 0
    while i <= len(have) - min_words:
        length = 0
        for j in starts.get(tuple(have[i : i + min_words]), []):
            n = min_words
            while i + n < len(have) and j + n < len(want) and have[i + n] == want[j + n]:
                n += 1
            length = max(length, n)
        if length and (best is None or length > len(best)):
            best = have[i : i + length]
        i += max(length - min_words + 1, 1)  # a run found is not found again from inside it
    return best


def shown(run: list[str]) -> str:
    more = " ..." if len(run) > SHOWN_WORDS else ""
    return '"' + " ".join(run[:SHOWN_WORDS]) + more + '"'


def leak(where: str, what: str, run: list[str] | None) -> str | None:
    if run is None:
        return None
    return f"leakage: {where} repeats {len(run)} words of {what}: {shown(run)}"


def case_leaks(
    cases: Iterable[tuple[str, str]], sources: Iterable[tuple[str, str]], min_words: int
) -> list[str]:
    """One warning per (case field, source) that share a verbatim run: ``cases`` as (where, text),
    e.g. ("sample s3: prompt", ...); ``sources`` as (what, text), e.g. ("variant v2's artifact", ...)."""
    named = [(what, text) for what, text in sources if text]
    out = []
    for where, text in cases:
        for what, source in named:
            if (line := leak(where, what, shared_run(text, source, min_words))) is not None:
                out.append(line)
    return out


def sample_fields(
    sample_id: str,
    prompt: str,
    context: str | None,
    expected: Iterable[object],
    reference: str | None = None,
) -> list[tuple[str, str]]:
    """A sample's texts the lint reads: its prompt, its context, its reference answer, and the
    expected texts of its assertions (a value or a reference that is text)."""
    fields = [(f"sample {sample_id}: prompt", prompt)]
    if context:
        fields.append((f"sample {sample_id}: context", context))
    if reference:
        fields.append((f"sample {sample_id}: reference output", reference))
    for i, value in enumerate(expected, 1):
        if isinstance(value, str):
            fields.append((f"sample {sample_id}: assertion {i}", value))
    return fields
