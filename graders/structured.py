"""JSON assertions: json_valid, and json_schema through the full-spec ``jsonschema`` package."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from executors.errors import InputError
from executors.parsing import JsonObject
from graders.schema import GradingError, JsonSchemaAssertion, JsonValidAssertion, Observation, Outcome
from graders.text import REGEX_TIMEOUT_S


def _parse(output: str) -> tuple[Any, str]:
    try:
        return json.loads(output), ""
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"


def json_valid(a: JsonValidAssertion, obs: Observation) -> Outcome:
    _, error = _parse(obs.output)
    return not error, error


def _search(pattern: str, text: str) -> bool:
    """A schema's regular expression, under the time budget of the ``regex`` assertion (the standard
    library's engine, which jsonschema uses, backtracks without a limit)."""
    import regex

    try:
        return regex.search(pattern, text, timeout=REGEX_TIMEOUT_S) is not None
    except TimeoutError:
        raise GradingError(f"the schema's pattern /{pattern}/ timed out after {REGEX_TIMEOUT_S:g}s") from None
    except regex.error as exc:
        raise GradingError(f"the schema's pattern /{pattern}/ cannot run: {exc}") from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: JsonObject, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "object"):
        for pattern, subschema in patterns.items():
            for key, value in instance.items():
                if _search(pattern, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@functools.cache
def _budgeted(draft: Any) -> Any:
    """A draft's validator class with the regex keywords under the time budget (made once per draft,
    not once per output graded)."""
    import jsonschema

    return jsonschema.validators.extend(
        draft, {"pattern": _pattern, "patternProperties": _pattern_properties}
    )


def json_schema(a: JsonSchemaAssertion, obs: Observation) -> Outcome:
    import jsonschema

    data, error = _parse(obs.output)
    if error:
        return False, error
    validator_cls = _budgeted(jsonschema.validators.validator_for(a.json_schema))
    errors = sorted(validator_cls(a.json_schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(root)"
        return False, f"{where}: {first.message}"
    return True, ""


def check_schema(schema: Any) -> None:
    """Raise ValueError when the schema itself is invalid (checked at load time)."""
    import jsonschema

    if not isinstance(schema, dict):
        raise InputError("schema must be an object")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InputError(f"invalid JSON schema: {exc.message}") from exc
    for ref in refs(schema):
        # grading must never fetch anything: only pointers into the schema itself
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise InputError(f"$ref {ref!r}: only local references (#/...) are allowed")


def refs(node: Any) -> list[Any]:
    """Every $ref value in a schema, at any depth."""
    stack, found = [node], []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "$ref" in item:
                found.append(item["$ref"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
