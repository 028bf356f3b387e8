"""Graders tried on a case's reference answer and on the mutants derived from it, with no model call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graders.registry import parse
from graders.schema import Sample
from graders.validation import validate_samples, violation, without_broken


def sample(reference: str | None, *assertions: dict[str, Any], folder: Path = Path(".")) -> Sample:
    return Sample(
        sample_id="s",
        prompt="What is the capital of France?",
        reference_output=reference,
        assertions=tuple(parse(a, str(folder)) for a in assertions),
        source_dir=str(folder),
    )


def statuses(s: Sample) -> list[tuple[str, str]]:
    return [(f.name, f.status) for f in validate_samples([s])]


def test_sound_graders_pass_the_reference_and_fail_their_violation() -> None:
    s = sample(
        "Paris is the capital.",
        {"type": "contains", "value": "paris"},
        {"type": "not_contains", "value": "London"},
        {"type": "regex", "pattern": r"\bcapital\b"},
        {"type": "contains_all", "values": ["Paris", "capital"]},
        {"type": "word_count_max", "value": 6},
        {"type": "word_count_min", "value": 2},
        {"type": "min_length", "value": 5},
        {"type": "max_length", "value": 40},
        {"type": "starts_with", "value": "Paris"},
        {"type": "contains", "value": "Rome", "not": True},
    )
    assert {status for _, status in statuses(s)} == {"ok"}


def test_a_regex_that_can_never_match_is_broken() -> None:
    findings = validate_samples([sample("Paris", {"type": "regex", "pattern": "x^"})])
    assert [f.status for f in findings] == ["broken"]
    assert findings[0].name == "s#1 (regex)" and "fails the reference answer" in findings[0].reason


def test_a_grader_that_cannot_fail_is_broken() -> None:
    # matches the empty string, so it matches whatever is left once its matches are removed
    findings = validate_samples([sample("Paris", {"type": "regex", "pattern": "P*"})])
    assert [f.status for f in findings] == ["broken"] and "cannot fail" in findings[0].reason
    assert violation(parse({"type": "contains", "value": "par"}, "."), "Paris, PARIS") == "is, IS"


def test_a_custom_check_is_tried_confined_and_one_that_raises_is_broken(tmp_path: Path) -> None:
    (tmp_path / "any.py").write_text("def check(output, ctx):\n    return True\n")
    (tmp_path / "boom.py").write_text("def check(output, ctx):\n    raise ValueError('bad check')\n")
    s = sample(
        "Paris", {"type": "custom", "fn": "any.py"}, {"type": "custom", "fn": "boom.py"}, folder=tmp_path
    )
    found = validate_samples([s])
    assert [f.status for f in found] == ["untested", "broken"]
    assert "bad check" in found[1].reason and "could not decide" in found[1].reason


def test_broken_graders_are_taken_out_and_cases_without_reference_are_not_tried() -> None:
    broken = sample("Paris", {"type": "contains", "value": "Paris"}, {"type": "regex", "pattern": "x^"})
    bare = sample(None, {"type": "regex", "pattern": "x^"})
    findings = validate_samples([broken, bare])
    assert [f.name for f in findings] == ["s#1 (contains)", "s#2 (regex)"]
    kept = without_broken([broken], findings)
    assert [a.type for a in kept[0].assertions] == ["contains"]


@pytest.mark.parametrize("judged", [{"type": "faithfulness"}, {"type": "answer_relevancy"}])
def test_judged_criteria_need_a_model_and_are_not_tried(judged: dict[str, Any]) -> None:
    assert validate_samples([sample("Paris", judged)]) == []


def test_a_numeric_reference_in_yaml_is_its_text() -> None:
    assert (
        Sample.model_validate({"sample_id": "s", "prompt": "p", "reference_output": 100}).reference_output
        == "100"
    )
