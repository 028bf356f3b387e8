"""Prefect settings for every command, and the local Prefect server that runs share.

Quiet, robust defaults measured in ../shared/PREFECT.md. With no Prefect API configured, a run does
not start Prefect's temporary server (6-30 s on every run, and it dies before the run's history
reaches its database): it reuses the local server this module started earlier, or one answering at
Prefect's default address, or starts one in the background that later runs reuse, and says so in
one line (``init`` starts it too, for the project's first run to find it up).
``python -m flows.bench server stop`` ends it, by the pid recorded when it was started.
``SKILLAB_PREFECT_SERVER=ephemeral`` keeps Prefect's temporary server per run (the test suite does).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from executors.errors import InputError
from flows.cli.prefect_server import copy_database
from flows.inputs.files import skillab_home
from tasks.unit_label import UNIT_LABEL

# Quiet, robust defaults for Prefect (measured in ../shared/PREFECT.md); the user's environment wins.
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",  # the server's heartbeat and the UI's analytics
    "DO_NOT_TRACK": "1",  # Prefect's client-side telemetry
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # A flow run's own lines (plan, progress, verdict) reach its Logs tab in the UI; the terminal
    # shows warnings only (it has the progress bar and the summary). Per-task lines stay off.
    "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
    "PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL": "INFO",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "50",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "500",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_READ_BATCH_SIZE": "50",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    # A server skillab starts keeps the fleet's concurrency leases on disk: in memory (Prefect's
    # default) a restart forgets them while their slots stay taken, and the fleet's runs stall.
    "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect.server.concurrency.lease_storage.filesystem",
}

#: "persistent" (default): reuse or start a local server that outlives the run; "ephemeral": Prefect's
#: temporary server, started and stopped by every run.
SERVER_SETTING = "SKILLAB_PREFECT_SERVER"
SERVER_MODES = ("persistent", "ephemeral")
#: Seconds to wait for a server we started: 4-5 s from the template here, 16-30 s when it migrates a
#: new database, more under load.
STARTUP_TIMEOUT_S = 180.0
STOP_COMMAND = "python -m flows.bench server stop"
SERVER_SCRIPT = Path(__file__).with_name("prefect_server.py")
SERVER_MARK = str(Path(*SERVER_SCRIPT.parts[-3:])).encode()  # flows/cli/prefect_server.py


class ReadyWait(Protocol):
    """Returns once the Prefect API answers. ``meanwhile`` is called once if the server is still
    starting: work the command needs later, done while this process would only wait for it."""

    def __call__(self, meanwhile: Callable[[], object] | None = None) -> None: ...


def configure_prefect() -> None:
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    record = read_record() if os.environ.get("PREFECT_API_URL") else None
    if record is not None and os.environ["PREFECT_API_URL"].rstrip("/") == record.api_url:
        os.environ.setdefault(CLIENT_AUTH, auth_string())  # the API of the server skillab started


# ------------------------------------------------------------------ the API's credential

#: Prefect's own settings: the credential a server requires (HTTP basic, "user:password"), and the
#: one its clients send (every flow run, worker and container, through the worker's settings).
SERVER_AUTH, CLIENT_AUTH = "PREFECT_SERVER_API_AUTH_STRING", "PREFECT_API_AUTH_STRING"


def auth_path() -> Path:
    return skillab_home() / "prefect-auth"


def auth_string() -> str:
    """The credential of every Prefect server skillab starts: $PREFECT_SERVER_API_AUTH_STRING when
    the user set one, else one made at the first start and kept in skillab's home, readable by its
    owner only (an agent session sees neither: the sandbox hides the home, and the variables are
    credential-shaped, never passed in)."""
    if os.environ.get(SERVER_AUTH):
        return os.environ[SERVER_AUTH]
    path = auth_path()
    with contextlib.suppress(FileNotFoundError):
        if text := path.read_text(encoding="utf-8").strip():
            return text
    path.parent.mkdir(parents=True, exist_ok=True)
    made = f"skillab:{secrets.token_urlsafe(24)}"
    with contextlib.suppress(FileExistsError):  # two commands at once: the first one's is kept
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(made + "\n")
    return path.read_text(encoding="utf-8").strip()


def protect_temporary_api() -> None:
    """Prefect's temporary server (a child of this process, given its environment) requires the
    credential, and this process and its children send it."""
    auth = auth_string()
    os.environ.setdefault(SERVER_AUTH, auth)
    os.environ.setdefault(CLIENT_AUTH, auth)


def launch_server(announce: bool = True, started: list[ServerRecord] | None = None) -> str:
    """Start the local server a run will need as early as possible, before this process imports
    Prefect (about 1 s, which would otherwise delay a first run's server by as much).

    Whether Prefect is configured elsewhere is known only once Prefect reads its settings; here only
    the standard library is used, so a server is started only when nothing suggests a configured API
    (see `may_be_configured`). ``prepare_prefect`` then decides exactly, and stops a server started
    here if the guess proves wrong. Nothing happens for a server already running or recorded.
    ``started`` gets a server started here. Returns the server mode."""
    configure_prefect()
    mode = check_settings()
    if mode == "persistent" and not may_be_configured():
        ensure_server(announce=announce, wait=False, started=started)
    return mode


def check_settings() -> str:
    """The server mode, once the settings this module reads are valid (each bad one is an InputError)."""
    mode = server_mode()
    if mode == "persistent":
        default_address()
    return mode


def may_be_configured() -> bool:
    """Could Prefect find an API URL? Prefect's own answer costs importing it; this one errs towards
    yes. Once Prefect is imported the exact answer is cheap (and a test harness may hold one)."""
    return "prefect" in sys.modules or api_hinted(os.environ, Path.cwd())


def api_hinted(environ: Mapping[str, str], cwd: Path) -> bool:
    """A setting, or a settings file Prefect reads, that mentions its API or may (prefect.toml)."""
    environ = {k.upper(): v for k, v in environ.items()}  # Prefect reads its variables in any case
    if any(environ.get(k) for k in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH")):
        return True
    home = Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    for path, text in settings_files(cwd, home).items():
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if text in path.read_text():
                return True
    return False


def settings_files(cwd: Path, home: Path) -> dict[Path, str]:
    """The files Prefect reads settings from, each with what marks a mention of its API in it (any
    prefect.toml may hold one)."""
    return {
        cwd / ".env": "PREFECT_",
        cwd / "pyproject.toml": "tool.prefect",
        cwd / "prefect.toml": "",
        home / "profiles.toml": "PREFECT_API_URL",
    }


def prepare_prefect(announce: bool = True, started: list[ServerRecord] | None = None) -> ReadyWait:
    """Before a command's first flow: the defaults, then a Prefect API to talk to (see the module doc).

    A server being started is not waited for here: the command imports its flow meanwhile (both take
    seconds, on separate cores) and calls the returned function before the flow runs. The defaults
    are read by Prefect at import: call this before the command imports it."""
    started = [] if started is None else started  # servers this command started (launch_server)
    if launch_server(announce, started) == "ephemeral":
        if configured_api_url() is None:  # Prefect's temporary server, not a configured API
            protect_temporary_api()
            from prefect.context import refresh_global_settings_context

            refresh_global_settings_context()
        return lambda meanwhile=None: None
    guessed, started[:] = list(started), []
    if url := configured_api_url():
        for record in guessed:  # by launch_server, which could not see this setting
            stop_server(record)
            print(
                f"skillab: Prefect's API is configured ({url}): stopped the local server this command "
                "had started",
                file=sys.stderr,
            )
        return lambda meanwhile=None: None
    record = ensure_server(announce=announce, wait=False)
    os.environ["PREFECT_API_URL"] = record.api_url
    os.environ.setdefault(CLIENT_AUTH, auth_string())
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()  # Prefect read its settings at import, before the URL was set

    def ready(meanwhile: Callable[[], object] | None = None) -> None:
        wait_healthy(record, meanwhile)

    return ready


def server_mode() -> str:
    """How a command without a configured Prefect API gets one; a bad setting is an InputError."""
    mode = os.environ.get(SERVER_SETTING) or "persistent"
    if mode not in SERVER_MODES:
        raise InputError(f"{SERVER_SETTING}={mode}: expected one of {', '.join(SERVER_MODES)}")
    return mode


def configured_api_url() -> str | None:
    """The Prefect API the user configured: the environment, the active profile, prefect.toml, or
    (inside a test harness or a served flow) the current settings context."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    from prefect.settings.context import get_current_settings

    return get_current_settings().api.url


# ------------------------------------------------------------------ the local server


@dataclass(frozen=True)
class ServerRecord:
    """The server this module started: enough to find it again and to stop exactly that process."""

    pid: int
    host: str
    port: int
    log: str
    started: float

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.ui_url}/api"


