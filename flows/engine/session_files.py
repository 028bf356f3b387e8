"""A fleet session's files: what travels to its container, where they may be unpacked, what comes back.

The folders a session reads go as one tar (:func:`pack`, bounded by the bytes it would write, hard
links each counted); the container unpacks it only under the paths its request names, never into
the system's folders (:func:`unpack`, :func:`confined_paths`), after checking its digest.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from executors.limits import files_limit, tree_size
from executors.sandbox import SYSTEM_DIRS
from executors.schema import AgentRequest

#: The largest archive of a session's files taken back (the sandbox's disk bound, with room).
FILES_LIMIT = 4 << 30


def named_paths(request: AgentRequest) -> list[Path]:
    """Every folder (and the history file) a session reads: where its inputs travel from and to."""
    named = [
        request.resume,
        request.sandbox,
        request.home,
        str(Path(request.raw_stream).parent),
        request.skill_dir,
        request.plugin_dir,
        request.environment,
        *request.add_dirs,
        *(s.path for s in request.skills),
    ]
    return [Path(n) for n in named if n]


def input_paths(request: AgentRequest) -> list[Path]:
    """The folders (and the history file) a session reads, as the parent staged them (those that exist)."""
    paths = sorted({p for p in named_paths(request) if p.exists()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in paths:  # a folder inside another one travels with it (trigger mode: the sandbox in outputs/)
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def output_folders(request: AgentRequest) -> dict[str, Path]:
    """What a session leaves that grading reads: its outputs (the raw stream's folder) and its
    sandbox, unless the sandbox is inside the outputs."""
    outputs, sandbox = Path(request.raw_stream).parent, Path(request.sandbox)
    return {"outputs": outputs} | ({} if sandbox.is_relative_to(outputs) else {"sandbox": sandbox})


def pack(
    paths: dict[str, Path], archive: Path, skip: tuple[Path, ...] = (), limit: int = FILES_LIMIT
) -> None:
    """``paths`` (name in the archive -> folder or file) into one tar; links are kept as links;
    nothing under a ``skip`` folder. Refused (ValueError) before anything is written when what
    ``unpack`` would write passes ``limit`` (sparse files and hard links counted in full)."""
    size = sum(tree_size(p)[0] if p.is_dir() else p.stat().st_size for p in paths.values() if p.exists())
    if size > limit:
        raise ValueError(f"{size >> 20} MiB to pack, over {limit >> 20} MiB")
    with tarfile.open(archive, "w") as tar:
        for name, path in paths.items():
            if not path.exists():
                continue
            left_out = tuple(
                f"{name}/{s.relative_to(path)}" for s in skip if s.is_relative_to(path) and s != path
            )
            tar.add(path, arcname=name, recursive=True, filter=functools.partial(_kept, left_out=left_out))


def _kept(member: tarfile.TarInfo, left_out: tuple[str, ...]) -> tarfile.TarInfo | None:
    return None if any(member.name == o or member.name.startswith(o + "/") for o in left_out) else member


#: Where a session's inputs may never be unpacked in its container: the system, the image's Python
#: and CLIs, the kernel's and the runtime's folders (an ``etc/ld.so.preload`` or a ``.pth`` file there
#: would run before bubblewrap, beside the key).
SYSTEM_PATHS = tuple(Path(p) for p in (*SYSTEM_DIRS, "/opt", "/proc", "/sys", "/dev", "/run", "/boot"))
#: A session key or an inputs digest: hex, as the parent makes them (never a path).
HEX = re.compile(r"[0-9a-f]{32,64}")


def confined_paths(request: AgentRequest) -> tuple[PurePosixPath, ...]:
    """The paths a container unpacks a session's inputs under: those its request names, each an
    absolute path outside the system's folders; ValueError otherwise."""
    out = []
    for path in named_paths(request):
        clean = Path(os.path.normpath(path))
        if (
            not clean.is_absolute()
            or clean == Path("/")
            or any(clean.is_relative_to(s) for s in SYSTEM_PATHS)
        ):
            raise ValueError(f"the request names {str(path)!r}: not a place for a session's inputs")
        out.append(PurePosixPath(clean.as_posix().lstrip("/")))
    return tuple(out)


def unpack(
    archive: Path, dest: Path, limit: int = FILES_LIMIT, under: tuple[PurePosixPath, ...] | None = None
) -> None:
    """Extract an archive of ``pack`` into ``dest`` (a new or empty folder), treating it as hostile:
    uncompressed only; at most ``limit`` bytes written (a sparse file's full size, a hard link's
    copy counted in full, each checked before it is written) and the sandbox's file count; only
    folders, files and symbolic links (a hard link becomes a copy of a file already extracted here); a name that is
    absolute, climbs out, names an entry already there, or passes through a link is refused
    (ValueError); modes are masked and ownership is this process's. A symbolic link is written as
    the link it is, whatever it points at, and never followed: what the agent left, as it left it.
    ``under``: the only paths (relative to ``dest``) an entry may have or lie below.
    Written by hand, not with tarfile's extraction filters: the image's Debian Python (3.11.2)
    predates them."""
    dest.mkdir(parents=True, exist_ok=True)
    root = os.path.realpath(dest)
    total, count = 0, 0
    with tarfile.open(archive, "r:") as tar:
        for member in tar:
            count += 1
            total += member.size if member.isfile() else 0
            if total > limit or count > files_limit():
                raise ValueError(f"over {limit >> 20} MiB or {files_limit():,} entries")
            if under is not None and not any(PurePosixPath(member.name).is_relative_to(u) for u in under):
                raise ValueError(f"{member.name}: not under a path the request names")
            target = _target(member.name, dest, root)
            if target is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)  # no link on the way: _target checked
            if member.isdir():
                if not target.is_dir() or target.is_symlink():
                    os.mkdir(target, 0o755)
            elif member.issym():
                os.symlink(member.linkname, target)
            elif member.isfile():
                _write(tar, member, target)
            elif member.islnk():
                source = _target(member.linkname, dest, root, existing=True)
                if source is None or source.is_symlink() or not source.is_file():
                    raise ValueError(f"{member.name}: a hard link to {member.linkname}")
                total += source.stat().st_size  # a copy of it is what gets written
                if total > limit:
                    raise ValueError(f"over {limit >> 20} MiB or {files_limit():,} entries")
                shutil.copyfile(source, target, follow_symlinks=False)


def _target(name: str, dest: Path, root: str, existing: bool = False) -> Path | None:
    """Where a member named ``name`` goes under ``dest`` (None: the archive's own top, "."); with
    ``existing``, an entry already extracted (a hard link's source)."""
    parts = Path(name).parts
    if not parts or parts == (".",):
        return None
    if Path(name).is_absolute() or ".." in parts:
        raise ValueError(f"{name}: leaves the archive's folder")
    target = dest.joinpath(*parts)
    if os.path.realpath(target.parent) != os.path.join(root, *parts[:-1]):
        raise ValueError(f"{name}: written through a link")
    if existing:
        if not os.path.lexists(target):
            raise ValueError(f"{name}: not in the archive before")
    elif os.path.lexists(target) and not (target.is_dir() and not target.is_symlink()):
        raise ValueError(f"{name}: twice in the archive")
    return target


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    source = tar.extractfile(member)
    if source is None:
        raise ValueError(f"{member.name}: unreadable")
    mode = (member.mode & 0o755) | 0o600  # no set-id bits, no writes by others
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)


def digest_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
