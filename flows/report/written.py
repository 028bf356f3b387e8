"""The report a command's run wrote, kept for the command's own ending (a light module: the command
line enters ``keeping_written`` before it imports any mode; flows.report.schema types what it takes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

#: The report the running command wrote last, with its file's size and time: the command's own ending
#: reads it from here instead of parsing it again (at 10,000 results, 0.6 s and ~90 MB at the run's
#: peak). Only a command keeps one (``keeping_written``): a served deployment's process, whose runs
#: nothing reads back, keeps none between them.
_written: ContextVar[list[tuple[Path, tuple[int, int], object]] | None] = ContextVar(
    "skillab_written", default=None
)


@contextmanager
def keeping_written() -> Iterator[None]:
    """While it lasts, the report written last is kept for the next load of its file."""
    token = _written.set([])
    try:
        yield
    finally:
        _written.reset(token)


def wrote(path: Path, report: object) -> None:
    """``report`` is now the content of ``path``: the next load of that file, and only it, may take it
    as it is while the file is unchanged."""
    kept = _written.get()
    if kept is not None:
        stat = path.stat()
        kept[:] = [(path, (stat.st_size, stat.st_mtime_ns), report)]


def as_written(path: Path) -> object | None:
    """The report kept for ``path``, once, while its file is as written; else None."""
    kept = _written.get()
    if not kept:
        return None
    where, seen, report = kept.pop()
    try:
        now = path.stat()
    except OSError:
        return None
    return report if where == path and seen == (now.st_size, now.st_mtime_ns) else None
