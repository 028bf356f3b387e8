"""The base of every report part: JSON names generated from the Python names, so a figure is defined
once, as a model (tasks/stats/figures.py for what tasks/stats computes, flows/report/schema.py for the
rest), and the report's JSON keeps the names it always had."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal, NoReturn, get_args, get_origin

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


class SharedNames(set[str]):
    """The names of the fields a model set, one copy for every model that set the same ones
    (``FieldsSets``; pydantic-core wants a set). Not to be changed: assigning a field of one model,
    which would add its name to the set of all, fails loudly; a copy of the model (``model_copy``)
    gets a set of its own."""

    def __copy__(self) -> set[str]:
        return set(self)

    def _shared(self, *args: object) -> NoReturn:
        raise TypeError("these fields are shared with other report entries: model_copy(update=...) instead")

    def add(self, element: str, /) -> NoReturn:
        self._shared(element)

    def update(self, *others: Iterable[str]) -> NoReturn:
        self._shared(*others)

    def discard(self, element: object, /) -> NoReturn:
        self._shared(element)

    def remove(self, element: str, /) -> NoReturn:
        self._shared(element)

    def clear(self) -> NoReturn:
        self._shared()


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _models(values: Iterable[object]) -> Iterator[BaseModel]:
    return (v for v in values if type(v) not in _SCALARS and isinstance(v, BaseModel))


_NESTING: dict[type[BaseModel], tuple[str, ...]] = {}


def _nesting(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``cls`` that may hold models (itself, in a list or a dict), by their annotations,
    found once a class: a case's entry has 28 fields, 4 of which may."""
    names = _NESTING.get(cls)
    if names is None:
        names = _NESTING[cls] = tuple(n for n, f in cls.model_fields.items() if _may_hold_model(f.annotation))
    return names


def _may_hold_model(annotation: object) -> bool:
    """Whether a value so annotated may be or hold a model (where the annotation does not say: yes)."""
    origin = get_origin(annotation)
    if origin is Literal:
        return False
    if origin is not None:  # list[X], dict[K, V], X | None, ...
        return any(_may_hold_model(arg) for arg in get_args(annotation))
    if annotation in (Any, list, dict):  # anything (Any is a class since Python 3.11)
        return True
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return annotation is not None  # a type variable, a forward reference


class FieldsSets:
    """Pydantic keeps, per model, a set of the names it set (2 KB for a run entry's 22): ~40 MB over
    a report of 10,000 cases, where a few distinct sets serve them all. ``share`` each model as it is
    made (a whole report's sets at once would be the peak they are meant to cut)."""

    def __init__(self) -> None:
        self.seen: dict[frozenset[str], SharedNames] = {}
        self.last: dict[type[BaseModel], SharedNames] = {}  # most models of a class set the same names

    def share(self, model: BaseModel) -> None:
        """``model``'s set, and its nested models' sets, one shared copy each."""
        stack = [model]
        while stack:
            model = stack.pop()
            cls, names = type(model), model.__pydantic_fields_set__
            if type(names) is not SharedNames:
                shared = self.last.get(cls)
                if shared is None or names != shared:  # compared in place: no new set to hash
                    key = frozenset(names)
                    if (shared := self.seen.get(key)) is None:
                        shared = self.seen[key] = SharedNames(names)
                    self.last[cls] = shared
                object.__setattr__(model, "__pydantic_fields_set__", shared)
            fields = model.__dict__
            for name in _nesting(cls):
                value: Any = fields.get(name)  # absent only from a model made without validation
                kind = type(value)  # most values are text and numbers: BaseModel's isinstance is an ABC's
                if kind in _SCALARS:
                    continue
                if kind is list:
                    stack.extend(_models(value))
                elif kind is dict:
                    stack.extend(_models(value.values()))
                elif isinstance(value, BaseModel):
                    stack.append(value)
