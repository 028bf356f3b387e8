"""Failure groups against hand-counted examples."""

from __future__ import annotations

from tasks.stats.diagnosis import Failure, content_words, group_failures


def test_groups_by_what_failed_largest_first() -> None:
    failures = [
        Failure("a", 1, (("assertion", "contains: Paris", "not found"), ("judge", "judge: rubric", "vague"))),
        Failure("a", 2, (("assertion", "contains: Paris", "not found"),)),
        Failure("b", 1, (("assertion", "contains: Paris", "missing"),)),
        Failure("c", 1, (("error", "error: timeout", "120 s"),)),
    ]
    groups = group_failures(failures, cases=5)
    assert [(g.key, g.cases, g.runs) for g in groups] == [
        ("contains: Paris", ["a", "b"], 3),
        ("error: timeout", ["c"], 1),
        ("judge: rubric", ["a"], 1),
    ]
    assert groups[0].share == 0.4 and groups[0].examples == ["not found", "missing"]


def test_judge_reasons_group_by_shared_words() -> None:
    failures = [
        Failure("a", 1, (), "Too verbose: the answer rambles past the question"),
        Failure("b", 1, (), "Verbose answer that rambles"),
        Failure("c", 1, (), "Wrong capital named"),
        Failure("d", 1, (), "The capital named is wrong"),
        Failure("e", 1, (), "Refused to answer"),
    ]
    groups = group_failures(failures, cases=5)
    # equal sizes: in the order of their names; the single "refused" reason is left out
    assert [(g.kind, g.cases) for g in groups] == [("reason", ["c", "d"]), ("reason", ["a", "b"])]
    assert groups[0].key == "judge says: capital named wrong"
    assert groups[1].key == "judge says: rambles verbose"
    assert content_words("The 3 answers: wrong!") == {"answers", "wrong"}


def test_the_error_group_is_never_cut() -> None:
    """Nine groups of one case each: the cut at eight keeps the runs that failed to execute."""
    failures = [Failure(c, 1, (("assertion", f"contains: {c}", "not found"),)) for c in "abcdefgh"]
    failures.append(Failure("z", 1, (("error", "error: timeout", "120 s"),)))
    keys = [g.key for g in group_failures(failures, cases=9)]
    assert len(keys) == 8 and "error: timeout" in keys
