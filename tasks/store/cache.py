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
import queue
import threading
from pathlib import Path
from typing import Any, TypeVar

import orjson

from executors.parsing import JsonObject
from executors.redaction import redact
from tasks.store.files import atomic_write_text

#: Bump to invalidate every entry (a change in what a cached payload means).
CACHE_VERSION = "1"


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def body_of(data: Any) -> str:
    """An entry's payload as it is checksummed: canonical JSON by orjson (a tenth of json's cost; an
    entry written by json before reads as valid too, see ``ResultCache.get``)."""
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str).decode()


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
            if entry["key"] != key or entry["sha256"] not in (
                hashlib.sha256(body_of(value).encode()).hexdigest(),
                hashlib.sha256(canonical(value).encode()).hexdigest(),  # written by json
            ):
                raise ValueError("checksum mismatch")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None  # a folder where an entry should be: a miss (the write will report its failure)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            path.unlink(missing_ok=True)
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: JsonObject) -> None:
        body = body_of(value)
        clean = redact(body)
        if clean != body:  # masked before the checksum, so the entry stays valid once written
            value, body = json.loads(clean), clean
        entry = {"key": key, "sha256": hashlib.sha256(body.encode()).hexdigest(), "value": value}
        atomic_write_text(self.path(key), body_of(entry), durable=False, masked=True)


PAUSE_S = 0.05  # a consumer thread's wait for more work before it sleeps on its queue

T = TypeVar("T")


def take(work: queue.Queue[T] | queue.SimpleQueue[T], hurry: threading.Event) -> T:
    """The next item of ``work`` for a thread that consumes what the event loop hands over. Out of
    work, it waits out the burst before blocking on the queue: a put that finds the thread blocked
    wakes it, a system call and a switch of the GIL on the event loop's thread (~0.05-0.1 ms here,
    for nearly every answer of a run); one that finds it pausing does not. ``hurry`` set: no pause."""
    if work.empty():
        hurry.wait(PAUSE_S)
    return work.get()


class CacheWrites:
    """A run's answers written to the cache by one thread of its own, in the order they came: the
    event loop hands each over and goes on (a thread hand-off and a file per answer cost a 10,000-call
    run seconds of its loop). ``drain`` waits for what was handed over and returns the failures (a
    full disk: the answers stand, uncached). An answer not yet written when the process dies is
    called again on resume, as one still in flight would be."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, str, JsonObject]] = queue.Queue()
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.hurry = threading.Event()  # set by drain: no pause while it waits

    def put(self, cache_dir: str, key: str, value: JsonObject) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._write, name="skillab-cache", daemon=True)
                self.thread.start()
        self.queue.put((cache_dir, key, value))

    def _write(self) -> None:
        while True:
            cache_dir, key, value = take(self.queue, self.hurry)
            try:
                ResultCache(cache_dir).put(key, value)
            except OSError as exc:
                with self.lock:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                self.queue.task_done()

    def drain(self) -> list[str]:
        """Block until every answer handed over is written; the failures since the last drain."""
        self.hurry.set()
        self.queue.join()
        self.hurry.clear()
        with self.lock:
            errors, self.errors = self.errors, []
        return errors
