"""Reading the reports folder, and writing human feedback into a report safely.

Feedback is appended under a lock (a thread lock plus an flock, so two server processes are safe too)
and written atomically (temp file, rename): concurrent posts lose nothing, readers never see half a file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tasks.files import atomic_write_json

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
MAX_COMMENT = 2000


class NotFound(Exception):
    pass


class BadRequest(Exception):
    pass


def run_summary(report: dict[str, Any]) -> dict[str, Any]:
    meta = report.get("meta", {})
    verdicts = [
        f"{c['treatment']} vs {c['control']}: {c['verdict']['label']}"
        for c in report.get("comparisons") or []
    ]
    return {
        "id": report.get("id"),
        "timestamp": meta.get("timestamp", ""),
        "mode": report.get("mode", "sample"),
        "variants": meta.get("variants", []),
        "model": meta.get("model"),
        "executor": meta.get("executor"),
        "suite": meta.get("suite"),
        "samples": meta.get("sampleCount"),
        "cost": (meta.get("totalCostUSD") or 0.0) + (meta.get("judgeCostUSD") or 0.0),
        "verdicts": verdicts,
        "labels": [c["verdict"]["label"] for c in report.get("comparisons") or []],
        "blind": bool(meta.get("blind")),
    }


class ReportStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._summaries: dict[Path, tuple[float, dict[str, Any]]] = {}

    def path(self, run_id: str) -> Path:
        if not RUN_ID.match(run_id):
            raise NotFound(run_id)
        path = (self.root / f"{run_id}.json").resolve()
        if path.parent != self.root.resolve() or not path.is_file():
            raise NotFound(run_id)
        return path

    def load(self, run_id: str) -> dict[str, Any]:
        try:
            data = json.loads(self.path(run_id).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise NotFound(run_id) from exc
        if not isinstance(data, dict):
            raise NotFound(run_id)
        return data

    def runs(self) -> list[dict[str, Any]]:
        """Summaries of every readable report, cached by modification time."""
        out = []
        for path in sorted(self.root.glob("*.json")):
            try:
                mtime = path.stat().st_mtime
                cached = self._summaries.get(path)
                if cached is None or cached[0] != mtime:
                    report = json.loads(path.read_text(encoding="utf-8"))
                    if not isinstance(report, dict) or "id" not in report:
                        continue
                    cached = (mtime, run_summary(report))
                    self._summaries[path] = cached
                out.append(cached[1])
            except (OSError, json.JSONDecodeError, KeyError, TypeError):
                continue
        return out

    @contextlib.contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        lock_path = path.with_name(f".{path.name}.lock")
        with self._lock, open(lock_path, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def add_feedback(
        self, run_id: str, sample_id: str, variant: str, rating: Any, comment: Any
    ) -> dict[str, Any]:
        try:
            stars = int(rating)
        except (TypeError, ValueError):
            raise BadRequest("rating must be a whole number from 1 to 5") from None
        if not 1 <= stars <= 5:
            raise BadRequest("rating must be a whole number from 1 to 5")
        text = "" if comment is None else str(comment)
        if len(text) > MAX_COMMENT:
            raise BadRequest(f"comment longer than {MAX_COMMENT} characters")
        path = self.path(run_id)
        with self._locked(path):
            report = self.load(run_id)
            result = next((r for r in report.get("results", []) if r.get("sample_id") == sample_id), None)
            if result is None or variant not in result.get("variants", {}):
                raise BadRequest("no such sample and variant in this run")
            entry = {
                "rating": stars,
                "comment": text,
                "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            }
            result["variants"][variant].setdefault("feedback", []).append(entry)
            atomic_write_json(path, report)
        return entry
