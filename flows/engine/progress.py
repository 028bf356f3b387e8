"""Progress of long work: a rich bar on a terminal, plain lines otherwise (CI logs)."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    def __init__(self, total: int, label: str, *, enabled: bool = True) -> None:
        self.total, self.label, self.enabled = total, label, enabled and total > 0
        self.done = self.errors = self.cached = 0
        self.cost = 0.0
        self._last_line = 0.0
        self._bar: Any = None
        self._task: Any = None
        if self.enabled and sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                TimeElapsedColumn(),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(label, total=total, stats="")

    def advance(self, *, ok: bool, cost: float = 0.0, cached: bool = False) -> None:
        self.done += 1
        self.errors += 0 if ok else 1
        self.cached += 1 if cached else 0
        self.cost += cost
        if not self.enabled:
            return
        stats = f"errors {self.errors} · cached {self.cached} · ${self.cost:.4f}"
        if self._bar is not None:
            self._bar.update(self._task, advance=1, stats=stats)
        elif self.done == self.total or time.monotonic() - self._last_line > 5:
            self._last_line = time.monotonic()
            print(f"{self.label}: {self.done}/{self.total} · {stats}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
