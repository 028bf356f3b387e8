"""The user's files in flows: pydantic errors as one line each naming the file, the case and the
field, and locations checked writable before any call. Parsing itself is ``graders.loading``
(re-exported here), shared with the loaders below flows."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from executors.errors import InputError
from executors.parsing import JsonObject
from graders.loading import closest, parse_data, read_text

__all__ = [
    "closest",
    "dotted",
    "located",
    "parse_data",
    "read_text",
    "skillab_home",
    "validation_lines",
    "writable_file",
    "writable_folder",
]


def skillab_home() -> Path:
    """skillab's own folder: reports, cache, the Prefect server's record ($SKILLAB_HOME or ~/.skillab)."""
    return Path(os.environ.get("SKILLAB_HOME") or Path.home() / ".skillab")


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


def options_file(
    path: Path, model: type[BaseModel], lists: frozenset[str] = frozenset(), data: Any = None
) -> JsonObject:
    """Options from a YAML/JSON file, named as the flags are (dashes or underscores), validated
    against ``model``; ``lists`` may also be written as one comma-separated string. ``data``: the
    file already parsed."""
    data = (parse_data(path, read_text(path)) if data is None else data) or {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of option: value")
    fields = list(model.model_fields)
    out: JsonObject = {}
    problems = []
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in fields:
            problems.append(f"{path}: {key}: unknown option{closest(name, fields)}")
            continue
        if name in lists and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        out[name] = value
    if problems:
        raise InputError(problems)
    try:
        model(**out)
    except ValidationError as exc:
        raise InputError(validation_lines(exc, located(str(path)), fields)) from None
    return out


def check_endpoint(url: str, source: str) -> None:
    """An http(s) URL with a host and a valid port, before any call (else every call fails)."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise InputError(f"{source}: {url!r} is not a URL ({exc})") from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise InputError(f"{source}: {url!r} is not an http(s) URL with a host")
