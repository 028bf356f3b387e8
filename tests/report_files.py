"""Finding the report files tests wrote, and checking them against the repository's JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from flows.report.modes import modes
from flows.report.schema import REPORT_VERSION, SCHEMA_FILE


def report_files(root: Path) -> list[Path]:
    """JSON files under ``root`` that are reports of the current version, of the repository's modes
    (a test's own mode has no place in the repository's schema)."""
    known = {m.name for m in modes()}
    found = []
    for path in root.rglob("*.json"):
        if not path.is_file() or path.stat().st_size > 50_000_000:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, OSError, RecursionError):
            continue
        # Reports of earlier versions are migrated when read, not rewritten: only current ones count.
        if (
            isinstance(data, dict)
            and {"id", "mode", "meta"} <= set(data)
            and data.get("version") == REPORT_VERSION
            and data.get("mode") in known
        ):
            found.append(path)
    return found


def invalid_reports(root: Path) -> list[str]:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    problems = []
    for path in report_files(root):
        error = jsonschema.exceptions.best_match(
            validator.iter_errors(json.loads(path.read_text(encoding="utf-8")))
        )
        if error is not None:
            problems.append(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message[:200]}")
    return problems
