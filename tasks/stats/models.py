"""The base of every report part: JSON names generated from the Python names, so a figure is defined
once, as a model (tasks/stats/figures.py for what tasks/stats computes, flows/report/schema.py for the
rest), and the report's JSON keeps the names it always had."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

#: The JSON names the alias generators cannot spell (an acronym, a symbol, a keyword of Python).
SPELLED = {
    "cost_usd": "costUSD",
    "avg_cost_usd": "avgCostUSD",
    "total_cost_usd": "totalCostUSD",
    "judge_cost_usd": "judgeCostUSD",
    "uncached_usd": "uncachedUSD",
    "actual_usd": "actualUSD",
    "saved_usd": "savedUSD",
    "alpha_ci95": "alphaCI95",
    "composite_ci95": "compositeCI95",
    "pass_at_k": "pass@k",
    "pass_hat_k": "pass^k",
    "json_schema": "schema",
    "negate": "not",
}


def json_name(name: str) -> str:
    """A field's JSON name in the report: camelCase (the seed's report), but for ``SPELLED``."""
    return SPELLED.get(name) or to_camel(name)


class Model(BaseModel):
    """Report parts: JSON names are the aliases, generated (``json_name``); unknown keys are refused so
    the schema is complete.

    The docstring under a field is its description in the JSON schema, added there by
    ``flows.report.json_schema.json_schema`` (pydantic's ``use_attribute_docstrings`` reads the module's
    source at import: 0.3-0.4 s of every command, for a text only the schema file shows)."""

    model_config = ConfigDict(
        populate_by_name=True, extra="forbid", serialize_by_alias=True, alias_generator=json_name
    )


class Figures(Model):
    """Report parts whose JSON names are their Python names (the statistics, as computed), but for the
    spellings of ``SPELLED``."""

    model_config = ConfigDict(alias_generator=lambda n: SPELLED.get(n, n))
