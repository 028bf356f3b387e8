"""Reading the user's files: text, JSON or YAML with the line of a syntax error, and pydantic errors
as one line each naming the file, the case and the field. Every loader of flows/inputs (and the
deployments file) goes through these, so bad input reads the same everywhere."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

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
        raise InputError(f"{path}: nested too deeply to be a samples or options file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: {line}invalid YAML: {problem}") from None


def closest(name: str, options: list[str]) -> str:
    match = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def dotted(loc: tuple[int | str, ...]) -> str:
    """("assertions", 0, "type") -> "assertions[0].type"."""
    return ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in loc).replace(".[", "[")


def located(prefix: str) -> Callable[[tuple[int | str, ...]], str]:
    """``where`` for validation_lines: the prefix, then the dotted field."""
    return lambda loc: f"{prefix}: {dotted(loc)}"


def validation_lines(
    exc: ValidationError, where: Callable[[tuple[int | str, ...]], str], fields: list[str] | None = None
) -> list[str]:
    """One line per pydantic error: ``where(loc)`` says where (file, case, field or flag)."""
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            lines.append(f"{where(loc)}: unknown field{closest(str(loc[-1]), fields or [])}")
        elif err["type"] == "missing":
            lines.append(f"{where(loc)}: required field missing")
        else:
            message = str(err["msg"]).removeprefix("Value error, ")
            # a check across fields (no location) gets the whole input: not worth repeating
            got = f" (got {err.get('input')!r})" if loc else ""
            lines.append(f"{where(loc)}: {message}{got}")
    return lines


def writable_folder(path: Path, flag: str) -> None:
    """``path`` is (or can be made) a folder this user may write into; checked without creating it,
    before any call, so no paid answer is lost to a location that was never usable."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    where = f"{path}" if probe == path else f"{path}: {probe}"
    if not probe.is_dir():
        raise InputError(f"{flag}: {where} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"{flag}: {where} is not writable")


def writable_file(path: Path, flag: str) -> None:
    """``path`` can be written as a file: not a folder, in a folder that is or can be made writable."""
    if path.is_dir():
        raise InputError(f"{flag}: {path} is a folder, not a file")
    writable_folder(path.parent, flag)
