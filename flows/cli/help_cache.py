"""``--help`` without building the command line: its text, kept from the last time it was printed.

The command line is generated from the options' pydantic models, the executors' and graders'
registries and every mode's flags, so printing help imports most of skillab (about 0.55 s here); the
text itself only changes when the code, the environment defaults it shows, or the terminal's width
do. So a help text is kept under ``$SKILLAB_HOME/cache/help``, keyed by all of those, and the next
identical request prints it in a few milliseconds. This module imports nothing of skillab's and
nothing heavy: it runs before anything else.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
from pathlib import Path

#: The packages whose files make the command line (their sizes and modification times are the key).
PACKAGES = ("flows", "executors", "graders", "tasks")
ROOT = Path(__file__).resolve().parents[2]
#: Environment variables a help text may show (defaults read from them).
SHOWN_ENV = ("SKILLAB_", "PREFECT_")
KEPT = 64  # help texts kept: each change of the code makes new ones, the oldest go


def wants_help(argv: list[str]) -> bool:
    return any(a in ("-h", "--help") for a in argv) and "--" not in argv


def _key(argv: list[str]) -> str:
    digest = hashlib.sha256()
    digest.update(repr((argv, sys.version, shutil.get_terminal_size().columns)).encode())
    for name, value in sorted(os.environ.items()):
        if name.startswith(SHOWN_ENV):
            digest.update(f"{name}={value}\0".encode())
    add_code(digest)
    return digest.hexdigest()[:32]


def add_code(digest: hashlib._Hash) -> None:
    """Adds skillab's code to a key: every file of its packages, by size and modification time."""
    for package in PACKAGES:
        for root, dirs, files in os.walk(ROOT / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                stat = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())


def home() -> Path:
    """skillab's home (as flows.inputs.files.skillab_home, without importing it: this runs first)."""
    return Path(os.environ.get("SKILLAB_HOME") or Path.home() / ".skillab")


def _path(argv: list[str]) -> Path:
    return home() / "cache" / "help" / f"{_key(argv)}.txt"


def kept(argv: list[str]) -> str | None:
    """The help text this very request printed last time, if nothing it depends on changed."""
    try:
        return _path(argv).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class Recorder(io.TextIOBase):
    """Stands in for stdout while help is printed: passes everything on and keeps a copy."""

    def __init__(self, out: io.TextIOBase) -> None:
        self.out = out
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def keep(argv: list[str], text: str) -> None:
    """Keep a printed help text (atomically; an unwritable home only costs the speed-up)."""
    path = _path(argv)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
        texts = sorted(path.parent.glob("*.txt"), key=lambda p: p.stat().st_mtime_ns)
        for old in texts[:-KEPT]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
