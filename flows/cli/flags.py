"""Command-line flags generated from the options models: one flag per field, its help from the
field's description and its default from the model, so the two cannot drift apart.

Flags default to "not given" (argparse.SUPPRESS): only what the user typed overrides the config file.
"""

from __future__ import annotations

import argparse
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from flows.cli.codes import EXIT_USAGE


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the house format (one line, exit 2)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"skillab: error: {message} (see --help)\n")


def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _plain(annotation: Any) -> Any:
    """``X | None`` -> X."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _help(info: FieldInfo, negated: str | None = None) -> str:
    """The flag's help; for a ``--no-X`` flag, what it does (the description's "--no-X: ..." part),
    not what the setting it turns off does."""
    text = info.description or ""
    if negated is not None:
        marker = f"{negated}: "
        if marker not in text:
            raise ValueError(f"the description of {negated} must say what it does ('{marker}...')")
        return text.split(marker, 1)[1]
    default = info.get_default(call_default_factory=True)
    if default not in (None, (), False, True) and "default" not in text:
        shown = ",".join(default) if isinstance(default, tuple) else default
        text += f" (default: {shown})"
    return text


def add_field(group: argparse._ActionsContainer, name: str, info: FieldInfo) -> None:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    flag = str(extra.get("flag") or "--" + name.replace("_", "-"))  # a field may name its flag
    kind = _plain(info.annotation)
    common: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS, "help": _help(info)}
    if kind is bool:
        if info.default is True:
            negated = f"--no-{name.replace('_', '-')}"
            group.add_argument(negated, action="store_false", **common | {"help": _help(info, negated)})
        else:
            group.add_argument(flag, action="store_true", **common)
    elif get_origin(kind) is tuple and (info.json_schema_extra or {}).get("append"):  # type: ignore[union-attr]
        group.add_argument(flag, action="append", **common)
    elif get_origin(kind) is tuple:
        group.add_argument(flag, type=csv_list, metavar="A,B", **common)
    elif get_origin(kind) is Literal:
        group.add_argument(flag, choices=list(get_args(kind)), **common)
    elif kind in (int, float):
        group.add_argument(flag, type=kind, metavar="N" if kind is int else "X", **common)
    else:
        group.add_argument(flag, **common)


def add_model_flags(
    parser: argparse.ArgumentParser, model: type[BaseModel], groups: dict[str, tuple[str, ...]]
) -> set[str]:
    """One flag per named field, in titled groups; returns the fields that got a flag."""
    fields = model.model_fields
    done: set[str] = set()
    for title, names in groups.items():
        group = parser.add_argument_group(title) if title else parser
        for name in names:
            add_field(group, name, fields[name])
            done.add(name)
    return done
