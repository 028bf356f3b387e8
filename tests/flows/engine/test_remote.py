"""What comes back from a fleet container is hostile: the agent wrote its sandbox, and a container
taken over could write the archive itself. Nothing in it may reach past the folder it is unpacked in."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from executors.schema import AgentRequest, AgentSession, SessionStatus
from flows.engine.remote import FleetPool, _restore
from flows.engine.session_files import input_paths, output_folders, pack, unpack
from flows.engine.storage import RECORD, STARTED, Storage, stored


def archive(path: Path, *members: tuple[str, bytes, str, bytes]) -> Path:
    """(name, type, link, data) members, written as given (every mode bit set)."""
    with tarfile.open(path, "w") as tar:
        for name, kind, link, data in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, link, 0o6777
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if data else None)
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / "dir").mkdir(parents=True, mode=0o700)
    (folder / "secret").write_text("keep")
    (folder / "secret").chmod(0o600)
    return folder


@pytest.mark.parametrize(
    "members",
    [
        # a link, then a file or a folder of the same name: written through the link
        [("s/a", tarfile.SYMTYPE, "{out}/victim", b""), ("s/a", tarfile.REGTYPE, "", b"pwned")],
        [("s/d", tarfile.SYMTYPE, "{out}/dir", b""), ("s/d", tarfile.DIRTYPE, "", b"")],
        # a file below a link to a folder outside
        [("s/d", tarfile.SYMTYPE, "{out}/dir", b""), ("s/d/f", tarfile.REGTYPE, "", b"pwned")],
        # a hard link through a linked folder, or to a link: the outside file itself
        [("s/d", tarfile.SYMTYPE, "{out}", b""), ("s/h", tarfile.LNKTYPE, "s/d/secret", b"")],
        [("s/l", tarfile.SYMTYPE, "{out}/secret", b""), ("s/h", tarfile.LNKTYPE, "s/l", b"")],
        [("s/h", tarfile.LNKTYPE, "{out}/secret", b"")],
        [("../escape", tarfile.REGTYPE, "", b"pwned")],
        [("{out}/victim", tarfile.REGTYPE, "", b"pwned")],
    ],
    ids=["file-over-link", "dir-over-link", "file-below-link", "hardlink-via-link", "hardlink-to-link",
         "hardlink-absolute", "dot-dot", "absolute"],
)  # fmt: skip
def test_a_crafted_archive_writes_nothing_outside(
    tmp_path: Path, outside: Path, members: list[tuple[str, bytes, str, bytes]]
) -> None:
    given = [(n.format(out=outside), k, link.format(out=outside), d) for n, k, link, d in members]
    with pytest.raises((ValueError, OSError)):
        unpack(archive(tmp_path / "evil.tar", *given), tmp_path / "dest")
    assert not (outside / "victim").exists() and not (tmp_path / "escape").exists()
    assert (outside / "secret").read_text() == "keep" and (outside / "secret").stat().st_mode & 0o777 == 0o600
    assert (outside / "dir").stat().st_mode & 0o777 == 0o700 and not any((outside / "dir").iterdir())


def test_what_the_agent_left_comes_back_as_it_was_less_its_modes(tmp_path: Path) -> None:
    """Files, folders, a link leading out (kept as a link, never followed) and a hard link (a copy)."""
    made = archive(
        tmp_path / "ok.tar",
        ("s", tarfile.DIRTYPE, "", b""),
        ("s/f.txt", tarfile.REGTYPE, "", b"hello"),
        ("s/out", tarfile.SYMTYPE, "/etc/passwd", b""),
        ("s/twin", tarfile.LNKTYPE, "s/f.txt", b""),
    )
    unpack(made, tmp_path / "dest")
    dest = tmp_path / "dest" / "s"
    assert (dest / "f.txt").read_text() == "hello" and (dest / "f.txt").stat().st_mode & 0o7000 == 0
    assert (dest / "out").is_symlink() and str((dest / "out").readlink()) == "/etc/passwd"
    assert (dest / "twin").read_text() == "hello" and not (dest / "twin").is_symlink()


def test_compressed_or_oversized_archives_are_refused(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "bomb.tar.xz", "w:xz") as tar:
        info = tarfile.TarInfo("s/zeros")
        info.size = 1 << 20
        tar.addfile(info, io.BytesIO(bytes(1 << 20)))
    with pytest.raises(tarfile.ReadError):
        unpack(tmp_path / "bomb.tar.xz", tmp_path / "a")
    big = archive(tmp_path / "big.tar", ("s/f", tarfile.REGTYPE, "", bytes(4096)))
    with pytest.raises(ValueError, match="over"):
        unpack(big, tmp_path / "b", limit=1024)


def request(root: Path) -> AgentRequest:
    return AgentRequest(
        cli="claude",
        model="sonnet",
        prompt="p",
        sandbox=str(root / "out" / "work"),
        home=str(root / "out" / "home"),
        raw_stream=str(root / "out" / "raw_stream.jsonl"),
        skill_dir=str(root / "skill"),
    )


def test_nested_folders_travel_once_and_the_home_stays_behind(tmp_path: Path) -> None:
    """Trigger mode keeps the sandbox and HOME in the outputs folder: each file is packed once, and
    the session's HOME (the CLI's own files) is not brought back."""
    req = request(tmp_path)
    for folder in ("out/work", "out/home", "skill"):
        (tmp_path / folder).mkdir(parents=True)
    assert set(input_paths(req)) == {tmp_path / "out", tmp_path / "skill"}
    (tmp_path / "out/work/a.txt").write_text("a")
    (tmp_path / "out/home/.claude.json").write_text("{}")
    assert output_folders(req) == {"outputs": tmp_path / "out"}
    pack(output_folders(req), tmp_path / "files.tar", skip=(Path(req.home),))
    with tarfile.open(tmp_path / "files.tar") as tar:
        names = tar.getnames()
    assert "outputs/work/a.txt" in names and not any("home" in n for n in names)


def test_a_session_folder_that_comes_back_as_a_link_is_refused(tmp_path: Path) -> None:
    """The restored sandbox may not be a link to a folder of this machine (grading would read it)."""
    store = Storage(str(tmp_path / "storage"))
    req = request(tmp_path / "run")
    record = tmp_path / "session.json"
    record.write_text(
        json.dumps({"session": AgentSession(ok=True, status=SessionStatus.SUCCESS).model_dump()})
    )
    store.put(record, "sessions/k/session.json")
    store.put(
        archive(tmp_path / "f.tar", ("outputs", tarfile.SYMTYPE, str(Path.home()), b"")),
        "sessions/k/files.tar",
    )
    with pytest.raises(ValueError, match="a link"):
        _restore(store, "k", req)
    assert not Path(req.raw_stream).parent.is_symlink()


class Dispatches:
    """A Prefect client double for ``FleetPool._run``: each flow run it creates plays the next outcome
    ("crash" before the session began, "crash-begun" after, "cancel", "done", "slow": claimed by
    worker "w0", done at its fourth reading unless cancelled first, "raced": claimed by "w0", its
    container begins it as it is cancelled and stores the result two readings later); ``earlier``:
    the session's key already names a flow run of an earlier parent run, ended without a result
    after its session began. ``workers``: the pool's workers as the API lists them."""

    def __init__(self, store: Storage, key: str, outcomes: list[str], earlier: bool) -> None:
        from prefect.states import Crashed

        self.store, self.key, self.outcomes = store, key, outcomes
        self.idempotency: list[str] = []
        self.lost: list[int] = []  # statuses answered instead of the next replies (the runs made)
        self.runs: dict[str, Any] = {}
        self.states: dict[str, Any] = {}
        self.slow: dict[str, int] = {}  # a slow or raced run's readings so far
        self.raced: set[str] = set()
        self.stuck: set[str] = set()  # pending for good, its worker online
        self.workers: list[Any] = []
        self.set_states: list[tuple[str, Any]] = []
        if earlier:
            self.runs[key] = SimpleNamespace(id="earlier", state=Crashed())
            store.mark(stored(key, STARTED), "earlier")

    async def __aenter__(self) -> Dispatches:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def create_flow_run_from_deployment(self, deployment: str, **kwargs: Any) -> Any:
        from prefect.states import Cancelled, Completed, Crashed, Pending, Scheduled

        self.idempotency.append(kwargs["idempotency_key"])
        if kwargs["idempotency_key"] not in self.runs:
            run_id, outcome = f"run-{len(self.states)}", self.outcomes[len(self.states)]
            if outcome == "crash-begun":
                self.store.mark(stored(self.key, STARTED), run_id)
            if outcome == "done":
                self.store.fs.pipe_file(self.store.path(stored(self.key, RECORD)), b"{}")
            if outcome in ("slow", "raced", "stuck"):
                self.slow[run_id] = 0
            if outcome == "raced":
                self.raced.add(run_id)
            if outcome == "stuck":
                self.stuck.add(run_id)
            self.states[run_id] = {
                "cancel": Cancelled,
                "done": Completed,
                "slow": Pending,
                "raced": Pending,
                "stuck": Pending,
            }.get(outcome, Crashed)()
            self.runs[kwargs["idempotency_key"]] = SimpleNamespace(id=run_id, state=Scheduled())
        if self.lost:
            status = self.lost.pop(0)
            reply = httpx.Response(status, request=httpx.Request("POST", "http://api/flow_runs"))
            raise httpx.HTTPStatusError(str(status), request=reply.request, response=reply)
        return self.runs[kwargs["idempotency_key"]]

    async def read_flow_run(self, run_id: str) -> Any:
        from prefect.states import Completed

        if run_id in self.raced and self.states[run_id].is_cancelled():
            self.slow[run_id] += 1
            if self.slow[run_id] > 2:
                self.store.fs.pipe_file(self.store.path(stored(self.key, RECORD)), b"{}")
        elif (
            run_id in self.slow and self.states[run_id].is_pending() and run_id not in self.raced | self.stuck
        ):
            self.slow[run_id] += 1
            if self.slow[run_id] > 3:
                self.store.fs.pipe_file(self.store.path(stored(self.key, RECORD)), b"{}")
                self.states[run_id] = Completed()
        labels = {"prefect.worker.name": "w0"} if run_id in self.slow else {}
        return SimpleNamespace(id=run_id, state=self.states[run_id], labels=labels)

    async def read_flow_run_states(self, run_id: str) -> list[Any]:
        from prefect.states import Cancelled, Pending, Running

        if run_id in self.raced:
            return [Pending(), Running(), Cancelled()]
        return [Pending(), self.states[run_id]]

    async def read_workers_for_work_pool(self, pool: str) -> list[Any]:
        return self.workers

    async def set_flow_run_state(self, run_id: str, state: Any, force: bool) -> None:
        self.set_states.append((run_id, state))
        self.states[run_id] = state


