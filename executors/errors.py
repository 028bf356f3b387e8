"""The executor error tree, mapped once at each provider's boundary.

ExecutorError
├── TransientError   429 (with Retry-After), 408/409, 5xx, timeouts, resets, truncated bodies:
│                    worth retrying
└── PermanentError   other 4xx (bad key, bad model, bad request): retrying cannot help
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Iterable
from email.utils import parsedate_to_datetime
from enum import StrEnum


class ErrorKind(StrEnum):
    """Why a call or session failed, as reports count it (``errorsByKind``)."""

    TRANSIENT = "transient"  # retried and still failing: 429, 5xx, resets, malformed bodies
    PERMANENT = "permanent"  # retrying cannot help: other 4xx, a missing binary
    TIMEOUT = "timeout"  # no answer in time (a transient cause, counted apart)
    ERROR = "error"  # anything else


class ExecutorError(Exception):
    """A model or agent call failed; ``kind`` names the cause for reports."""

    kind = ErrorKind.ERROR

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientError(ExecutorError):
    kind = ErrorKind.TRANSIENT

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        timeout: bool = False,
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after
        self.timeout = timeout  # no answer in time: reported as ErrorKind.TIMEOUT


class PermanentError(ExecutorError):
    kind = ErrorKind.PERMANENT


TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})


def is_transient_status(status: int) -> bool:
    """The one classification of HTTP statuses, for API executors and agent CLIs alike."""
    return status in TRANSIENT_STATUSES or status >= 500


def error_for_status(
    status: int, message: str, retry_after: str | None = None, where: str | None = None
) -> ExecutorError:
    """Classify an HTTP error status the same way for every provider. ``where``: the endpoint, named
    in a permanent error (a wrong path, key or model: the user needs to know which endpoint said so)."""
    if is_transient_status(status):
        return TransientError(
            f"HTTP {status}: {message}", status=status, retry_after=parse_retry_after(retry_after)
        )
    return PermanentError(f"HTTP {status}: {message}" + (f" ({where})" if where else ""), status=status)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def warn(message: str) -> None:
    """What a user should know that stops nothing, one line on stderr."""
    print(f"skillab: warning: {message}", file=sys.stderr)


class InputError(ValueError):
    """Bad input a user can fix (a file, a flag, a field): the one error type raised while loading.

    Each of ``lines`` is printed on its own and is complete (file, case, field); the command line
    catches this type once and exits 2. It subclasses ValueError so pydantic validators and the
    graders' parameter checks can raise it where a ValueError is expected.
    """

    def __init__(self, lines: str | Iterable[str]) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("; ".join(self.lines))


def where(file: object, case: str | None = None, field: str | None = None) -> str:
    """The location prefix of an input error: ``file: sample ID: field``."""
    parts = [str(file)]
    if case is not None:
        parts.append(f"sample {case}")
    if field:
        parts.append(field)
    return ": ".join(parts)


def env_int(name: str, default: int) -> int:
    """A positive whole number from the environment variable ``name`` (``default`` when unset);
    InputError naming the variable otherwise."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"${name}: {raw!r} is not a whole number") from None
    if value <= 0:
        raise InputError(f"${name}: must be above 0 (got {value})")
    return value
