"""The persistent result cache that makes resume work.

Prefect's own task cache keys on the flow run by default and costs a task run per hit; this cache is
consulted by the flow before fan-out, so a fully cached re-run starts no task at all, and it is a
plain folder, so workers on several machines can share it. Each entry carries a checksum of its
payload: a corrupted entry is detected, removed and recomputed. Writes are atomic but not fsynced
(an fsync per entry cost seconds per 1,000 units): a process crash cannot tear
an entry, and what a power loss might tear, the checksum catches.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from executors.parsing import JsonObject
from executors.redaction import redact
from tasks.store.files import atomic_write_text

#: Bump to invalidate every entry (a change in what a cached payload means).
CACHE_VERSION = "1"


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(namespace: str, payload: JsonObject) -> str:
    return hashlib.sha256(canonical({"ns": namespace, "v": CACHE_VERSION, "p": payload}).encode()).hexdigest()


class ResultCache:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> JsonObject | None:
        path = self.path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            value = entry["value"]
            if (
                entry["key"] != key
                or entry["sha256"] != hashlib.sha256(canonical(value).encode()).hexdigest()
            ):
                raise ValueError("checksum mismatch")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None  # a folder where an entry should be: a miss (the write will report its failure)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            path.unlink(missing_ok=True)
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: JsonObject) -> None:
        body = canonical(value)
        clean = redact(body)
        if clean != body:  # masked before the checksum, so the entry stays valid once written
            value, body = json.loads(clean), clean
        entry = {"key": key, "sha256": hashlib.sha256(body.encode()).hexdigest(), "value": value}
        atomic_write_text(self.path(key), canonical(entry), durable=False)