def fleet_pool(monkeypatch: pytest.MonkeyPatch, client: Dispatches) -> FleetPool:
    import prefect.client.orchestration

    monkeypatch.setattr(prefect.client.orchestration, "get_client", lambda: client)
    monkeypatch.setattr("flows.engine.remote.POLL_S", 0.0)
    monkeypatch.setattr("flows.engine.remote.LOCAL_POLL_S", 0.0)
    pool = FleetPool("p")
    pool.deployment = SimpleNamespace(id="deployment")
    return pool


@pytest.mark.parametrize(
    ("earlier", "outcomes", "error"),
    [
        (False, ["crash", "done"], None),  # its container could not reach the API to begin: again
        (False, ["crash"] * 3, "Crashed with no result (no message), 3 times: never started"),
        (False, ["crash-begun"], "Crashed with no result"),  # it may have cost: never run twice in a run
        (False, ["cancel"], "Cancelled with no result"),  # someone cancelled it: not undone
        (True, ["crash", "done"], None),  # an earlier run's error, repeated by this run
    ],
)
def test_a_flow_run_that_ended_before_its_session_began_is_dispatched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: bool, outcomes: list[str], error: str | None
) -> None:
    store, key = Storage(str(tmp_path / "storage")), "k" * 32
    store.fs.makedirs(store.path(f"sessions/{key}"), exist_ok=True)
    client = Dispatches(store, key, outcomes, earlier)
    pool = fleet_pool(monkeypatch, client)
    got = asyncio.run(pool._run(store, key, "inputs", request(tmp_path), None, "label"))
    assert (got is None) if error is None else (got is not None and error in got), got
    assert client.idempotency[0] == key and len(client.states) == len(outcomes)
    assert len(set(client.idempotency)) == len(client.idempotency)  # every later dispatch a new flow run


