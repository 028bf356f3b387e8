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
from executors.parsing import JsonObject, load_json, load_yaml


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> JsonObject:
    keys = [k for k, _ in pairs]
    duplicate = next((k for k in keys if keys.count(k) > 1), None)
    if duplicate is not None:
        raise ValueError(f"duplicate key {duplicate!r}")
    return dict(pairs)


def parse_data(path: Path, text: str) -> Any:
    """JSON or YAML by extension; a syntax error names its line; duplicate keys are errors."""
    try:
        if path.suffix == ".json":
            return load_json(text, object_pairs_hook=_unique_keys)
        return load_yaml(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # a duplicate key in JSON, or nesting too deep
        raise InputError(f"{path}: invalid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: {line}invalid YAML: {problem}") from None


def closest(name: str, options: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
