"""Atomic writes: the old file or the new one, never a mix, and no temporary file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.store.files import atomic_write_text


@pytest.mark.parametrize("durable", [True, False])
def test_writes_into_new_folders_and_replaces(tmp_path: Path, durable: bool) -> None:
    path = tmp_path / "a" / "b" / "entry.json"
    atomic_write_text(path, "one", durable=durable)
    atomic_write_text(path, "two", durable=durable)
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["entry.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "entry.json"
    atomic_write_text(path, "old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(path, "\ud800")  # a lone surrogate cannot be encoded: fails mid-write
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]
