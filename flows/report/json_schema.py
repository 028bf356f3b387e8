"""The report's JSON Schema, made from its models: ``python -m flows.report.json_schema`` writes
``flows/report/report.schema.json`` (a test checks that the file in the repository is current);
each field is described by the docstring written under it, read from its model's own module.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import sys
from pathlib import Path

from pydantic import BaseModel

from executors.parsing import JsonObject
from flows.report.schema import SCHEMA_FILE, reports_adapter
from graders.grades import Part
from tasks.stats.models import Model


def json_schema() -> JsonObject:
    """The report's JSON schema; a field described by the docstring under it gets that description."""
    schema = reports_adapter().json_schema(by_alias=True, mode="serialization")
    docs = docstrings()
    for model in report_models():
        # a generic part's name, CaseResult[SampleRun], is CaseResult_SampleRun_ in the schema
        part = schema["$defs"].get(re.sub(r"[^\w]", "_", model.__name__), {})
        origin = model.__pydantic_generic_metadata__["origin"]
        if part and origin is not None and origin.__doc__:
            part.setdefault("description", inspect.cleandoc(origin.__doc__))
        for name, field in model.model_fields.items():
            text = field_docstring(model, name, docs)
            prop = part.get("properties", {}).get(field.alias or name)
            if text and prop is not None and "description" not in prop:
                # where pydantic writes a description: just before the title (the file stays as it was)
                keys = list(prop)
                at = keys.index("title") if "title" in keys else len(keys)
                entries = [*prop.items()]
                prop.clear()
                prop.update([*entries[:at], ("description", text), *entries[at:]])
    return schema


def report_models() -> list[type[BaseModel]]:
    """Every report part: the subclasses of ``Model``, here, in the modes and where their figures are
    computed, and the grading parts a session's entry embeds (of the modules loaded: a class whose
    module was unloaded is no part)."""
    found: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [Model, Part]
    while todo:
        found += (children := todo.pop().__subclasses__())
        todo += children
    return [m for m in found if m.__module__ in sys.modules]


def docstrings() -> dict[str, dict[str, str]]:
    """Per report part: field name -> the docstring under it, read from the part's own module."""
    docs: dict[str, dict[str, str]] = {}
    for source in sorted({inspect.getsourcefile(m) or "" for m in report_models()}):
        docs |= field_docstrings(Path(source))
    return docs


def field_docstring(model: type[BaseModel], name: str, docs: dict[str, dict[str, str]]) -> str | None:
    """The docstring under the field ``name`` in ``model`` or the nearest base class that has one."""
    return next((text for base in model.__mro__ if (text := docs.get(base.__name__, {}).get(name))), None)


def field_docstrings(source: Path) -> dict[str, dict[str, str]]:
    """Per class defined in ``source``: field name -> the string literal written under the field."""
    docs: dict[str, dict[str, str]] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            docs[node.name] = {
                field.target.id: inspect.cleandoc(text.value.value)
                for field, text in itertools.pairwise(node.body)
                if isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(text, ast.Expr)
                and isinstance(text.value, ast.Constant)
                and isinstance(text.value.value, str)
            }
    return docs


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
