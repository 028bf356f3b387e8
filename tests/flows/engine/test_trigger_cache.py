"""The trigger runner's session cache: an entry it cannot read is a miss, never a crash."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from flows.engine.progress import Progress
from flows.engine.runner import RunnerConfig, UnitRunner
from flows.modes.triggers.runner import TriggerRunner


def test_an_entry_of_another_shape_is_a_miss(tmp_path: Path) -> None:
    units = UnitRunner(RunnerConfig(1, tmp_path / "cache"), Progress(0, "sessions", enabled=False))
    assert units.cache is not None
    units.cache.put("old", {"status": "ok", "fired": []})  # written by a version with fewer fields
    runner = SimpleNamespace(runner=units)
    assert TriggerRunner.cached(runner, SimpleNamespace(key="old")) is None  # type: ignore[arg-type]
    assert TriggerRunner.cached(runner, SimpleNamespace(key="absent")) is None  # type: ignore[arg-type]
