"""The command's validated inputs reach its own flow run once; anything else is prepared afresh."""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import pytest

from flows.inputs.options import BenchOptions
from flows.modes.sample import prepare as prepare_module
from flows.modes.sample.prepare import prepared_for
from tasks.context import RunContext, handover_key


def test_the_flow_run_takes_what_the_command_prepared_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh: list[Any] = []

    def prepare(options: BenchOptions, cwd: Path) -> Any:
        fresh.append((options, cwd))
        return "fresh"

    monkeypatch.setattr(prepare_module, "prepare", prepare)
    options = BenchOptions(samples="s.json", concurrency=3)
    run = RunContext()

    def hand_over(given: BenchOptions, cwd: Path = tmp_path) -> None:
        run.hand_over(handover_key(given, cwd), "handed")

    with run.active():  # as the command's run protocol sets it for its flow run
        hand_over(options)
        same = BenchOptions.model_validate(options.model_dump())  # as Prefect passes parameters on
        assert prepared_for(same, tmp_path) == "handed" and fresh == []
        assert prepared_for(same, tmp_path) == "fresh"  # taken once: a re-run reads the files again
        hand_over(options)
        assert prepared_for(BenchOptions(samples="s.json", concurrency=4), tmp_path) == "fresh"
        hand_over(options)
        assert prepared_for(options, tmp_path / "other") == "fresh"
        hand_over(options)
        hand_over(BenchOptions(samples="t.json"))  # a newer hand-over replaces it
        assert prepared_for(options, tmp_path) == "fresh"
        hand_over(options)
    # no command's run (in a context of its own, as a flow run is): nothing handed over
    assert contextvars.copy_context().run(prepared_for, options, tmp_path) == "fresh"
    assert len(fresh) == 5
