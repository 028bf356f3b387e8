"""Copies of user content (skills, plugins, task files, skill-creator ``files``, ablated skills) and of
what a session leaves behind, under one rule: nothing outside the folder comes along.

A suite downloaded from somewhere is hostile until proven otherwise. A link inside it that leads out
(``rootdir -> /root``) would copy the host into a session; a fifo would hang the copy; a huge tree
would fill the disk before the first session. So :func:`inspect_tree` refuses, with one line naming
the path, any link that leaves the folder, any file that is neither a regular file, a folder nor a
link, and a tree over the size or file-count bound ($SKILLAB_COPY_MAX_MB, default 50;
$SKILLAB_COPY_MAX_FILES, default 5,000); loaders call it before any session starts, and
:func:`copy_tree` calls it again before copying. Links that stay inside are recreated as relative
links, so the copy never points back at the original.

:func:`archive_tree` copies a sandbox into the results tree after a session: there the agent's own
links that lead out (``ln -s /root leakdir``) are replaced by a note, so an archive or upload that
follows links cannot ship the host's files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from executors.errors import InputError, env_int

IGNORED = frozenset({".git"})  # version-control folders are never part of a copied artifact
LINK_NOTE = (
    "skillab: a link that led outside the sandbox was here and was not kept (it pointed to {target})\n"
)


@dataclass(frozen=True)
class Bounds:
    max_bytes: int
    max_files: int

    @classmethod
    def from_env(cls) -> Bounds:
        return cls(
            max_bytes=env_int("SKILLAB_COPY_MAX_MB", 50) * 1024 * 1024,
            max_files=env_int("SKILLAB_COPY_MAX_FILES", 5000),
        )


@dataclass(frozen=True)
class Entry:
    path: Path  # inside the source
    relative: Path
    kind: str  # "dir" | "file" | "link"
    link: str | None = None  # the relative target a link is recreated with


def _resolved_root(root: Path) -> Path:
    return Path(os.path.realpath(root))


def _walk(root: Path, what: str, bounds: Bounds | None) -> Iterator[Entry]:
    """Every entry under ``root`` (IGNORED folders skipped), refusing what may not be copied."""
    real_root = _resolved_root(root)
    files = 0
    size = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise InputError(f"{what}: {folder}: unreadable ({exc.strerror or exc})") from None
        for entry in entries:
            if entry.name in IGNORED:
                continue
            path = Path(entry.path)
            relative = path.relative_to(root)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                raise InputError(f"{what}: {path}: unreadable ({exc.strerror or exc})") from None
            if stat.S_ISLNK(info.st_mode):
                yield Entry(path, relative, "link", _inside_link(path, real_root, root, what))
            elif stat.S_ISDIR(info.st_mode):
                yield Entry(path, relative, "dir")
                stack.append(path)
            elif stat.S_ISREG(info.st_mode):
                files += 1
                size += info.st_size
                if bounds is not None and files > bounds.max_files:
                    raise InputError(
                        f"{what}: {root}: more than {bounds.max_files:,} files (the bound on a copied "
                        "folder; $SKILLAB_COPY_MAX_FILES raises it)"
                    )
                if bounds is not None and size > bounds.max_bytes:
                    raise InputError(
                        f"{what}: {root}: more than {bounds.max_bytes // (1024 * 1024)} MB (the bound on a "
                        "copied folder; $SKILLAB_COPY_MAX_MB raises it)"
                    )
                yield Entry(path, relative, "file")
            else:
                raise InputError(
                    f"{what}: {path}: not a regular file, folder or link (a fifo, socket or device): refused"
                )


def _inside_link(path: Path, real_root: Path, root: Path, what: str) -> str:
    """The link's target relative to its own folder, when it stays inside ``root``; else refused."""
    target = os.readlink(path)
    resolved = Path(os.path.realpath(path))
    if not resolved.is_relative_to(real_root):
        raise InputError(
            f"{what}: {path}: a link that leaves the folder (-> {target}): refused; copy the file in instead"
        )
    return os.path.relpath(resolved, _resolved_root(path.parent))


def inspect_tree(root: Path, what: str, bounds: Bounds | None = None) -> None:
    """Refuse ``root`` (InputError, one line) when copying it could bring in anything outside it, a
    special file, or more than the bounds allow. ``what`` names the content in the message."""
    if root.is_symlink():
        raise InputError(f"{what}: {root}: is a link; give the folder itself")
    for _ in _walk(root, what, bounds or Bounds.from_env()):
        pass


