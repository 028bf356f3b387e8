from __future__ import annotations

import pytest

from graders.registry import parse, run_assertion
from graders.schema import Observation

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1}}, "required": ["score"]}


def run(output: str, **fields):
    a = parse(fields, ".")
    return run_assertion(a, Observation(output=output))


def test_json_valid() -> None:
    assert run(' {"a": [1, 2]} ', type="json_valid").passed
    bad = run("{'a': 1}", type="json_valid")
    assert not bad.passed and "line 1" in bad.message


def test_json_schema_full_spec() -> None:
    assert run('{"score": 3}', type="json_schema", schema=SCHEMA).passed
    missing = run('{"other": 3}', type="json_schema", schema=SCHEMA)
    assert not missing.passed and "'score' is a required property" in missing.message
    low = run('{"score": 0}', type="json_schema", schema=SCHEMA)
    assert not low.passed and low.message.startswith("score:")
    assert not run("not json", type="json_schema", schema=SCHEMA).passed


def test_invalid_schema_fails_at_load() -> None:
    with pytest.raises(ValueError, match="invalid JSON schema"):
        parse({"type": "json_schema", "schema": {"type": "no-such-type"}}, ".")
