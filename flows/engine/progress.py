"""Progress of long work: a rich bar on a terminal, plain lines otherwise (CI logs), and, for the
Prefect UI, lines in the flow run's log: every few percent, the first failure and the first retry of
each cause (later ones are counted, never listed one by one), and a closing summary."""

from __future__ import annotations

import logging
import math
import sys
import time
from collections import Counter
from typing import Any, TypeAlias

from executors.schema import terminal

LogTarget: TypeAlias = "logging.Logger | logging.LoggerAdapter[Any]"


def duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def counted(counter: Counter[str]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in counter.most_common())


class Progress:
    def __init__(
        self,
        total: int,
        label: str,
        *,
        enabled: bool = True,
        log: LogTarget | None = None,
        every_pct: float = 5.0,
    ) -> None:
        self.total, self.label, self.enabled = total, label, enabled and total > 0
        self.done = self.errors = self.cached = self.retries = 0
        self.cost = 0.0
        self.failures: Counter[str] = Counter()
        self.retry_causes: Counter[str] = Counter()
        self.log = log if total > 0 else None
        # Every few percent; a small run logs its quarters rather than every unit.
        self.step = max(1, math.ceil(total * every_pct / 100), math.ceil(total / 4) if total < 100 else 0)
        self.started = time.monotonic()
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

    def advance(
        self,
        *,
        ok: bool,
        cost: float = 0.0,
        cached: bool = False,
        failure: tuple[str, str, str] | None = None,
    ) -> None:
        """One unit done; ``failure`` is (unit label, error kind, cause) of a unit that failed."""
        self.done += 1
        self.errors += 0 if ok else 1
        self.cached += 1 if cached else 0
        self.cost += cost
        if failure is not None:
            self.failed(*failure)
        if self.log is not None and (self.done % self.step == 0 or self.done == self.total):
            self.log.info(self.line())
        if not self.enabled:
            return
        stats = f"errors {self.errors} · cached {self.cached} · spent ${self.cost:.4f}"  # this run's calls
        if self._bar is not None:
            self._bar.update(self._task, advance=1, stats=stats)
        elif self.done == self.total or time.monotonic() - self._last_line > 5:
            self._last_line = time.monotonic()
            print(f"{self.label}: {self.done}/{self.total} · {stats}", file=sys.stderr, flush=True)

    def failed(self, label: str, kind: str, cause: str) -> None:
        """A unit failed for good: the first of each kind is logged with its cause, the rest counted."""
        self.failures[kind] += 1
        if self.log is not None and self.failures[kind] == 1:
            self.log.warning(
                f"{self.label}: {label} failed ({kind}): {terminal(cause[:300])}; "
                f"further {kind} failures are counted in the progress lines"
            )

    def retried(self, label: str, cause_kind: str, cause: str) -> None:
        """A call is being retried: the first of each cause is logged, the rest counted."""
        self.retries += 1
        self.retry_causes[cause_kind] += 1
        if self.log is not None and self.retry_causes[cause_kind] == 1:
            self.log.warning(
                f"{self.label}: retrying {label} after {terminal(cause[:300])}; further retries for "
                f"{cause_kind} are counted in the progress lines"
            )

    def line(self) -> str:
        """One progress line: done, share, errors and retries by cause, cache hits, cost, time left."""
        elapsed = time.monotonic() - self.started
        pct = 100 * self.done / self.total if self.total else 100.0
        text = f"{self.label}: {self.done:,}/{self.total:,} ({pct:.0f}%)"
        text += f" · errors {self.errors}" + (f" ({counted(self.failures)})" if self.failures else "")
        if self.retries:
            text += f" · retries {self.retries} ({counted(self.retry_causes)})"
        text += f" · cached {self.cached:,} · spent ${self.cost:.4f} · {duration(elapsed)}"
        if 0 < self.done < self.total:
            text += f", about {duration(elapsed / self.done * (self.total - self.done))} left"
        return text

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