def copy_tree(source: str | os.PathLike[str], dest: str | os.PathLike[str], what: str) -> Path:
    """``source`` copied to ``dest`` (merged into it when it exists) under the rules above."""
    src, dst = Path(source), Path(dest)
    entries = list(_walk(src, what, Bounds.from_env())) if not src.is_symlink() else None
    if entries is None:
        raise InputError(f"{what}: {src}: is a link; give the folder itself")
    dst.mkdir(parents=True, exist_ok=True)
    for e in entries:
        target = dst / e.relative
        if e.kind == "dir":
            target.mkdir(exist_ok=True)
        elif e.kind == "file":
            shutil.copyfile(e.path, target, follow_symlinks=False)
            shutil.copymode(e.path, target, follow_symlinks=False)
        else:
            if target.is_symlink() or target.is_file():
                target.unlink()
            os.symlink(e.link or ".", target)
    return dst


def tree_digest(root: Path, what: str, bounds: Bounds | None = None) -> str:
    """A digest of every byte a copy of ``root`` would carry: each entry's relative path and kind,
    a file's mode bits and content, a link's target; refused as :func:`inspect_tree` refuses. A
    single file is digested alone; a missing path digests as absent."""
    digest = hashlib.sha256()
    if not os.path.lexists(root):
        return hashlib.sha256(b"absent").hexdigest()
    if not root.is_dir() or root.is_symlink():
        inspect_file(root, what)
        digest.update(b"file\0" + root.read_bytes())
        return digest.hexdigest()
    for e in sorted(_walk(root, what, bounds), key=lambda e: e.relative.as_posix()):
        digest.update(f"{e.kind}\0{e.relative.as_posix()}\0".encode())
        if e.kind == "file":
            info = os.lstat(e.path)
            digest.update(f"{info.st_mode & 0o777:o}\0{info.st_size}\0".encode())
            with open(e.path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        elif e.kind == "link":
            digest.update((e.link or ".").encode())
        digest.update(b"\0")
    return digest.hexdigest()


def inspect_file(source: str | os.PathLike[str], what: str) -> None:
    """Refuse (InputError, one line) anything but a regular file within the size bound: a fifo
    would hang whoever reads it, a link could lead anywhere."""
    src = Path(source)
    info = os.lstat(src)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{what}: {src}: not a regular file (a link, folder or special file): refused")
    limit = Bounds.from_env().max_bytes
    if info.st_size > limit:
        raise InputError(f"{what}: {src}: more than {limit // (1024 * 1024)} MB: refused")


def copy_file(source: str | os.PathLike[str], dest: str | os.PathLike[str], what: str) -> Path:
    """One regular file (not a link, not a fifo), within the size bound."""
    src, dst = Path(source), Path(dest)
    inspect_file(src, what)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst, follow_symlinks=False)
    return dst


ARCHIVE_MAX_BYTES = 256 * 1024 * 1024  # what of one sandbox the results tree keeps, at most
ARCHIVE_MAX_FILES = 20_000
ARCHIVE_NOTE = "SKILLAB-ARCHIVE-CUT.txt"


def archive_tree(source: Path, dest: Path) -> int:
    """A session's sandbox copied into the results tree; a link that leads outside the sandbox (or
    that cannot be read) becomes a note file. The bounds count the bytes the copy would write (a
    sparse file's apparent size, every hard link in full) and are checked before each file is
    copied: past ARCHIVE_MAX_BYTES or ARCHIVE_MAX_FILES the copy stops and a note at its root says
    so. Returns how many links were replaced."""
    replaced = kept = size = 0
    real_root = _resolved_root(source)
    cut = False
    for folder, dirs, files in os.walk(source):
        base = Path(folder)
        out = dest / base.relative_to(source)
        out.mkdir(parents=True, exist_ok=True)
        for name in [*dirs, *files]:
            path = base / name
            target = out / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            grows = info.st_size if stat.S_ISREG(info.st_mode) else 0
            if kept + 1 > ARCHIVE_MAX_FILES or size + grows > ARCHIVE_MAX_BYTES:
                cut = True
                break
            kept += 1
            if stat.S_ISLNK(info.st_mode):
                link = os.readlink(path)
                if Path(os.path.realpath(path)).is_relative_to(real_root):
                    if not target.exists() and not target.is_symlink():
                        os.symlink(os.path.relpath(os.path.realpath(path), os.path.realpath(base)), target)
                    continue
                target.write_text(LINK_NOTE.format(target=link), encoding="utf-8")
                replaced += 1
            elif stat.S_ISREG(info.st_mode):
                shutil.copyfile(path, target, follow_symlinks=False)
                size += grows
            elif stat.S_ISDIR(info.st_mode):
                target.mkdir(exist_ok=True)
            # fifos, sockets and devices the agent made are not results: left out
        if cut:
            dirs.clear()  # os.walk descends no further
            break
    if cut:
        dest.mkdir(parents=True, exist_ok=True)
        (dest / ARCHIVE_NOTE).write_text(
            f"skillab kept the first {kept:,} entries ({size // (1024 * 1024)} MiB) of this sandbox; "
            "the rest was not copied into the results\n",
            encoding="utf-8",
        )
    return replaced
