"""The bookkeeping of a run's calls: task-run ids drawn in batches stay random UUIDs and never repeat
across a fork (a warm process forks every command it serves); the cache writer pauses between
bursts and still has every answer on disk when drained."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from tasks import unit_runs
from tasks.store.cache import CacheWrites, ResultCache
from tasks.unit_runs import IDS_READ, new_id


def test_ids_are_version_4_uuids_and_never_repeat() -> None:
    ids = [new_id() for _ in range(3 * IDS_READ + 5)]  # across several reads
    assert len(set(ids)) == len(ids)
    parsed = [uuid.UUID(i) for i in ids]
    assert all(
        u.version == 4 and u.variant == uuid.RFC_4122 and str(u) == i
        for u, i in zip(parsed, ids, strict=True)
    )


def test_a_forked_process_draws_ids_of_its_own(tmp_path: Path) -> None:
    unit_runs._ids.clear()
    new_id()  # the parent holds a fresh batch, 255 of it unused, whatever the tests before it drew
    out = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # the child: its ids to a file, then out without the test runner's teardown
        try:
            out.write_text("\n".join(new_id() for _ in range(20)))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    parent = {new_id() for _ in range(20)}
    child = set(out.read_text().split())
    assert len(child) == 20 and not parent & child


def test_every_answer_handed_over_is_on_disk_when_drained(tmp_path: Path) -> None:
    writes = CacheWrites()
    cache = ResultCache(tmp_path / "cache")
    for n in range(50):  # a burst: the writer takes them as they come, pausing when it runs dry
        writes.put(str(tmp_path / "cache"), f"{n:04x}key", {"n": n})
    assert writes.drain() == []
    assert [(cache.get(f"{n:04x}key") or {}).get("n") for n in range(50)] == list(range(50))
    writes.put(str(tmp_path / "cache"), "late", {"n": 50})  # after the writer went idle
    assert writes.drain() == [] and cache.get("late") == {"n": 50}
    (tmp_path / "file").write_text("")
    writes.put(str(tmp_path / "file"), "nowhere", {"n": 0})  # a cache folder that is a file
    errors = writes.drain()
    assert len(errors) == 1 and "Error" in errors[0]
