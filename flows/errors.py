"""Errors a user can cause: one line naming the file, the case and the field; exit code 2."""

from __future__ import annotations

from collections.abc import Iterable


class UsageError(Exception):
    """Bad input. ``lines`` are printed one per problem, each complete on its own."""

    def __init__(self, lines: str | Iterable[str]) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("; ".join(self.lines))


def where(file: object, case: str | None = None, field: str | None = None) -> str:
    parts = [str(file)]
    if case is not None:
        parts.append(f"sample {case}")
    if field:
        parts.append(field)
    return ": ".join(parts)