def record_path() -> Path:
    return skillab_home() / "prefect-server.json"


def default_address() -> tuple[str, int]:
    """Prefect's own default (127.0.0.1:4200), or what PREFECT_SERVER_API_HOST/PORT say."""
    host = os.environ.get("PREFECT_SERVER_API_HOST") or "127.0.0.1"
    raw = os.environ.get("PREFECT_SERVER_API_PORT") or "4200"
    port = int(raw) if raw.strip().isdigit() else 0
    if not 1 <= port <= 65535:
        raise InputError(f"PREFECT_SERVER_API_PORT={raw}: expected a port number from 1 to 65535")
    return host, port


def health(api_url: str, timeout: float) -> Any:
    """The response to the API's health check (no proxy: the server is local); raises as urllib does."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
        f"{api_url}/health", timeout=timeout
    )


def healthy(api_url: str, timeout: float = 1.0) -> bool:
    """A Prefect API answers its health check at ``api_url``."""
    try:
        with health(api_url, timeout) as response:
            return bool(response.status == 200 and json.loads(response.read() or b"null") is True)
    except (OSError, ValueError):
        return False


def probe(api_url: str, timeout: float = 2.0) -> str:
    """ "answered" (any HTTP answer), "refused" (nothing accepts connections there) or "silent"."""
    try:
        with health(api_url, timeout):
            return "answered"
    except urllib.error.HTTPError:
        return "answered"
    except urllib.error.URLError as exc:
        gone = isinstance(exc.reason, ConnectionRefusedError | ConnectionResetError)
    except OSError as exc:
        gone = isinstance(exc, ConnectionRefusedError | ConnectionResetError)
    return "refused" if gone else "silent"


def read_record() -> ServerRecord | None:
    try:
        return ServerRecord(**json.loads(record_path().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def alive(pid: int) -> bool:
    """The process exists and is a Prefect server (a recycled pid running something else is not)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own child that already exited
    try:
        os.kill(pid, 0)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ProcessLookupError, IndexError):
        return False
    if state == "Z":
        return False
    # Empty for a moment right after Popen returns: exec has replaced the process's memory but not
    # yet written its arguments there. A check landing in that window must not take it for dead.
    # By the script's place in the package, not its full path: a server another checkout started
    # (sharing ~/.skillab) is ours too.
    return not cmdline or any(a.endswith(SERVER_MARK) for a in cmdline.split(b"\0"))


