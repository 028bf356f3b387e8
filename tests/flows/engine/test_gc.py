"""The collector settings while units run: applied once, restored by the last run to finish."""

from __future__ import annotations

import gc

from flows.engine.gc import YOUNG_THRESHOLD, lean_gc


def test_lean_gc_is_reentrant_and_restores_cpython_settings() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with lean_gc():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0  # what existed at the start is not re-scanned
        with lean_gc():  # an overlapping run
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_lean_gc_restores_after_an_error() -> None:
    before = gc.get_threshold()
    try:
        with lean_gc():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