@pytest.mark.parametrize("status", [503, 422])
def test_a_busy_api_is_asked_again_for_the_same_flow_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    """A dispatch the API answered with 503 (its database busy under load) after making the flow run
    is asked again with the same key: one flow run, no session error. A refusal (422) is not."""
    store, key = Storage(str(tmp_path / "storage")), "k" * 32
    store.fs.makedirs(store.path(f"sessions/{key}"), exist_ok=True)
    client = Dispatches(store, key, ["done"], earlier=False)
    client.lost = [status, status]
    pool = fleet_pool(monkeypatch, client)
    if status == 422:
        with pytest.raises(httpx.HTTPStatusError):
            asyncio.run(pool._run(store, key, "inputs", request(tmp_path), None, "label"))
        return
    assert asyncio.run(pool._run(store, key, "inputs", request(tmp_path), None, "label")) is None
    assert client.idempotency == [key] * 3 and len(client.states) == 1


@pytest.mark.parametrize("worker", ["online", "silent", "offline", "raced", "stuck"])
def test_a_flow_run_whose_worker_died_after_claiming_it_is_dispatched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: str
) -> None:
    """A flow run claimed (PENDING) by a worker killed before the run's container began it would wait
    forever: once its worker is offline, or ONLINE but unheard for three heartbeat intervals, it is
    cancelled (CANCELLED: no worker is left to finish a CANCELLING) and dispatched again. A run whose
    worker keeps up its heartbeats waits for its container, up to the session's timeout and grace
    ("stuck"); one whose container began it as it was cancelled ("raced": RUNNING in its states) is
    waited for, never dispatched twice."""
    from prefect.client.schemas.objects import WorkerStatus

    store, key = Storage(str(tmp_path / "storage")), "k" * 32
    store.fs.makedirs(store.path(f"sessions/{key}"), exist_ok=True)
    outcome = {"raced": "raced", "stuck": "stuck"}.get(worker, "slow")
    client = Dispatches(store, key, [outcome, "done"], earlier=False)
    now = datetime.now(UTC)
    last = now - timedelta(minutes=10) if worker == "silent" else now
    status = WorkerStatus.OFFLINE if worker in ("offline", "raced") else WorkerStatus.ONLINE
    client.workers = [
        SimpleNamespace(name=name, status=status, last_heartbeat_time=when, heartbeat_interval_seconds=30)
        for name, status, when in [("w0", status, last), ("w1", WorkerStatus.ONLINE, now)]
    ]
    pool = fleet_pool(monkeypatch, client)
    monkeypatch.setattr("flows.engine.remote.ABANDONED_S", 0.0)
    monkeypatch.setenv("SKILLAB_FLEET_GRACE_S", "1")
    session = request(tmp_path).model_copy(update={"timeout_s": 0.5})
    got = asyncio.run(asyncio.wait_for(pool._run(store, key, "inputs", session, None, "label"), 30))
    if worker == "stuck":
        assert got is not None and "no result 2s after a worker took it" in got, got
        assert [(run, state.type.value) for run, state in client.set_states] == [("run-0", "CANCELLING")]
        return
    assert got is None
    if worker == "online":
        assert client.set_states == [] and len(client.states) == 1
    elif worker == "raced":
        assert [(run, state.type.value) for run, state in client.set_states] == [("run-0", "CANCELLED")]
        assert len(client.states) == 1
    else:
        assert [(run, state.type.value) for run, state in client.set_states] == [("run-0", "CANCELLED")]
        assert len(client.states) == 2 and client.states["run-1"].is_completed()


