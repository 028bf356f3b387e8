"""Where a fleet's sessions travel: the deployment's storage URL (fsspec: a folder, ``s3://...``).

The parent writes a session's inputs archive there and reads back what the session stored under its
key; a container sees only its own session's part: a folder storage's two paths mounted
(:func:`storage_mounts`), an ``s3://`` storage's objects as URLs signed for that part alone
(:func:`signed_urls`, :class:`SignedStorage`), so it holds no credential of the bucket.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from fsspec.asyn import sync
from fsspec.core import url_to_fs

from executors.lean_httpx import httpx

#: What a session leaves in the storage: its record (the result), the files it left, and the mark that
#: it began (after which it is never dispatched again).
RECORD, FILES, STARTED = "session.json", "files.tar", "started"


def stored(key: str, name: str) -> str:
    return f"sessions/{key}/{name}"


class Storage:
    """Where a fleet's sessions travel: an fsspec URL (a local folder, ``s3://bucket/prefix``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        # path-style S3 requests: one host name for every bucket, the one the gateway routes; a fresh
        # client each time (fsspec would reuse one made for an endpoint the environment no longer names)
        options = (
            {"config_kwargs": {"s3": {"addressing_style": "path"}}, "skip_instance_cache": True}
            if url.startswith("s3://")
            else {}
        )
        self.fs, self.root = url_to_fs(url, **options)

    @property
    def local(self) -> bool:
        """A folder of this machine's file system (a stat to look, not a request)."""
        return self.fs.protocol in ("file", ("file", "local"))

    def path(self, key: str) -> str:
        return f"{self.root.rstrip('/')}/{key}"

    def exists(self, key: str) -> bool:
        self.fs.invalidate_cache()  # another machine writes here: a listing remembered may be stale
        return bool(self.fs.exists(self.path(key)))

    def put(self, local: Path, key: str) -> None:
        """Whole or not at all: a reader never sees half a file (written aside, then moved)."""
        partial = self.path(f"{key}.partial-{uuid.uuid4().hex}")
        self._folder_of(key)
        self.fs.put_file(str(local), partial)
        self.fs.mv(partial, self.path(key))

    def mark(self, key: str, text: str) -> None:
        self._folder_of(key)
        self.fs.pipe_file(self.path(key), text.encode())

    def _folder_of(self, key: str) -> None:
        self.fs.makedirs(self.path(key).rsplit("/", 1)[0], exist_ok=True)

    def read_mark(self, key: str) -> str | None:
        try:
            return bytes(self.fs.cat_file(self.path(key))).decode()
        except FileNotFoundError:
            return None

    def get(self, key: str, local: Path) -> None:
        self.fs.get_file(self.path(key), str(local))

    def size(self, key: str) -> int:
        return int(self.fs.size(self.path(key)))

    def info(self, key: str) -> dict[str, object]:
        """What the storage says of one object: its type and size (a folder's: link and link count)."""
        return dict(self.fs.info(self.path(key)))

    def names(self, folder: str) -> list[str]:
        """The names of the files directly in ``folder`` (a key), sorted; none when it is absent."""
        self.fs.invalidate_cache()
        try:
            found = self.fs.ls(self.path(folder), detail=False)
        except FileNotFoundError:
            return []
        return sorted(str(p).rstrip("/").rsplit("/", 1)[-1] for p in found)


#: How long a session's signed URLs hold: its wait for a worker, its timeout and the grace, with room.
SIGNED_S = 24 * 3600


def signed_urls(store: Storage, key: str, inputs: str) -> dict[str, str] | None:
    """For an ``s3://`` storage: one session's part of it as URLs signed for that part alone (its
    inputs and its record to read; its mark, files and record to write), so its container needs no
    credential of the bucket. None for a folder (its part is mounted instead)."""
    if not store.url.startswith("s3://"):
        return None
    fs: Any = store.fs
    sync(fs.loop, fs.set_session)

    def sign(method: str, name: str) -> str:
        bucket, path, _ = fs.split_path(store.path(name))
        params = {"Bucket": bucket, "Key": path}
        return str(
            sync(
                fs.loop, fs.s3.generate_presigned_url, ClientMethod=method, Params=params, ExpiresIn=SIGNED_S
            )
        )

    reads = (f"inputs/{inputs}.tar", stored(key, RECORD))
    writes = (stored(key, STARTED), stored(key, FILES), stored(key, RECORD))
    return {f"GET {n}": sign("get_object", n) for n in reads} | {
        f"PUT {n}": sign("put_object", n) for n in writes
    }


class SignedStorage:
    """A container's view of its session's part of an ``s3://`` storage: only the signed URLs its
    flow run carries (the methods of :class:`Storage` that the session flow calls)."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls

    def _url(self, method: str, key: str) -> str:
        url = self.urls.get(f"{method} {key}")
        if url is None:
            raise ValueError(f"{method} {key}: not this session's part of the storage")
        return url

    def exists(self, key: str) -> bool:
        response = httpx.get(self._url("GET", key), headers={"Range": "bytes=0-0"}, timeout=60)
        return response.status_code in (200, 206)

    def get(self, key: str, local: Path) -> None:
        with httpx.stream("GET", self._url("GET", key), timeout=300) as response, open(local, "wb") as out:
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)

    def put(self, local: Path, key: str) -> None:
        with open(local, "rb") as body:  # one object appears whole: a reader never sees half of it
            httpx.put(self._url("PUT", key), content=body, timeout=300).raise_for_status()

    def mark(self, key: str, text: str) -> None:
        httpx.put(self._url("PUT", key), content=text.encode(), timeout=60).raise_for_status()


def storage_mounts(store: Storage, key: str, inputs: str) -> list[str]:
    """The volumes of one session's flow run, for a storage that is a local folder: its inputs
    read-only and its own results folder, nothing of any other session's (an s3:// storage: none)."""
    if not store.local:
        return []
    store.fs.makedirs(store.path(f"sessions/{key}"), exist_ok=True)
    archive, results = store.path(f"inputs/{inputs}.tar"), store.path(f"sessions/{key}")
    return [f"{archive}:{archive}:ro", f"{results}:{results}:rw"]
