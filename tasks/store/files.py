"""Atomic file writes: a reader (or a crash) never sees a half-written report or cache entry."""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from executors.redaction import redact

WRITE_SLICE = 1 << 20


def atomic_write_text(path: Path, text: str, *, durable: bool = True, masked: bool = False) -> None:
    """Write to a temporary sibling, then rename over `path`.

    `durable=False` skips the fsync: the rename still makes the write all-or-nothing for any process
    crash (kill -9 included); only a power loss can leave a damaged file, so use it only where a
    checksum catches that (cache entries): an fsync costs milliseconds per file.
    Secrets in ``text`` are masked (executors.redaction): no results file keeps a key; ``masked``:
    the caller masked it already (a cache entry, masked before its checksum).
    """
    text = text if masked else redact(text)
    # encoded a slice at a time, not all at once
    slices = (text[start : start + WRITE_SLICE] for start in range(0, len(text), WRITE_SLICE))
    atomic_write_chunks(path, slices, durable=durable, masked=True)


def atomic_write_chunks(
    path: Path, chunks: Iterable[str], *, durable: bool = True, masked: bool = False
) -> bool:
    """``atomic_write_text`` of the text the chunks make, never held whole (a report of 10,000 cases
    is 14 MB of JSON and 6 MB of HTML): they are joined into slices of about ``WRITE_SLICE``, each
    masked on its own unless ``masked`` (a chunk holds a secret whole: one value, as a template's
    expression or a model's field does). True when the masking changed the text."""
    changed = False

    def slices() -> Iterator[str]:
        held: list[str] = []
        size = 0
        for chunk in chunks:
            held.append(chunk)
            size += len(chunk)
            if size >= WRITE_SLICE:
                yield "".join(held)
                held, size = [], 0
        yield "".join(held)

    # Random, not pid-based: processes on several machines may share a folder (a shared cache).
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for text in slices():
                clean = text if masked else redact(text)
                changed = changed or clean is not text  # redact returns its text when it masks nothing
                handle.write(clean)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return changed


def finite(data: Any) -> Any:
    """NaN and infinity become null: the files are strict JSON, which other tools can read."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data


def atomic_write_json(path: Path, data: Any) -> None:
    text = json.dumps(finite(data), indent=2, ensure_ascii=False, default=str, allow_nan=False)
    atomic_write_text(path, text + "\n")
