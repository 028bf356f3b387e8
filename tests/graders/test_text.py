"""Every deterministic assertion type, with the seed's semantics, weight and negation."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import TypeAdapter

from graders.registry import ASSERTIONS, parse, run_assertion
from graders.schema import Assertion, NumberAssertion, Observation

OUT = "The Answer is SQL injection; use parameterized queries."


def check(output: str = OUT, cost: float = 0.0, latency: float = 0.0, **fields: object) -> bool:
    a = parse(fields, ".")
    return run_assertion(a, Observation(output=output, cost_usd=cost, latency_ms=latency)).passed


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"type": "contains", "value": "sql INJECTION"}, True),  # case-insensitive
        ({"type": "contains", "value": "XSS"}, False),
        ({"type": "not_contains", "value": "looks good"}, True),
        ({"type": "not_contains", "value": "answer"}, False),
        ({"type": "regex", "pattern": "param\\w+"}, True),
        ({"type": "regex", "pattern": "^the answer"}, True),  # default flags "i"
        ({"type": "regex", "pattern": "^the answer", "flags": ""}, False),  # no flags: case matters
        ({"type": "regex", "pattern": "^use", "flags": "im"}, False),
        ({"type": "min_length", "value": 10}, True),
        ({"type": "min_length", "value": 1000}, False),
        ({"type": "max_length", "value": len(OUT)}, True),
        ({"type": "max_length", "value": len(OUT) - 1}, False),
        ({"type": "starts_with", "value": "the answer"}, True),
        ({"type": "starts_with", "value": "answer"}, False),
        ({"type": "ends_with", "value": "QUERIES."}, True),
        ({"type": "ends_with", "value": "queries"}, False),
        ({"type": "word_count_min", "value": 8}, True),
        ({"type": "word_count_min", "value": 9}, False),
        ({"type": "word_count_max", "value": 8}, True),
        ({"type": "word_count_max", "value": 7}, False),
        ({"type": "contains_all", "values": ["sql", "PARAMETERIZED"]}, True),
        ({"type": "contains_all", "values": ["sql", "xss"]}, False),
        ({"type": "contains_any", "values": ["xss", "sql"]}, True),
        ({"type": "contains_any", "values": ["xss", "csrf"]}, False),
    ],
)
def test_text_assertions(fields: dict, expected: bool) -> None:
    assert check(**fields) is expected


def test_equals_trims_but_respects_case() -> None:
    assert check("  Paris \n", type="equals", value="Paris")
    assert not check("paris", type="equals", value="Paris")
    assert check("Rome", type="not_equals", value="Paris")
    assert not check(" Paris", type="not_equals", value="Paris ")


def test_cost_and_latency() -> None:
    assert check(cost=0.009, type="cost_max", value=0.01)
    assert not check(cost=0.011, type="cost_max", value=0.01)
    assert check(latency=1999, type="latency_max", value=2000)
    assert not check(latency=2001, type="latency_max", value=2000)


def test_negation_is_applied_once_and_keeps_reason() -> None:
    a = parse({"type": "contains", "value": "XSS", "not": True}, ".")
    result = run_assertion(a, Observation(output=OUT))
    assert result.passed and result.message.startswith("negated: missing")
    negated = parse({"type": "not_contains", "value": "answer", "not": True}, ".")
    assert run_assertion(negated, Observation(output=OUT)).passed


def test_a_check_that_raises_is_a_failed_assertion() -> None:
    # A value no check can compare with (parsing would refuse it; a grader bug could still make one):
    # the dispatcher turns the exception into a failure.
    odd = NumberAssertion.model_construct(type="min_length", value="ten", weight=1.0, negate=False)  # type: ignore[arg-type]
    result = run_assertion(odd, Observation(output="x"))
    assert not result.passed and "raised" in result.message


def test_weight_is_recorded_in_details() -> None:
    result = run_assertion(
        parse(dict(type="contains", value="sql", weight=0.5), "."), Observation(output=OUT)
    )
    assert result.detail() == {"type": "contains", "value": "sql", "weight": 0.5, "passed": True}


def test_registry_has_the_seeds_19_types_and_oh_my_knowledges_36() -> None:
    # the seed: 17 deterministic + semantic_similarity + custom; oh-my-knowledge 0.54: 31 + 5
    assert len(ASSERTIONS) == 36
    assert {"contains", "latency_max", "semantic_similarity", "custom", "assert-set", "bleu_min"} <= set(
        ASSERTIONS
    )


def test_every_type_has_its_own_parameter_model_in_the_union() -> None:
    # The registry and the discriminated union name the same types, each with the model that parses it.
    tags: dict[str, type] = {}
    for model in get_args(get_args(Assertion)[0]):
        for tag in get_args(model.model_fields["type"].annotation):
            assert tag not in tags, tag
            tags[tag] = model
    assert tags == {name: spec.model for name, spec in ASSERTIONS.items()}
    for name, spec in ASSERTIONS.items():
        assert spec.summary and (spec.check is not None or spec.kind != "sync"), name
        parsed = TypeAdapter(Assertion).validate_python({"type": name} | EXAMPLES.get(name, {"value": 1}))
        assert type(parsed) is spec.model


def _same(names: str, fields: dict[str, object]) -> dict[str, dict[str, object]]:
    return {name: fields for name in names.split()}


EXAMPLES: dict[str, dict[str, object]] = {
    "regex": {"pattern": "a"},
    "json_schema": {"schema": {}},
    "semantic_similarity": {"reference": "r"},
    "custom": {"fn": "check.py"},
    "assert-set": {"children": [{"type": "json_valid"}]},
    "levenshtein_max": {"reference": "r", "value": 1},
    "mock_hit": {"value": "Bash:1"},
    **_same("rouge_n_min bleu_min", {"reference": "r"}),
    **_same("contains_all contains_any tools_called tools_not_called", {"values": ["x"]}),
    **_same("tool_output_contains tool_input_contains tool_input_not_contains", {"value": "T:x"}),
    **_same("faithfulness answer_relevancy context_recall json_valid", {}),
}
