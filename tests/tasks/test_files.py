"""Atomic writes: the old file or the new one, never a mix, and no temporary file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.redaction import MASK
from tasks.store.files import WRITE_SLICE, atomic_write_chunks, atomic_write_text


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


def test_chunks_are_written_whole_and_masked_a_slice_at_a_time(tmp_path: Path) -> None:
    """Many small chunks make slices of about WRITE_SLICE; a key in any chunk is masked, and the
    writer says so; clean chunks come out as they went in."""
    key = "sk-ant-" + "z" * 30
    chunks = ["a" * 1000] * (2 * WRITE_SLICE // 1000) + [f"[{key}]", "end"]
    path = tmp_path / "page.html"
    assert atomic_write_chunks(path, iter(chunks)) is True
    assert path.read_text() == "".join(chunks).replace(key, MASK)
    assert atomic_write_chunks(path, iter(["clean ", "text"])) is False and path.read_text() == "clean text"
    assert atomic_write_chunks(path, iter([key]), masked=True) is False and path.read_text() == key
