"""Where sessions work on the host, and the sweep that removes what a killed run left.

Every session's sandbox and HOME live under one root per run in ``$TMPDIR/skillab-sandboxes``, made by
:func:`new_root`, which records the owning process in ``.owners/``. A run removes its roots when it
ends, is interrupted or fails; a run killed with ``-9`` cannot, so every run starts with
:func:`sweep`: roots, forwarder sockets and pids cgroups whose owner is gone are removed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from executors.limits import alive, sweep_cgroups


def sandboxes() -> Path:
    return Path(tempfile.gettempdir()) / "skillab-sandboxes"


def _owners() -> Path:
    return sandboxes() / ".owners"


def claim(root: Path) -> Path:
    """Record this process as the owner of ``root`` (before it is made, so the sweep of another
    process never sees it ownerless) and make it."""
    owners = _owners()
    owners.mkdir(parents=True, exist_ok=True)
    marker = owners / root.name
    if not marker.exists():
        marker.write_text(str(os.getpid()), encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


RELEASE_TRIES = 10


def new_root(length: int = 12) -> Path:
    """A fresh root for one run's sandboxes, at a random and neutral path (the working directory
    is part of an agent's system prompt, so it must not carry the skill's name)."""
    return claim(sandboxes() / secrets.token_hex(length // 2))


def release(root: Path) -> None:
    # A session's processes may still write into the root while they die (Claude Code writes its
    # transcript as SIGTERM ends it): remove it again, briefly, until nothing comes back.
    for _ in range(RELEASE_TRIES):
        shutil.rmtree(root, ignore_errors=True)
        if not root.exists():
            break
        time.sleep(0.2)
    (_owners() / root.name).unlink(missing_ok=True)


@contextlib.contextmanager
def session_root() -> Iterator[Path]:
    """A root removed when the block ends, however it ends (an exception, Ctrl-C, SIGTERM)."""
    root = new_root()
    try:
        yield root
    finally:
        release(root)


def sweep() -> None:
    """Remove sandbox roots, forwarder folders and pids cgroups whose process is gone."""
    base = sandboxes()
    if base.is_dir():
        owners = _owners()
        for root in base.iterdir():
            if root.name == owners.name:
                continue
            marker = owners / root.name
            try:
                owner = int(marker.read_text(encoding="utf-8").strip())
            except (OSError, ValueError):
                owner = None
            if owner is None or not alive(owner):
                release(root)
        if owners.is_dir():
            for marker in owners.iterdir():
                if not (base / marker.name).exists():
                    with contextlib.suppress(OSError, ValueError):
                        if not alive(int(marker.read_text(encoding="utf-8").strip())):
                            marker.unlink()
    # the forwarder's module (h11) is imported here only: a custom check's sandbox needs none of it
    from executors.egress import sweep as sweep_forwarders

    sweep_forwarders()
    sweep_cgroups()
