"""The local Prefect server that runs share: chosen, reused, started once, stopped by its pid.

The lifecycle test builds a template database with Prefect's real migrations, starts the real server
(flows/cli/prefect_server.py) from it in a temporary home on a free port, and always stops it: the
suite leaves no server running.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar, cast

import pytest
import uvicorn

from executors.errors import InputError
from flows.cli import prefect_env
from flows.cli.main import main
from flows.cli.prefect_env import (
    SERVER_SETTING,
    alive,
    api_hinted,
    build_template,
    ensure_server,
    healthy,
    prepare_prefect,
    read_record,
    settings_files,
    stop_server,
    wait_healthy,
)
from flows.cli.prefect_server import copy_database, seed_database, warm_up
from tasks.unit_label import UNIT_LABEL
from tasks.unit_runs import TASK_KEY
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import ROOT, answer, bench_process, make_project


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private skillab and Prefect home, no API configured, the persistent mode on a free port; the
    server recorded there at the end (a test's or a command's, left by a failed test) is stopped."""
    monkeypatch.setenv("SKILLAB_HOME", str(tmp_path / "skillab"))
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(prefect_env.free_port("127.0.0.1")))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv(SERVER_SETTING, raising=False)
    yield tmp_path
    stop_server()


class Health(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = b"true" if self.path == "/api/health" else b"{}"
        self.send_response(200 if self.path == "/api/health" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering(homes: Path) -> Iterator[int]:
    """Something answering Prefect's health check at the default address (a user's own server)."""
    port = int(os.environ["PREFECT_SERVER_API_PORT"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()


def test_the_ephemeral_setting_starts_nothing(homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_SETTING, "ephemeral")
    prepare_prefect()
    assert "PREFECT_API_URL" not in os.environ
    assert read_record() is None


def test_a_configured_api_url_is_used_as_it_is(homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    prepare_prefect()
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"
    assert read_record() is None


def test_a_bad_setting_is_one_line(homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_SETTING, "sometimes")
    with pytest.raises(InputError, match="SKILLAB_PREFECT_SERVER=sometimes: expected one of persistent"):
        prepare_prefect()


def test_a_server_answering_at_the_default_address_is_reused(answering: int) -> None:
    found = ensure_server()
    assert (found.port, found.pid) == (answering, 0)  # nothing started, nothing recorded
    assert read_record() is None


def schema(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("select type, name from sqlite_master where name not like 'sqlite_%'"))


@pytest.fixture
def template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A template built as set-up builds it (Prefect's own migrations), private to the test."""
    path = tmp_path / "share" / "prefect-template.db"
    monkeypatch.setattr(prefect_env, "template_path", lambda: path)
    assert build_template() == path
    assert build_template() == path  # idempotent: built once
    with sqlite3.connect(path) as conn:
        (revision,) = conn.execute("select version_num from alembic_version").fetchone()
        (block_types,) = conn.execute("select count(*) from block_type").fetchone()
    assert revision  # migrated to a revision, and the tables are there
    assert ("table", "flow_run") in schema(path)
    assert block_types > 10  # registered, as a server's first start would
    return path


def test_start_reuse_and_stop(homes: Path, template: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        first = ensure_server()
        err = capsys.readouterr().err
        assert f"started a Prefect server in the background for runs to share, UI {first.ui_url}" in err
        assert "python -m flows.bench server stop" in err
        assert "first start takes" not in err  # started from the template
        assert schema(homes / "prefect" / "prefect.db") == schema(template)
        assert alive(first.pid) and healthy(first.api_url)
        assert json.loads((homes / "skillab" / "prefect-server.json").read_text())["pid"] == first.pid
        again = ensure_server()
        assert again == first  # reused, not started twice
        assert capsys.readouterr().err == ""
        assert main(["server", "status"]) == 0
        assert f"Prefect server at {first.ui_url} (pid {first.pid}" in capsys.readouterr().out
    finally:
        stopped = stop_server()
    assert stopped is not None and not alive(stopped.pid)
    assert not healthy(stopped.api_url)
    assert read_record() is None
    assert main(["server", "stop"]) == 0
    assert "no Prefect server started by skillab is running" in capsys.readouterr().out


def test_a_database_is_seeded_only_when_there_is_none(
    homes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "template.db"
    assert seed_database(template) is False  # no template: the server migrates a new database itself
    with sqlite3.connect(template) as conn:
        conn.execute("create table marker (x)")
    target = homes / "prefect" / "prefect.db"
    assert seed_database(template) is True and schema(target) == [("table", "marker")]
    with sqlite3.connect(target) as conn:
        conn.execute("create table mine (x)")
    assert seed_database(template) is False  # an existing database is never replaced
    assert ("table", "mine") in schema(target)
    monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL", "postgresql+asyncpg://u:p@db/prefect")
    assert seed_database(template) is False  # another database: nothing to seed


def test_copy_database_includes_what_is_still_in_the_write_ahead_log(tmp_path: Path) -> None:
    source = tmp_path / "a.db"
    conn = sqlite3.connect(source)
    conn.execute("pragma journal_mode=wal")
    conn.execute("create table t (x)")
    conn.execute("insert into t values (1)")
    conn.commit()  # still open: the rows may live only in a.db-wal
    copy_database(source, tmp_path / "b.db")
    conn.close()
    with sqlite3.connect(tmp_path / "b.db") as copy:
        assert copy.execute("select x from t").fetchall() == [(1,)]
    assert not list(tmp_path.glob(".*partial"))


def test_a_process_that_exited_is_not_alive(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        pass  # a zombie: exited, not yet reaped
    assert not alive(child.pid)
    child.wait()


def test_a_recorded_server_that_stopped_answering_is_replaced(
    homes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a live process that looks like our server but never answers, recorded long ago
    argv = [sys.executable, "-c", "import time; time.sleep(120)", str(prefect_env.SERVER_SCRIPT)]
    hung = subprocess.Popen(argv, start_new_session=True)  # in its own group, as start_server starts it
    try:
        old = prefect_env.ServerRecord(pid=hung.pid, host="127.0.0.1", port=9, log="", started=0.0)
        (homes / "skillab").mkdir(parents=True, exist_ok=True)
        prefect_env.record_path().write_text(json.dumps(prefect_env.asdict(old)))
        assert alive(hung.pid)
        new = prefect_env.ServerRecord(pid=0, host="127.0.0.1", port=1, log="", started=1.0)
        monkeypatch.setattr(prefect_env, "start_server", lambda host, port, announce: new)
        assert ensure_server(wait=False) == new
        assert hung.wait(timeout=30) is not None  # stopped, by its recorded pid
    finally:
        hung.kill()
        hung.wait()


def test_the_server_warms_its_routes_up_once_it_listens(answering: int) -> None:
    Health.seen.clear()
    url = f"http://127.0.0.1:{answering}/api/admin/version"
    warm_up(cast(uvicorn.Server, SimpleNamespace(started=False, should_exit=True)), url)
    assert Health.seen == []  # stopped before it listened: nothing to warm
    warm_up(cast(uvicorn.Server, SimpleNamespace(started=True, should_exit=False)), url)
    assert Health.seen == ["/api/admin/version"]


def test_work_is_done_while_the_server_starts_and_only_then(homes: Path) -> None:
    # a live process that looks like our server, answering only once the command's work is done
    argv = [sys.executable, "-c", "import time; time.sleep(120)", str(prefect_env.SERVER_SCRIPT)]
    starting = subprocess.Popen(argv, start_new_session=True)
    port = prefect_env.free_port("127.0.0.1")
    record = prefect_env.ServerRecord(
        pid=starting.pid, host="127.0.0.1", port=port, log="", started=time.time()
    )
    servers: list[http.server.ThreadingHTTPServer] = []

    def work() -> None:  # the server starts answering meanwhile
        servers.append(http.server.ThreadingHTTPServer(("127.0.0.1", port), Health))
        threading.Thread(target=servers[0].serve_forever, daemon=True).start()

    def never() -> None:
        raise AssertionError("the server answered: nothing to do meanwhile")

    try:
        wait_healthy(record, work)
        assert len(servers) == 1  # called once, and the wait went on until the server answered
        wait_healthy(record, never)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        starting.kill()
        starting.wait()


def test_a_server_started_from_another_checkout_is_recognised(tmp_path: Path) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
    other = subprocess.Popen([*sleep, str(tmp_path / "clone" / "flows" / "cli" / "prefect_server.py")])
    unrelated = subprocess.Popen([*sleep, str(tmp_path / "prefect_server.py")])
    try:
        for proc in (other, unrelated):  # past the moment exec has not yet written the arguments
            while not Path(f"/proc/{proc.pid}/cmdline").read_bytes():
                pass
        assert alive(other.pid)
        assert not alive(unrelated.pid)
    finally:
        for proc in (other, unrelated):
            proc.kill()
            proc.wait()


def test_what_hints_at_a_configured_api(tmp_path: Path) -> None:
    """Where Prefect may find an API URL besides the environment: a run then waits for Prefect's own
    answer before starting a server (see launch_server)."""
    cwd, home = tmp_path / "project", tmp_path / "prefect-home"
    cwd.mkdir()
    home.mkdir()
    env = {"PREFECT_HOME": str(home)}
    assert not api_hinted(env, cwd)
    (cwd / ".env").write_text("OPENAI_API_KEY=sk-x\n")
    (cwd / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (home / "profiles.toml").write_text(
        "active = 'local'\n[profiles.local]\nPREFECT_LOGGING_LEVEL = 'INFO'\n"
    )
    assert not api_hinted(env, cwd)  # files that say nothing about Prefect's API
    for key in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH", "prefect_api_url"):
        assert api_hinted(env | {key: "x"}, cwd)  # in any case, as Prefect reads them
    hints = {  # each file as a user who points Prefect at an API writes it
        ".env": "PREFECT_API_URL=http://elsewhere/api\n",
        "pyproject.toml": "[tool.prefect]\napi.url = 'http://elsewhere/api'\n",
        "prefect.toml": "",
        "profiles.toml": "[profiles.cloud]\nPREFECT_API_URL = 'https://api.prefect.cloud'\n",
    }
    files = settings_files(cwd, home)
    assert sorted(p.name for p in files) == sorted(hints)
    for path in files:
        before = path.read_text() if path.exists() else None
        path.write_text(hints[path.name])
        assert api_hinted(env, cwd), path
        path.unlink()
        if before is not None:
            path.write_text(before)
    assert not api_hinted(env, cwd)


#: `skillab run` in persistent mode, the server's start stopped short: whether Prefect was already
#: imported when the command started its server (it should not be: the server starts ~1 s sooner).
EARLY_START = """
import json, os, sys
from flows.cli import prefect_env
from flows.cli.main import main

def start_server(host, port, announce=True):
    open(sys.argv[1], "w").write(json.dumps({"prefect_imported": "prefect" in sys.modules}))
    os._exit(0)

prefect_env.start_server = start_server
main(sys.argv[2:])
"""


def persistent_env(homes: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (SERVER_SETTING, "PREFECT_API_URL")}
    return env | {"PYTHONPATH": str(ROOT)}


def test_a_run_starts_its_server_before_importing_prefect(homes: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", n=2)
    out = tmp_path / "early.json"
    with FakeProvider(answer) as server:
        env = persistent_env(homes) | {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-test"}
        argv = ["run", "--executor", "openai", "--no-judge", "--quiet"]
        done = subprocess.run(
            [sys.executable, "-c", EARLY_START, str(out), *argv], cwd=project, env=env, timeout=300
        )
    assert done.returncode == 0
    assert json.loads(out.read_text()) == {"prefect_imported": False}


def test_init_starts_the_server_its_runs_will_share(homes: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flows.bench", "init", str(tmp_path / "demo")],
        env=persistent_env(homes),
        capture_output=True,
        text=True,
        timeout=300,
    )
    record = read_record()
    try:
        assert done.returncode == 0, done.stderr
        assert "created" in done.stdout and (tmp_path / "demo").is_dir()
        assert record is not None and alive(record.pid)
        assert f"started a Prefect server in the background for runs to share, UI {record.ui_url}" in (
            done.stderr
        )
        wait_healthy(record)  # it comes up, from the set-up's template
    finally:
        stopped = stop_server()
    assert stopped is not None and not alive(stopped.pid)


def test_a_server_started_on_a_wrong_guess_is_stopped(
    homes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # started before Prefect could say an API is configured: the exact answer then stops it
    argv = [sys.executable, "-c", "import time; time.sleep(120)", str(prefect_env.SERVER_SCRIPT)]
    guessed = subprocess.Popen(argv, start_new_session=True)
    try:
        while not Path(f"/proc/{guessed.pid}/cmdline").read_bytes():
            pass
        record = prefect_env.ServerRecord(
            pid=guessed.pid, host="127.0.0.1", port=9, log="", started=time.time()
        )
        started = [record]  # by this command's launch_server
        monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
        prepare_prefect(started=started)
        assert guessed.wait(timeout=30) is not None
        assert (
            "Prefect's API is configured (http://127.0.0.1:9/api): stopped the local server"
            in capsys.readouterr().err
        )
        assert started == []
    finally:
        guessed.kill()
        guessed.wait()


@pytest.mark.parametrize("port", ["abc", "99999", "0", "-1"])
def test_a_bad_port_is_one_line_before_init_writes_anything(
    homes: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    port: str,
) -> None:
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", port)
    assert main(["init", str(tmp_path / "demo")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"skillab: error: PREFECT_SERVER_API_PORT={port}: expected a port number from 1 to 65535"
    assert not (tmp_path / "demo").exists()
    assert main(["server", "status"]) == 2


def test_a_port_a_stopped_server_left_in_time_wait_is_free() -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()  # the side that closes first keeps the port in TIME_WAIT
    client.close()
    listener.close()
    assert prefect_env.port_free("127.0.0.1", port)  # as uvicorn would bind it: the server keeps its port


def test_a_suspended_server_is_stopped_by_sigterm(homes: Path, tmp_path: Path) -> None:
    ready, marker = tmp_path / "ready", tmp_path / "terminated"
    code = (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGTERM, lambda *a: (open({str(marker)!r}, 'w').close(), sys.exit(0)))\n"
        f"open({str(ready)!r}, 'w').close()\n"
        "time.sleep(120)\n"
    )
    frozen = subprocess.Popen(
        [sys.executable, "-c", code, str(prefect_env.SERVER_SCRIPT)], start_new_session=True
    )
    try:
        while not ready.exists():  # its handler is installed
            time.sleep(0.01)
        os.kill(frozen.pid, signal.SIGSTOP)  # a server suspended by job control
        record = prefect_env.ServerRecord(pid=frozen.pid, host="127.0.0.1", port=9, log="", started=0.0)
        stop_server(record, timeout=120)
        assert not alive(frozen.pid)
        assert marker.exists()  # resumed and ended by SIGTERM, not killed after the allowance
    finally:
        frozen.kill()
        frozen.wait()


def basic_auth() -> str:
    """The header a client of skillab's servers sends (the tests' credential, tests/conftest.py)."""
    return "Basic " + base64.b64encode(os.environ["PREFECT_API_AUTH_STRING"].encode()).decode()


def recorded(api_url: str, kind: str) -> int:
    """The ``kind`` ("task_runs", "flow_runs") the API has recorded: any task run, the flow's runner
    has taken over from the head start; any flow run, the command has created its own."""
    request = urllib.request.Request(f"{api_url}/{kind}/count", data=b"{}", method="POST")
    request.add_header("content-type", "application/json")
    request.add_header("Authorization", basic_auth())
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=5) as response:
        return int(json.loads(response.read()))


def test_a_run_whose_server_is_stopped_midway_still_ends_with_its_report(homes: Path, tmp_path: Path) -> None:
    """`server stop` while a run is under way: Prefect alone would retry each API call for a minute
    and, at exit, try to deliver every queued event for ever (hours, seen here). The run ends with its
    summary, its report and its usual exit code, and one line on what the Prefect UI lacks."""
    project = make_project(tmp_path / "p", n=8)
    record = ensure_server()  # as `init` leaves it
    wait_healthy(record)
    with FakeProvider(answer, delay=0.2) as server:
        env = persistent_env(homes) | {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-test"}
        argv = ["run", "--executor", "openai", "--no-judge", "--quiet", "--repeat", "8", "--concurrency", "2"]
        argv += ["--output-dir", str(tmp_path / "out")]
        run = bench_process(argv, project, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # Mid-run: the flow has taken over from the head start and its task runs are calling.
            # (The head start sends until then, so a count of calls alone does not say it.)
            while (
                len(server.calls) < 40 or not recorded(record.api_url, "task_runs")
            ) and run.poll() is None:
                time.sleep(0.1)
            stopped = stop_server()
            out, err = run.communicate(timeout=600)  # before the fix: still waiting an hour later
        finally:
            run.kill()
            stop_server()
    assert stopped is not None and len(server.calls) == 8 * 2 * 8  # every call made, none twice
    assert run.returncode == 0, err
    assert err.count("stopped answering (was its server stopped?)") == 1 and "Traceback" not in err
    (report,) = (tmp_path / "out").glob("*.json")
    assert f"report: {report}" in out and "v2 vs v1" in out


def test_a_server_stopped_as_the_run_begins_ends_the_command_in_one_line(homes: Path, tmp_path: Path) -> None:
    """`server stop` while the run's first calls are out and its flow run, just created, begins:
    the flow cannot run without its API. One line says so (no Prefect traceback), exit code 1, the
    calls answered by then are cached, and a re-run with the server back resumes from them."""
    project = make_project(tmp_path / "p", n=8)
    record = ensure_server()
    wait_healthy(record)
    stopped = threading.Event()

    with FakeProvider(answer) as server:
        server.held = lambda call: not stopped.is_set()  # the run reaches no further before the stop
        env = persistent_env(homes) | {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-test"}
        argv = ["run", "--executor", "openai", "--no-judge", "--quiet", "--repeat", "2", "--concurrency", "4"]
        argv += ["--output-dir", str(tmp_path / "out")]
        run = bench_process(argv, project, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            while not recorded(record.api_url, "flow_runs") and run.poll() is None:
                time.sleep(0.02)
            assert stop_server() is not None
            stopped.set()
            _, err = run.communicate(timeout=600)
        finally:
            run.kill()
        # How far the flow got before its API went (the engine's next calls race the stop, which
        # uvicorn lets finish) decides the ending: with its report (as when stopped midway), or without.
        assert "Traceback" not in err, err
        if list((tmp_path / "out").glob("*.json")):
            assert run.returncode == 0 and "stopped answering" in err, err
        else:
            assert run.returncode == 1, err
            assert err.count("stopped answering before the run ended") == 1, err
        first = len(server.calls)
        wait_healthy(ensure_server())
        again = bench_process(argv, project, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = again.communicate(timeout=600)
        stop_server()
    assert again.returncode == 0, err
    assert 8 * 2 * 2 <= len(server.calls) < first + 8 * 2 * 2  # the first run's answers were kept


def test_a_units_task_runs_are_recorded_but_kept_out_of_the_event_history(
    homes: Path, template: Path, tmp_path: Path
) -> None:
    """The server skillab starts makes every unit's task run from its events, and keeps only the other
    events (the flow run's, the artifacts', Prefect's own task runs') in its history: persisting the
    units' was half of the server's work in a run (flows/cli/prefect_server.py keep_out_of_history)."""
    project = make_project(tmp_path / "p", n=4)
    record = ensure_server()
    database = homes / "prefect" / "prefect.db"
    with FakeProvider(answer) as server:
        env = persistent_env(homes) | {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-test"}
        argv = ["run", "--executor", "openai", "--no-judge", "--quiet", "--variants", "v1,v2"]
        done = subprocess.run(
            [sys.executable, "-m", "flows.bench", *argv],
            cwd=project,
            env=env,
            capture_output=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert read_record() == record  # the run used the server started here

    def history() -> dict[str, int]:
        with contextlib.closing(sqlite3.connect(database)) as conn:
            return dict(conn.execute("select event, count(*) from events group by event"))

    deadline = time.monotonic() + 60  # the persister writes every second
    while "prefect.flow-run.Completed" not in history() and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.closing(sqlite3.connect(database)) as conn:
        units = conn.execute("select count(*) from task_run where task_key = ?", (TASK_KEY,)).fetchone()[0]
        states = conn.execute(
            "select count(*) from task_run where task_key = ? and state_type = 'COMPLETED'", (TASK_KEY,)
        ).fetchone()[0]
        kept = conn.execute("select count(*) from events where resource like ?", (f'%"{UNIT_LABEL}"%',))
        kept_units = kept.fetchone()[0]
    assert units == states == 8  # 4 samples x 2 variants, each a Completed task run in the UI
    assert kept_units == 0
    seen = history()
    assert seen.get("prefect.flow-run.Completed") == 1 and seen.get("prefect.artifact.created")
    assert seen.get("prefect.task-run.Completed")  # Prefect's own task runs (aggregation) stay
