"""A team's one history: a suite's reports kept in a shared storage (an fsspec URL: a folder, or
``s3://bucket/prefix``, as the fleet's storage), so nights run on several machines, or by several
fleet workers, compare with each other. A run mirrors the suite's reports it does not have into its
own reports folder (the regression check, ``history`` and the report server's trend then read one
history), and adds its own report.

The storage is another machine's writing: only file names a report can have are taken, each bounded
in size, never over a report already here, and a storage that cannot be read is a warning, not a lost
run."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from executors.errors import warn
from flows.engine.storage import Storage

#: A report's file name (its id, then .json), and the most a shared report may weigh.
REPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,200}\.json")
MAX_REPORT_BYTES = 64 * 1024 * 1024


def suite_folder(suite: str) -> str:
    return f"reports/{quote(suite, safe='')}"


def pull(url: str, suite: str, dest: Path) -> tuple[int, list[str]]:
    """The suite's reports of the storage that ``dest`` lacks, copied in: (how many, what was refused)."""
    store, folder = Storage(url), suite_folder(suite)
    copied, refused = 0, []
    dest.mkdir(parents=True, exist_ok=True)
    for name in store.names(folder):
        key = f"{folder}/{name}"
        if not REPORT_NAME.fullmatch(name):
            refused.append(f"{name}: not a report's file name")
        elif (dest / name).exists():
            continue
        elif odd := _odd(store.info(key)):
            refused.append(f"{name}: {odd}")
        elif (size := store.size(key)) > MAX_REPORT_BYTES:
            refused.append(f"{name}: {size:,} bytes (at most {MAX_REPORT_BYTES:,})")
        else:
            partial = dest / f".{name}.partial"
            store.get(key, partial)
            partial.replace(dest / name)
            copied += 1
    return copied, refused


def _odd(info: dict[str, object]) -> str | None:
    """Why an object of a folder storage is no report to take: a link (it may lead out of the
    folder), a hard link (the same file elsewhere), or not a file."""
    if info.get("islink"):
        return "a link (refused: it may lead out of the shared folder)"
    if info.get("type") != "file":
        return "not a file"
    if int(str(info.get("nlink") or 1)) > 1:
        return "a hard link (refused: the same file stands elsewhere)"
    return None


def push(url: str, suite: str, report: Path) -> None:
    """This run's report into the shared history (whole or not at all)."""
    Storage(url).put(report, f"{suite_folder(suite)}/{report.name}")


def mirror(step: Literal["pull", "push"], url: str, suite: str, local: Path) -> None:
    """--history-url: the team's nights mirrored in (``pull``), this one added (``push``); a storage
    that fails is a warning (the run and its report stand, on this machine's history)."""
    try:
        if step == "push":
            push(url, suite, local)
            return
        copied, refused = pull(url, suite, local)
    except Exception as exc:  # fsspec's errors are many: a network, a credential, a bucket
        warn(f"--history-url {url}: could not {step} the suite's reports ({type(exc).__name__}: {exc})")
        return
    for line in refused:
        warn(f"--history-url {url}: refused {line}")
    if copied:
        print(f"skillab: {copied} report(s) of suite {suite} from {url}", file=sys.stderr)