@pytest.mark.usefixtures("prefect_harness")
def test_a_worker_silent_since_it_claimed_the_flow_run_leaves_nothing_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against Prefect's server: a worker claims the session's flow run (PENDING, its name on the run,
    as Prefect's workers do) and falls silent before a container began it, while another worker of
    the pool keeps up its heartbeats. Prefect's temporary server never marks the silent one offline;
    the parent does, by its heartbeats, cancels the run, and the session's next flow run gives it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.states import Pending

    from flows.engine.container_engine import SESSION_FLOW

    monkeypatch.setattr("flows.engine.remote.ABANDONED_S", 0.5)
    monkeypatch.setattr("flows.engine.remote.POLL_S", 0.2)
    store, key = Storage(str(tmp_path / "storage")), "k" * 32
    store.fs.makedirs(store.path(f"sessions/{key}"), exist_ok=True)
    pool = FleetPool("silent-claim")

    async def runs(client: Any, deployment: Any, n: int) -> list[Any]:
        """The deployment's flow runs, oldest first, once there are ``n``."""
        for _ in range(300):
            found = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment]))
            )
            if len(found) >= n:
                return sorted(found, key=lambda r: r.created)
            await asyncio.sleep(0.1)
        raise AssertionError(f"{n} flow runs were to be dispatched")

    async def main() -> tuple[str | None, list[Any]]:
        async with get_client() as client:
            await client.create_work_pool(WorkPoolCreate(name=pool.pool, type="process"))
            flow = await client.create_flow_from_name(SESSION_FLOW)
            deployment = await client.create_deployment(flow, pool.pool, work_pool_name=pool.pool)
            pool.deployment = await client.read_deployment(deployment)

            async def live() -> None:
                while True:
                    await client.send_worker_heartbeat(pool.pool, "w-live", heartbeat_interval_seconds=1)
                    await asyncio.sleep(0.3)

            heartbeats = asyncio.create_task(live())
            await client.send_worker_heartbeat(pool.pool, "w-dead", heartbeat_interval_seconds=1)
            session = asyncio.create_task(pool._run(store, key, "inputs", request(tmp_path), None, "label"))
            (first,) = await runs(client, deployment, 1)
            assert (await client.set_flow_run_state(first.id, Pending())).status.value == "ACCEPT"
            await client.update_flow_run_labels(first.id, {"prefect.worker.name": "w-dead"})
            await runs(client, deployment, 2)  # w-dead says nothing more: the session is dispatched again
            store.fs.pipe_file(store.path(stored(key, RECORD)), b"{}")  # as w-live's container would
            error = await asyncio.wait_for(session, 60)
            heartbeats.cancel()
            return error, [await client.read_flow_run(r.id) for r in await runs(client, deployment, 2)]

    error, (first, second) = asyncio.run(main())
    assert error is None
    assert first.state.type.value == "CANCELLED" and "worker went away" in (first.state.message or "")
    assert second.state.type.value == "SCHEDULED"
