"""Reading the reports folder, and writing human feedback into a report safely.

Feedback is appended under a lock (a thread lock plus an flock, so two server processes are safe too)
and written atomically (temp file, rename): concurrent posts lose nothing, readers never see half a file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flows.report.entries import Feedback
from flows.report.human import human_agreement
from flows.report.schema import Report, load_report
from flows.report.suite import RunRow, trend_entry
from tasks.store.files import atomic_write_json

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
MAX_COMMENT = 2000


class NotFound(Exception):
    pass


class BadRequest(Exception):
    pass


def run_summary(report: Report) -> RunRow:
    """One row of the runs list."""
    meta = report.meta
    return RunRow(
        id=report.id,
        timestamp=meta.timestamp,
        mode=report.mode,
        variants=meta.variants,
        model=meta.model,
        executor=meta.executor,
        suite=meta.suite,
        samples=meta.sample_count,
        cost=meta.total_cost_usd + (meta.judge_cost_usd or 0.0),
        verdicts=[f"{c.treatment} vs {c.control}: {c.verdict.label}" for c in report.comparisons],
        labels=[str(c.verdict.label) for c in report.comparisons],
        blind=meta.blind or bool(report.blind_mapping),
        errors=sum(s.error_count for s in report.summary.values()),
        executions=sum(s.executions for s in report.summary.values()),
        flow_run=meta.prefect_flow_run,
        trend=trend_entry(report) if meta.suite else None,
    )


def warn_unreadable(path: Path, reason: str) -> None:
    print(f"skillab: warning: skipped {path}: {reason}", file=sys.stderr)


def why_unreadable(path: Path, exc: Exception) -> str:
    """The reason a report file was not read, in one line (its path is in the warning already)."""
    return str(exc).removeprefix(f"{path}: ").splitlines()[0][:300]


def read_reports(root: Path, *, warn: Callable[[Path, str], None] = warn_unreadable) -> Iterator[Report]:
    """Every report in a folder. A file that is not a readable report (not UTF-8, truncated, foreign
    JSON, a FIFO or another special file) is skipped with one warning naming it, never an error."""
    for path in sorted(root.glob("*.json")):
        try:
            if not path.is_file():  # a FIFO would block the reader, a folder cannot be read
                raise ValueError("not a regular file")
            yield load_report(path)
        except ValueError as exc:  # a validation error is one
            warn(path, why_unreadable(path, exc))


class ReportStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._summaries: dict[Path, tuple[float, RunRow]] = {}
        self._warned: set[tuple[Path, float]] = set()

    def path(self, run_id: str) -> Path:
        """The run's file: ``<id>.json`` as skillab writes it, else a file of another name whose
        report has that id (a report copied in under its own name is listed, so it opens too)."""
        if not RUN_ID.match(run_id):
            raise NotFound(run_id)
        path = (self.root / f"{run_id}.json").resolve()
        if path.parent == self.root.resolve() and path.is_file():
            return path
        self.runs()  # brings the summaries, and so the ids of every file, up to date
        named = [p for p, (_, row) in self._summaries.items() if row.id == run_id and p.is_file()]
        if not named:
            raise NotFound(run_id)
        return named[0]

    def load(self, run_id: str) -> Report:
        try:
            return load_report(self.path(run_id))
        except ValueError as exc:
            raise NotFound(run_id) from exc

    def runs(self) -> list[RunRow]:
        """Summaries of every readable report, cached by modification time; others warned once."""
        out = []
        for path in sorted(self.root.glob("*.json")):
            mtime = 0.0
            try:
                mtime = path.stat().st_mtime
                cached = self._summaries.get(path)
                if cached is None or cached[0] != mtime:
                    if not path.is_file():
                        raise ValueError("not a regular file")
                    cached = (mtime, run_summary(load_report(path)))
                    self._summaries[path] = cached
                out.append(cached[1])
            except (OSError, ValueError) as exc:
                if (path, mtime) not in self._warned:
                    self._warned.add((path, mtime))
                    warn_unreadable(path, why_unreadable(path, exc))
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
            result = next((r for r in report.results if r.sample_id == sample_id), None)
            if result is None or variant not in result.variants:
                raise BadRequest("no such sample and variant in this run")
            entry = Feedback(
                rating=stars,
                comment=text,
                at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            )
            target = result.variants[variant]
            target.feedback = [*target.feedback, entry]  # assigned, so the dump keeps it
            agreement = human_agreement(report)  # recomputed on every rating, kept in the file
            if agreement is not None:
                report.human_agreement = agreement
            atomic_write_json(path, report.dump())
        return entry.model_dump()
