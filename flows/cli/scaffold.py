"""``init``: copy the demo project, which is designed to show a real difference on the embedded model."""

from __future__ import annotations

import shutil
from pathlib import Path

from executors.errors import InputError
from flows.inputs.files import writable_folder

DEMO = Path(__file__).parents[1] / "demo"


def scaffold(target: Path) -> list[Path]:
    if target.exists() and not target.is_dir():
        raise InputError(f"{target}: is a file; init writes into a new or empty folder")
    writable_folder(target, "init")
    files = sorted(p for p in DEMO.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    clashes = [target / p.relative_to(DEMO) for p in files if (target / p.relative_to(DEMO)).exists()]
    if clashes:
        raise InputError(f"{clashes[0]}: already exists; init writes only into a new or empty folder")
    written = []
    try:
        for src in files:
            dest = target / src.relative_to(DEMO)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            written.append(dest)
    except OSError as exc:
        raise InputError(f"{target}: cannot create the project there ({exc.strerror or exc})") from None
    return written
