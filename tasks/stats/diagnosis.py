"""Failure diagnosis: a variant's failing runs grouped by what failed and by the judge's reasons.

Pure functions. A run belongs to every group of what failed in it (an assertion, a sandbox check, a
judge criterion, an error); runs with a judge reason are also grouped by reason: reasons whose
content words overlap (at least half of the shorter reason's words, with the group's first reason)
fall in one group, named by the words most of them share.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from tasks.stats.models import Model

MAX_GROUPS = 8
EXAMPLES = 3
REASON_SIMILARITY = 0.5
#: What a failure group is of: an assertion, a sandbox check, a judge criterion, an error, a reason.
FailureKind = Literal["assertion", "check", "judge", "error", "reason"]
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "but",
        "not",
        "for",
        "with",
        "this",
        "that",
        "from",
        "into",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "its",
        "it's",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "does",
        "did",
        "doing",
        "answer",
        "response",
        "output",
        "model",
        "should",
        "would",
        "could",
        "which",
        "what",
        "when",
        "while",
        "also",
        "only",
        "very",
        "more",
        "most",
        "less",
        "some",
        "any",
        "all",
        "one",
        "two",
    ]
)


@dataclass(frozen=True)
class Failure:
    """One failing run: what failed in it as (kind, key, message), and the judge's reason if any."""

    sample_id: str
    run: int
    what: tuple[tuple[FailureKind, str, str], ...]
    reason: str | None = None


@dataclass
class _Group:
    kind: FailureKind
    key: str
    cases: set[str] = field(default_factory=set)
    runs: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, failure: Failure, example: str | None) -> None:
        self.cases.add(failure.sample_id)
        self.runs += 1
        if example and example not in self.examples and len(self.examples) < EXAMPLES:
            self.examples.append(example[:300])


def content_words(text: str) -> frozenset[str]:
    words = re.findall(r"[a-z][a-z'-]{2,}", text.lower())
    return frozenset(w for w in words if w not in STOPWORDS)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The overlap coefficient: a short reason inside a longer one counts as the same reason."""
    return len(a & b) / min(len(a), len(b)) if a and b else float(a == b)


def reason_groups(failures: list[Failure]) -> list[_Group]:
    """Leader clustering of the judge's reasons, in a fixed order (so the groups are reproducible)."""
    leaders: list[tuple[frozenset[str], _Group, Counter[str]]] = []
    for f in sorted(failures, key=lambda f: (f.sample_id, f.run)):
        if not f.reason or not f.reason.strip():
            continue
        words = content_words(f.reason)
        match = next((lead for lead in leaders if _overlap(lead[0], words) >= REASON_SIMILARITY), None)
        if match is None:
            match = (words, _Group("reason", ""), Counter())
            leaders.append(match)
        match[1].add(f, f.reason)
        match[2].update(words)
    out = []
    for words, group, counts in leaders:
        ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))  # sets iterate in hash order
        shared = [w for w, c in ranked if c > group.runs / 2][:5] or sorted(words)[:5]
        group.key = "judge says: " + (" ".join(shared) or "(no words)")
        out.append(group)
    return out


def _size(g: _Group) -> tuple[int, int, str, str]:
    """Largest first (cases, then runs), then by name."""
    return (-len(g.cases), -g.runs, g.kind, g.key)


class FailureGroup(Model):
    """Failing runs of one variant that share what failed (or the judge's reason)."""

    key: str = Field(description="what failed, e.g. 'assertion contains: Paris' or 'judge: rubric'")
    kind: FailureKind = Field(description="the kind of failure")
    cases: list[str] = Field(description="the cases concerned")
    runs: int = Field(description="failing runs in the group")
    share: float = Field(description="cases in the group / cases of the variant")
    examples: list[str] = Field(default_factory=list, description="messages or judge reasons, up to 3")
    suggestion: str | None = Field(
        default=None, description="an LLM's paragraph on what went wrong and what to change: a suggestion"
    )
    suggestion_by: str | None = Field(default=None, description="the model that wrote it")


def group_failures(failures: list[Failure], cases: int, max_groups: int = MAX_GROUPS) -> list[FailureGroup]:
    """The groups, largest first: by what failed, then by reason; each with its cases and share."""
    by_what: dict[tuple[str, str], _Group] = {}
    for f in sorted(failures, key=lambda f: (f.sample_id, f.run)):
        for kind, key, message in f.what:
            by_what.setdefault((kind, key), _Group(kind, key)).add(f, message)
    # runs that failed to execute are always among the groups kept: a cut at max_groups among groups of
    # equal size must never hide them; the groups kept are shown largest first
    kept = sorted(by_what.values(), key=lambda g: (g.kind != "error", *_size(g)))[:max_groups]
    ordered = sorted(kept, key=_size)
    reasons = sorted(reason_groups(failures), key=lambda g: (-len(g.cases), -g.runs, g.key))
    # a reason shared by a single run says little: keep reason groups of two runs or more
    chosen = ordered + [g for g in reasons if g.runs >= 2][: max(2, max_groups // 2)]
    return [
        FailureGroup(
            key=g.key,
            kind=g.kind,
            cases=sorted(g.cases),
            runs=g.runs,
            share=len(g.cases) / cases if cases else 0.0,
            examples=g.examples,
        )
        for g in chosen
    ]