@contextlib.contextmanager
def server_lock() -> Iterator[None]:
    """One process at a time decides whether to start a server (two runs starting at once share one)."""
    skillab_home().mkdir(parents=True, exist_ok=True)
    with open(skillab_home() / "prefect-server.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def port_free(host: str, port: int) -> bool:
    """Whether the server could bind ``port``: as uvicorn binds it, so a port a stopped server left in
    TIME_WAIT counts as free (without SO_REUSEADDR the next server drifted to a random port)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def ensure_server(
    announce: bool = True, wait: bool = True, started: list[ServerRecord] | None = None
) -> ServerRecord:
    """The local server: ours from an earlier run (or still starting), one at the default address, or
    a new one (added to ``started``); with ``wait``, once it answers."""
    with server_lock():
        record = read_record()
        if record is not None and alive(record.pid) and stale(record):
            stop_server(record)  # up long ago and silent now: replaced rather than waited for
        if record is None or not alive(record.pid):
            host, port = default_address()
            found = ServerRecord(pid=0, host=host, port=port, log="", started=0.0)
            if healthy(found.api_url, timeout=0.5):
                return found
            record = start_server(host, port if port_free(host, port) else free_port(host), announce)
            if started is not None:
                started.append(record)
    if wait:
        wait_healthy(record)
    return record


def stale(record: ServerRecord) -> bool:
    return time.time() > record.started + STARTUP_TIMEOUT_S and not healthy(record.api_url)


def start_server(host: str, port: int, announce: bool = True) -> ServerRecord:
    """Prefect's server (see prefect_server.py) in its own session (it outlives this command and the
    terminal), its pid recorded. A new database starts as a copy of the set-up's template (the
    server's process copies it: this one need not import Prefect)."""
    configure_prefect()
    log = skillab_home() / "prefect-server.log"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {SERVER_AUTH: auth_string()}
    template = template_path()
    cmd = [sys.executable, "-P", str(SERVER_SCRIPT), "--host", host, "--port", str(port)]
    cmd += ["--template", str(template), "--unpersisted-label", UNIT_LABEL]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    record = ServerRecord(pid=proc.pid, host=host, port=port, log=str(log), started=time.time())
    record_path().write_text(json.dumps(asdict(record)))
    if announce:
        first = (
            ""
            if template.is_file()
            else "; with no database template from set-up, its first start takes ~30 s"
        )
        password = f"${SERVER_AUTH}" if os.environ.get(SERVER_AUTH) else f"the line in {auth_path()}"
        print(
            f"skillab: started a Prefect server in the background for runs to share, UI "
            f"{record.ui_url} (its password: {password}; stop it: {STOP_COMMAND}{first})",
            file=sys.stderr,
            flush=True,
        )
    return record


