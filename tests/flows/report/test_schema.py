"""The report's JSON Schema is generated from the models and kept in the repository."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from flows.report.json_schema import json_schema
from flows.report.schema import REPORT_VERSION, SCHEMA_FILE
from tests.report_files import invalid_reports


def test_schema_file_is_current() -> None:
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == json_schema(), (
        "regenerate it: python -m flows.report.json_schema"
    )


def test_a_report_that_breaks_the_schema_is_found() -> None:
    # Outside pytest's temporary folder: the session's own check would (rightly) reject this file.
    with tempfile.TemporaryDirectory() as tmp:
        bad = {"version": REPORT_VERSION, "id": "x", "mode": "sample", "meta": {"variants": "not a list"}}
        (Path(tmp) / "r.json").write_text(json.dumps(bad), encoding="utf-8")
        (Path(tmp) / "other.json").write_text("{}", encoding="utf-8")  # not a report: ignored
        problems = invalid_reports(Path(tmp))
    assert len(problems) == 1 and "r.json" in problems[0]


def test_every_part_and_field_of_the_report_is_described() -> None:
    import inspect

    from pydantic import BaseModel

    from flows.report import diagnosis_parts, entries, json_schema, schema

    modules = (schema, entries, diagnosis_parts)
    models = [
        obj
        for module in modules
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == module.__name__
    ] + json_schema.report_models()
    docs = json_schema.docstrings()
    # a generic part's parametrisation (CaseResult[SampleVariantResult]) has its origin's docstring
    origin = lambda m: m.__pydantic_generic_metadata__["origin"] or m  # noqa: E731
    undocumented = [m.__name__ for m in models if not origin(m).__doc__] + [
        f"{m.__name__}.{name}"
        for m in models
        for name, info in m.model_fields.items()
        if not (info.description or json_schema.field_docstring(m, name, docs))
    ]
    assert len(models) > 20 and not undocumented, undocumented
