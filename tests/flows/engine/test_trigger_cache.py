"""The trigger runner's session cache: an entry it cannot read is a miss, never a crash."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from flows.engine.triggers import TriggerRunner
from tasks.store.cache import ResultCache


def test_an_entry_of_another_shape_is_a_miss(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    cache.put("old", {"status": "ok", "fired": []})  # written by a version with fewer fields
    runner = SimpleNamespace(cache=cache)
    assert TriggerRunner.cached(runner, SimpleNamespace(key="old")) is None  # type: ignore[arg-type]
    assert TriggerRunner.cached(runner, SimpleNamespace(key="absent")) is None  # type: ignore[arg-type]