def wait_healthy(record: ServerRecord, meanwhile: Callable[[], object] | None = None) -> None:
    """Until the server answers, calling ``meanwhile`` once if it does not yet; a server that exits
    or is still silent after the start-up allowance is stopped, with one line naming its log."""
    if record.pid == 0:
        return  # a server this module did not start: it answered when found
    deadline = record.started + STARTUP_TIMEOUT_S
    while not healthy(record.api_url):
        if not alive(record.pid) or time.time() > deadline:
            stop_server(record)
            raise InputError(
                f"the Prefect server did not start (log: {record.log}); set PREFECT_API_URL to a "
                f"running one, or {SERVER_SETTING}=ephemeral for a temporary server per run"
            )
        if meanwhile is not None:
            meanwhile()
            meanwhile = None
            continue
        time.sleep(0.1)


# ------------------------------------------------------------------ the template database


def template_path() -> Path:
    """The set-up's migrated, empty Prefect database, one per installed Prefect version (the server
    process seeds a new database from it, see prefect_server.seed_database)."""
    from importlib.metadata import version

    return Path(sys.prefix) / "share" / "skillab" / f"prefect-{version('prefect')}.db"


#: What a server does at its first start after the migrations, done once into the template.
REGISTER_BLOCKS = """
import asyncio
from prefect.server.database import provide_database_interface
from prefect.server.models.block_registration import run_block_auto_registration

async def main():
    async with await provide_database_interface().session() as session:
        await run_block_auto_registration(session=session)
        await session.commit()

asyncio.run(main())
"""


def build_template() -> Path:
    """Prefect's migrations and block types, once, into the template (set-up calls this; idempotent)."""
    template = template_path()
    if template.is_file():
        return template
    template.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        fresh = Path(work) / "prefect.db"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_DATABASE")}
        env |= {"PREFECT_HOME": work, "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{fresh}"}
        for cmd in (
            [sys.executable, "-m", "prefect", "server", "database", "upgrade", "--yes"],
            [sys.executable, "-c", REGISTER_BLOCKS],
        ):
            done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if done.returncode != 0 or not fresh.is_file():
                raise RuntimeError(f"building Prefect's database failed: {done.stderr.strip()[-500:]}")
        copy_database(fresh, template)
    return template


def stop_server(record: ServerRecord | None = None, timeout: float = 20.0) -> ServerRecord | None:
    """Stop the server this module started (by its recorded pid: its whole process group), if running."""
    record = record or read_record()
    if record is None:
        return None
    if alive(record.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record.pid, signal.SIGTERM)
            os.killpg(record.pid, signal.SIGCONT)  # a stopped process handles SIGTERM only once resumed
        deadline = time.monotonic() + timeout
        while alive(record.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(record.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10  # gone before the caller decides on a new server
            while alive(record.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
    with contextlib.suppress(FileNotFoundError):
        if read_record() == record:
            record_path().unlink()
    return record


def cmd_server(args: argparse.Namespace, command: object) -> int:
    """``server start|stop|status``: the local Prefect server that runs share."""
    configure_prefect()
    record = read_record()
    ours = record if record is not None and alive(record.pid) else None
    if args.action != "stop":
        check_settings()
    if args.action == "stop":
        stop_server(record)
        if ours is None:
            print("skillab: no Prefect server started by skillab is running")
        else:
            print(f"skillab: stopped the Prefect server at {ours.ui_url} (pid {ours.pid})")
        return 0
    if args.action == "start":
        ours = ensure_server(announce=True)
        unused_by_runs()
    if ours is None or ours.pid == 0:
        host, port = default_address()
        found = ours or ServerRecord(pid=0, host=host, port=port, log="", started=0.0)
        state = "answering (not started by skillab)" if healthy(found.api_url) else "not running"
        print(f"skillab: Prefect server at {found.ui_url}: {state}")
        return 0
    if healthy(ours.api_url):
        state = "answering"
    else:
        state = "starting" if time.time() < ours.started + STARTUP_TIMEOUT_S else "not answering"
    print(f"skillab: Prefect server at {ours.ui_url} (pid {ours.pid}, log {ours.log}): {state}")
    print(f"  stop it: {STOP_COMMAND}")
    return 0


def unused_by_runs() -> None:
    """Say so when runs will not use the local server just started (a setting sends them elsewhere)."""
    if server_mode() == "ephemeral":
        print(f"skillab: note: {SERVER_SETTING}=ephemeral: runs start Prefect's temporary server instead")
    elif url := configured_api_url():
        print(f"skillab: note: Prefect's API is configured ({url}): runs use it, not this server")
