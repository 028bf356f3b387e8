"""Sizes are the bytes a copy would write: a sparse file counts its apparent size and every hard link
counts in full, in every path that copies a tree (the results, the baseline cache, a suite's content,
reference solutions, the fleet's archives), bounded before anything is written."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from executors.contents import ARCHIVE_MAX_BYTES, ARCHIVE_NOTE, archive_tree, copy_tree
from executors.errors import InputError
from executors.limits import tree_size
from flows.engine.session_files import pack, unpack


def sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)  # no block written: `du` says 0
    return path


def written(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_sparse_file_or_hard_links_never_pass_the_results_bound(tmp_path: Path) -> None:
    """The attack: a 4 KB sandbox that became 601 MB per session in the results."""
    box = tmp_path / "box"
    big = sparse(box / "a" / "big.bin", ARCHIVE_MAX_BYTES + 345 * 1024 * 1024)
    (box / "a" / "kept.txt").write_text("small")
    assert os.stat(big).st_blocks * 512 < 1 << 20  # nothing on disk yet
    assert tree_size(box)[0] > ARCHIVE_MAX_BYTES  # yet the disk watch sees what a copy writes
    archive_tree(box, tmp_path / "out")
    assert written(tmp_path / "out") < 1 << 20 and (tmp_path / "out" / ARCHIVE_NOTE).is_file()
    assert (tmp_path / "out" / "a" / "kept.txt").read_text() == "small"  # what came first is kept
    links = tmp_path / "links"
    one = sparse(links / "one.bin", 40 << 20)
    for i in range(10):
        os.link(one, links / f"link-{i}.bin")
    assert tree_size(links)[0] == 11 * (40 << 20)  # each link counted in full
    archive_tree(links, tmp_path / "out2")
    assert written(tmp_path / "out2") <= ARCHIVE_MAX_BYTES and (tmp_path / "out2" / ARCHIVE_NOTE).is_file()


def test_a_suite_s_sparse_file_or_hard_links_are_refused_before_copying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLAB_COPY_MAX_MB", "8")
    sparse(tmp_path / "skill" / "data.bin", 64 << 20)
    with pytest.raises(InputError, match="more than 8 MB"):
        copy_tree(tmp_path / "skill", tmp_path / "copy", "skill x")
    assert not (tmp_path / "copy" / "data.bin").exists()
    linked = tmp_path / "ref"
    one = sparse(linked / "one.bin", 3 << 20)
    for i in range(3):
        os.link(one, linked / f"l{i}.bin")
    with pytest.raises(InputError, match="more than 8 MB"):
        copy_tree(linked, tmp_path / "copy2", "reference solution")


def test_the_fleet_s_archives_count_hard_links_and_sparse_files_in_full(tmp_path: Path) -> None:
    """The attack: hard links to a sparse file, 0 bytes in the archive, unpacked by the parent as full
    copies (a 64 MiB archive, 2.6 GiB on disk)."""
    limit = 32 << 20
    folder = tmp_path / "sandbox"
    one = sparse(folder / "one.bin", 8 << 20)
    for i in range(8):
        os.link(one, folder / f"link-{i}.bin")
    with pytest.raises(ValueError, match="to pack"):
        pack({"sandbox": folder}, tmp_path / "refused.tar", limit=limit)
    assert not (tmp_path / "refused.tar").exists()
    # an archive made elsewhere (a hostile container's): its hard links are counted as they unpack
    archive = tmp_path / "files.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(folder, arcname="sandbox")
    assert archive.stat().st_size < 16 << 20  # one copy of the data, links as headers
    with pytest.raises(ValueError, match="over 32 MiB"):
        unpack(archive, tmp_path / "unpacked", limit=limit)
    assert written(tmp_path / "unpacked") <= limit
