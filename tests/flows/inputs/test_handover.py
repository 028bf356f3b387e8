"""The command's validated inputs reach its own flow run once; anything else is prepared afresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flows.inputs import prepare as prepare_module
from flows.inputs.options import BenchOptions
from flows.inputs.prepare import hand_over, prepared_for


def test_the_flow_run_takes_what_the_command_prepared_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh: list[Any] = []

    def prepare(options: BenchOptions, cwd: Path) -> Any:
        fresh.append((options, cwd))
        return "fresh"

    monkeypatch.setattr(prepare_module, "prepare", prepare)
    options = BenchOptions(samples="s.json", concurrency=3)
    handed: Any = "handed"
    hand_over(options, tmp_path, handed)
    same = BenchOptions.model_validate(options.model_dump())  # as Prefect passes parameters on
    assert prepared_for(same, tmp_path) == "handed" and fresh == []
    assert prepared_for(same, tmp_path) == "fresh"  # taken once: a re-run reads the files again
    hand_over(options, tmp_path, handed)
    assert prepared_for(BenchOptions(samples="s.json", concurrency=4), tmp_path) == "fresh"
    assert prepared_for(options, tmp_path / "other") == "fresh"
    hand_over(BenchOptions(samples="t.json"), tmp_path, handed)  # a newer hand-over replaces it
    assert prepared_for(options, tmp_path) == "fresh"
    assert len(fresh) == 4
