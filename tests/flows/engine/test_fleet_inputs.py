"""What a fleet container takes from its storage, treated as hostile: inputs checked against the digest
the parent named, unpacked only under the paths the request names, never into the system's folders
(an ``etc/ld.so.preload`` or a ``.pth`` file would run before bubblewrap, next to the key)."""

from __future__ import annotations

import asyncio
import io
import tarfile
from pathlib import Path, PurePosixPath

import pytest

from executors.schema import AgentRequest
from flows.engine.container_engine import session_in_container
from flows.engine.session_files import confined_paths, digest_file, pack, unpack
from flows.engine.storage import Storage


def request(tmp_path: Path, **change: str) -> AgentRequest:
    fields = {
        "cli": "claude",
        "model": "sonnet",
        "prompt": "p",
        "sandbox": str(tmp_path / "box" / "sb"),
        "home": str(tmp_path / "box" / "home"),
        "raw_stream": str(tmp_path / "box" / "out" / "raw_stream.jsonl"),
    }
    return AgentRequest.model_validate(fields | change)


def planted(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def packed(tmp_path: Path, req: AgentRequest) -> tuple[Storage, Path, str]:
    """A storage, and the request's sandbox packed as the parent packs a session's inputs, with its digest."""
    archive = tmp_path / "inputs.tar"
    pack({req.sandbox.lstrip("/"): Path(req.sandbox)}, archive)
    return Storage(str(tmp_path / "store")), archive, digest_file(archive)


def test_inputs_unpack_only_under_the_paths_the_request_names(tmp_path: Path) -> None:
    req = request(tmp_path)
    under = confined_paths(req)
    assert PurePosixPath(req.sandbox.lstrip("/")) in under
    for hostile in ("etc/ld.so.preload", "opt/venv/lib/python3.11/site-packages/evil.pth", "usr/x"):
        archive = tmp_path / "in.tar"
        archive.write_bytes(planted({hostile: b"/tmp/evil.so\n"}))
        with pytest.raises(ValueError, match="not under a path the request names"):
            unpack(archive, tmp_path / "root", under=under)
        assert not (tmp_path / "root" / hostile).exists()
    for name in ("/etc", "/opt/venv/lib/python3.11/site-packages", "/usr/lib", "relative/home", "/"):
        with pytest.raises(ValueError, match="not a place for a session's inputs"):
            confined_paths(request(tmp_path, home=name))


def test_a_container_takes_no_inputs_that_do_not_match_their_digest(tmp_path: Path) -> None:
    """Someone who can write to the storage swaps the archive the parent named: nothing is unpacked
    and no session starts."""
    req = request(tmp_path)
    Path(req.sandbox).mkdir(parents=True)
    (Path(req.sandbox) / "task.txt").write_text("the task")
    store, _, digest = packed(tmp_path, req)
    swapped = tmp_path / "swapped.tar"
    swapped.write_bytes(planted({req.sandbox.lstrip("/") + "/task.txt": b"another task"}))
    store.put(swapped, f"inputs/{digest}.tar")
    (Path(req.sandbox) / "task.txt").unlink()
    with pytest.raises(ValueError, match="does not match its digest"):
        asyncio.run(session_in_container(req.model_dump(mode="json"), store.url, "a" * 32, digest, None, "l"))
    assert not (Path(req.sandbox) / "task.txt").exists()
    with pytest.raises(ValueError, match="not one"):
        asyncio.run(session_in_container(req.model_dump(mode="json"), store.url, "../x", digest, None, "l"))


def test_a_session_no_flow_run_names_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its start is marked with the flow run that pays for it (the parent tells a re-dispatch from a
    second payment by it): without one in the environment nothing starts and nothing is marked."""
    monkeypatch.delenv("PREFECT__FLOW_RUN_ID", raising=False)
    req = request(tmp_path)
    Path(req.sandbox).mkdir(parents=True)
    store, archive, digest = packed(tmp_path, req)
    store.put(archive, f"inputs/{digest}.tar")
    with pytest.raises(ValueError, match=r"no flow run named in \$PREFECT__FLOW_RUN_ID"):
        asyncio.run(session_in_container(req.model_dump(mode="json"), store.url, "a" * 32, digest, None, "l"))
    assert not list((tmp_path / "store").glob("sessions/**/*")), "a start was marked"
