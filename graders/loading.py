"""Reading a user's file: UTF-8 text, then JSON or YAML by extension, with the line of a syntax error;
duplicate keys, alias bombs and nesting too deep for the parser refused with one line. Every loader
of every layer (samples, options, configs, queries, deployments) goes through here."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from executors.errors import InputError


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None


MAX_ALIASES = 100  # a "billion laughs" file expands exponentially through its aliases


class StrictLoader(yaml.SafeLoader):
    """YAML that refuses duplicate keys (the later one silently won) and alias bombs."""

    aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases (*name): refused")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the constructor reports it
            if key in seen:
                raise yaml.YAMLError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicate = next((k for k in keys if keys.count(k) > 1), None)
    if duplicate is not None:
        raise ValueError(f"duplicate key {duplicate!r}")
    return dict(pairs)


def parse_data(path: Path, text: str) -> Any:
    """JSON or YAML by extension; a syntax error names its line; duplicate keys are errors."""
    try:
        if path.suffix == ".json":
            return json.loads(text, object_pairs_hook=_unique_keys)
        return yaml.load(text, Loader=StrictLoader)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # a duplicate key in JSON
        raise InputError(f"{path}: invalid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: {line}invalid YAML: {problem}") from None


def closest(name: str, options: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
