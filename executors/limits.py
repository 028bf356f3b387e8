"""What one sandbox may use, and how much it used: its processes (a pids cgroup of its own), the
bytes and files it writes (watched while it runs), and the bytes a tree would take when copied.

The bounds come from the environment (``SKILLAB_SANDBOX_*``); ``executors/sandbox.py`` applies them
to the commands it wraps, the agent executor watches a session's folders with :class:`DiskWatch`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Literal

from executors.errors import env_int


def pids_limit() -> int:
    """Processes (threads included) one sandbox may hold at once ($SKILLAB_SANDBOX_PIDS)."""
    return env_int("SKILLAB_SANDBOX_PIDS", 512)


def disk_limit() -> int:
    """Bytes one sandbox may write into its writable folders together ($SKILLAB_SANDBOX_DISK_MB)."""
    return env_int("SKILLAB_SANDBOX_DISK_MB", 1024) * 1024 * 1024


def files_limit() -> int:
    """Files one sandbox may create in its writable folders ($SKILLAB_SANDBOX_FILES)."""
    return env_int("SKILLAB_SANDBOX_FILES", 100_000)


def tmp_limit() -> int:
    """Bytes of the sandbox's private /tmp ($SKILLAB_SANDBOX_TMP_MB)."""
    return env_int("SKILLAB_SANDBOX_TMP_MB", 256) * 1024 * 1024


PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


@functools.cache
def _pids_root() -> Path | None:
    """A cgroup folder where this process may make pids-limited children: cgroup v1's pids
    hierarchy, or v2's root where the pids controller is enabled; None when neither is writable."""
    for root in PIDS_ROOTS:
        v2 = root.name != "pids"
        if v2 and "pids" not in _read(root / "cgroup.subtree_control").split():
            continue
        base = root / "skillab"
        try:
            base.mkdir(exist_ok=True)
            if v2:  # the children of skillab/ get the controller too
                (base / "cgroup.subtree_control").write_text("+pids")
        except OSError:
            continue
        return base
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@contextlib.contextmanager
def pids_cgroup(isolation: Literal["bubblewrap", "none"]) -> Iterator[Path | None]:
    """A fresh pids cgroup capped at :func:`pids_limit` for one sandbox (None without bubblewrap or
    where no cgroup can be made: then, for a non-root user, the process rlimit holds). Every process
    still in it is killed and the group removed afterwards."""
    root = _pids_root() if isolation == "bubblewrap" else None
    if root is None:
        yield None
        return
    group = root / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(pids_limit()))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        yield None
        return
    try:
        yield group
    finally:
        _remove_cgroup(group)


def _remove_cgroup(group: Path) -> None:
    for _ in range(50):
        pids = [int(p) for p in _read(group / "cgroup.procs").split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.05)


def sweep_cgroups() -> None:
    """Remove skillab's pids cgroups whose creating process is gone (a run killed with -9)."""
    root = _pids_root()
    if root is None:
        return
    for group in root.iterdir():
        owner = group.name.split("-", 1)[0]
        if group.is_dir() and owner.isdigit() and not alive(int(owner)):
            _remove_cgroup(group)


def alive(pid: int) -> bool:
    """Whether a process with this id exists (a reused id counts: the sweep then waits a run)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DiskWatch:
    """The bytes a sandbox wrote into its writable folders, read every ``every_s`` seconds in a
    thread; ``exceeded`` is set (and ``on_exceeded`` called once) when they pass ``limit``."""

    def __init__(
        self,
        places: Iterable[Path],
        limit: int,
        on_exceeded: Callable[[], None] | None = None,
        every_s: float = 0.5,
    ) -> None:
        self.places = [Path(p) for p in places]
        self.limit = limit
        self.every_s = every_s
        self.exceeded = threading.Event()
        self._stop = threading.Event()
        self._callback = on_exceeded
        self._thread = threading.Thread(target=self._watch, daemon=True, name="skillab-disk-watch")

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def used(self) -> tuple[int, int]:
        """(bytes, files) in the watched folders."""
        sizes = [tree_size(p) for p in self.places]
        return sum(b for b, _ in sizes), sum(f for _, f in sizes)

    def _watch(self) -> None:
        pause = self.every_s
        while not self._stop.wait(pause):
            began = time.monotonic()
            used, files = self.used()
            # A tree of many files takes a while to walk: the watch never spends over a fifth of a core.
            pause = max(self.every_s, 4 * (time.monotonic() - began))
            if used > self.limit or files > files_limit():
                self.exceeded.set()
                if self._callback is not None:
                    self._callback()
                return

    @property
    def message(self) -> str:
        return (
            f"killed: wrote more than {self.limit // (1024 * 1024)} MiB or {files_limit():,} files "
            "(the sandbox's disk bound)"
        )


def tree_size(root: Path) -> tuple[int, int]:
    """(bytes, entries) under ``root``, links not followed; (0, 0) when it is gone. The bytes are
    what copying the tree would write: a sparse file's apparent size (never its few blocks), and
    each hard link in full."""
    total = count = 0
    stack = [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        count += len(entries)
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    total += max(info.st_size, info.st_blocks * 512)
            except OSError:
                continue
    return total, count
