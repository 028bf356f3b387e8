"""A warm process: a command after the first starts with its modules already imported.

Importing Prefect, pydantic's models, pandas, scipy and skillab's own modules takes ~2 s of every
command here, more than a fully cached run's own work (~0.6 s). So a command that ran the long way
leaves a process behind (announced in one line) that imports what that command imported and then
waits on a Unix socket in skillab's home. The next command from the same place connects in a few
milliseconds and hands it its standard streams, arguments, directory, environment, umask, resource
limits and ignored signals; the warm process forks, the fork runs the command exactly as
``python -m flows.bench`` would and the exit status goes back. Ctrl-C and other signals the command
line receives are passed on; the command ends if its command line or its relay dies.

What a fork starts from must be what a fresh process would be: a warm process serves one key only,
made of skillab's code (every file's size and modification time), the Python and its options, the
working directory, Prefect's settings files there, and the whole environment but for the few
variables a shell changes between commands. Anything else, and the command runs the long way and
leaves a process for its own key. A warm process with a thread besides its main one after its
imports does not serve (a fork would copy locks those threads may hold); one unused for ``IDLE_S``
seconds, or whose socket was removed, exits; one that does not take a command within ``TAKEN_S``
(stopped, wedged) loses its socket; a home keeps the ``KEPT`` most recently used. Only the user's
own commands are served (the peer's uid, besides the folder's mode). ``python -m flows.bench
server stop`` stops them, by the pids they recorded.

A warm process is left behind by commands started at a terminal; ``SKILLAB_WARM=1`` asks for one
anywhere (a script), ``SKILLAB_WARM=0`` turns the whole mechanism off (the tests do, but for their
own tests of it).

This module runs before anything else in a command: it imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from flows.cli import help_cache

SETTING = "SKILLAB_WARM"
#: Seconds a warm process waits unused before it exits.
IDLE_S = 1800
#: Variables a shell changes from one command to the next: they do not make a new key.
VOLATILE = frozenset({"_", "PWD", "OLDPWD", "SHLVL", "COLUMNS", "LINES"})
#: The signals a command line passes on to the command it handed over.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: Prefect's settings files in a working directory (flows.cli.prefect_env.settings_files lists them
#: with the user's profile, which is in the environment's PREFECT_HOME).
SETTINGS_FILES = (".env", "pyproject.toml", "prefect.toml")
STATUS_BYTES = 4
#: Seconds a warm process has to answer a command line (a fork: milliseconds) before the command runs
#: the long way and that process is no longer asked.
TAKEN_S = 10.0
PR_SET_PDEATHSIG = 1
#: The command line's resource limits its fork takes on.
LIMITS = tuple(n for n in dir(resource) if n.startswith("RLIMIT_") and not n.endswith("INFINITY"))
#: New modules a served command imported that make its warm process restart to import them too.
RESTART_AFTER = 20
#: Warm processes a home keeps (one per key; a new one stops the oldest).
KEPT = 4
#: Seconds between a warm process's looks at its socket, its home and its list of modules.
LOOK_S = 5

#: A warm process's program: this module as the commands import it (its state, what it serves, is
#: theirs when they are forked), and the entry point they run.
LAUNCH = (
    "import sys; from flows.bench import main; from flows.cli.warm import serve; serve(sys.argv[1], main)"
)

#: In a warm process: the key it serves and the modules it imported; set in the commands it forks
#: too, which neither hand themselves over nor leave another process behind.
_serving: str | None = None
_preloaded: frozenset[str] = frozenset()


def ticket() -> tuple[str, dict[str, str], str] | None:
    """For a command line: the key of the warm process that may serve it, the environment and the
    directory it started with; None when it may not be handed over."""
    if _serving is not None or os.environ.get(SETTING, "1") == "0":
        return None
    try:
        cwd, env = os.getcwd(), dict(os.environ)
        return key(cwd, env), env, cwd
    except OSError:  # a working directory that was removed
        return None


def folder() -> Path:
    return help_cache.home() / "warm"


def key(cwd: str, env: dict[str, str]) -> str:
    """What a warm process must share with a command it serves (see the module doc)."""
    digest = hashlib.sha256()
    digest.update(
        repr((sys.executable, sys.version, sys.flags, sys.warnoptions, sys._xoptions, cwd)).encode()
    )
    for name, value in sorted(env.items()):
        if name not in VOLATILE:
            digest.update(f"{name}={value}\0".encode())
    for name in SETTINGS_FILES:
        with contextlib.suppress(OSError):
            stat = os.stat(os.path.join(cwd, name))
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    help_cache.add_code(digest)
    return digest.hexdigest()[:24]


def socket_path(name: str) -> Path:
    return folder() / f"{name}.sock"


@contextlib.contextmanager
def _short(path: Path) -> Iterator[str]:
    """``path`` as a socket address: through the folder's descriptor, as a Unix socket's address
    must fit in 108 bytes and a home's path may not."""
    folder_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder_fd}/{path.name}"
    finally:
        os.close(folder_fd)


# ------------------------------------------------------------------ the command line's side


def hand_over(argv: list[str], name: str) -> int | None:
    """Runs the command in the warm process for ``name``, if one is up: its exit status, else None."""
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:  # a closed standard stream: the socket would take its number
        return None
    path = socket_path(name)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _short(path) as address:
            conn.connect(address)
        # its relay says hello before any stream goes out: one in flight to a process that never
        # reads it would stay open, and whoever waits for its end (a pipe's reader) with it
        conn.settimeout(TAKEN_S)
        taken = _read_exactly(conn, 1)
        conn.settimeout(None)
        if taken is not None:
            socket.send_fds(conn, [len(request := _request(argv)).to_bytes(8, "big")], [0, 1, 2])
            conn.sendall(request)
    except TimeoutError:  # stopped (kill -STOP) or wedged: no command waits on it again (once
        # resumed, it finds its socket gone and exits)
        with contextlib.suppress(OSError):
            path.unlink()
        conn.close()
        return None
    except OSError:  # none up, or gone: the long way
        conn.close()
        return None
    except KeyboardInterrupt:
        conn.close()
        print("skillab: interrupted", file=sys.stderr)
        return 130
    if taken is None:  # it was exiting (unused for too long): the long way
        conn.close()
        return None
    for signum in FORWARDED:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's hang-up stays ignored
            signal.signal(signum, lambda signum, frame: _forward(conn, signum))
    status = _read_exactly(conn, STATUS_BYTES)
    conn.close()
    if status is None:
        print(
            f"skillab: error: the warm process ended without the command's exit status "
            f"({SETTING}=0 runs commands without it)",
            file=sys.stderr,
        )
        return 1
    return int.from_bytes(status, "big", signed=True)


def _request(argv: list[str]) -> bytes:
    """What the command's fork becomes: this command line's arguments, directory, environment, umask,
    limits and ignored signals."""
    umask = os.umask(0o022)
    os.umask(umask)
    return json.dumps(
        {
            "argv": argv,
            "argv0": sys.argv[0],
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": umask,
            "limits": {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS},
            "ignored": [int(s) for s in FORWARDED if signal.getsignal(s) is signal.SIG_IGN],
        }
    ).encode()


def _forward(conn: socket.socket, signum: int) -> None:
    with contextlib.suppress(OSError):
        conn.send(bytes([signum]))


def _read_exactly(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def leave_behind(name: str, env: dict[str, str], cwd: str) -> None:
    """After a command that ran the long way: start the warm process for its key, in the background,
    to import what this command imported (unless one is up or starting). Only at a terminal, or when
    asked (SKILLAB_WARM=1): a script, a CI job or a cron entry is not left a process it did not ask for."""
    if env.get(SETTING) != "1" and not os.isatty(0):
        return
    home = folder()
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        home.chmod(0o700)  # its sockets run commands as this user: nobody else may reach them
        if _alive(home / f"{name}.pid") or (home / f"{name}.refused").exists():
            return
        _write_modules(name, importable())
        log = open(home / f"{name}.log", "ab")  # noqa: SIM115 - the child's; closed here once started
    except OSError:
        return  # an unwritable home only costs the speed-up
    with log:
        process = subprocess.Popen(
            _program(name),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # a Ctrl-C at the terminal is for the command, not for it
        )
    with contextlib.suppress(OSError):  # another command's may come and go meanwhile
        (home / f"{name}.pid").write_text(f"{process.pid}\n", encoding="utf-8")
        # a key whose code or environment changed is served no more: the oldest beyond KEPT go
        for old in sorted(home.glob("*.pid"), key=lambda p: p.stat().st_mtime_ns)[:-KEPT]:
            _stop(old)
    print(
        f"skillab: kept a warm process (pid {process.pid}) for the next commands here: "
        f"they skip ~2 s of imports (stop it: python -m flows.bench server stop; {SETTING}=0 turns it off)",
        file=sys.stderr,
    )


def _program(name: str) -> list[str]:
    """The warm process for ``name``, with this interpreter's options (-O, -X, -W: part of the key)."""
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    return [sys.executable, *flags, "-c", LAUNCH, name]


def importable(among: Iterable[str] | None = None) -> set[str]:
    """The modules imported so far (of ``among``, default all) that a warm process may import ahead:
    the libraries' and skillab's own, never a user's file (it may change before the next command)."""
    roots = tuple(
        os.path.join(os.path.realpath(p), "")
        for p in {sys.prefix, sys.base_prefix, *(str(help_cache.ROOT / n) for n in help_cache.PACKAGES)}
    )
    names = set()
    for name in list(sys.modules) if among is None else among:
        module = sys.modules.get(name)
        where: str | None = getattr(module, "__file__", None)
        if module is None or name.startswith("__") or name == __name__:
            continue
        if where is None or os.path.realpath(where).startswith(roots):
            names.add(name)
    return names


def note_imports() -> None:
    """In a command a warm process forked: if it imported modules its warm process had not, the warm
    process imports them too (it restarts, once unused for a moment)."""
    if _serving is None:
        return
    # a realpath per module: only the ones this command added
    new = importable([name for name in list(sys.modules) if name not in _preloaded])
    if len(new) >= RESTART_AFTER:
        with contextlib.suppress(OSError):
            _write_modules(_serving, new | _preloaded)


def _write_modules(name: str, modules: set[str]) -> None:
    path = folder() / f"{name}.modules"
    partial = path.with_suffix(f".{os.getpid()}.part")
    partial.write_text("\n".join(sorted(modules)), encoding="utf-8")
    os.replace(partial, path)


def _alive(pid_file: Path) -> bool:
    try:
        pid = int(pid_file.read_text(encoding="utf-8"))
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return _is_warm(pid)


def _is_warm(pid: int) -> bool:
    """The pid is a warm process (not another process that reused a dead one's pid)."""
    try:
        return LAUNCH.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def stop_all(where: Path | None = None) -> list[int]:
    """Stops every warm process of this home (or of the folder ``where``), by the pid each recorded,
    and removes what they left: the pids stopped."""
    where = where or folder()
    stopped = [pid for pid_file in sorted(where.glob("*.pid")) if (pid := _stop(pid_file)) is not None]
    for left in where.glob("*"):
        with contextlib.suppress(OSError):
            left.unlink()
    return stopped


def _stop(pid_file: Path) -> int | None:
    pid = None
    with contextlib.suppress(OSError, ValueError):
        if _is_warm(recorded := int(pid_file.read_text(encoding="utf-8"))):
            os.kill(recorded, signal.SIGTERM)
            os.kill(recorded, signal.SIGCONT)  # a stopped one (kill -STOP) ends too
            pid = recorded
        pid_file.unlink(missing_ok=True)
    return pid


# ------------------------------------------------------------------ the warm process


def serve(name: str, command: Callable[[list[str]], object]) -> None:
    """The warm process for the key ``name``: it runs ``command`` (the entry point's) in its forks."""
    global _serving, _preloaded
    home = folder()
    pid_file, path, listing = home / f"{name}.pid", socket_path(name), home / f"{name}.modules"
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an ignored one outlives a restart's exec
    home.chmod(0o700)
    listed = os.stat(listing).st_mtime_ns
    if not _import_ahead(name, listing.read_text(encoding="utf-8").split()):
        return
    _serving, _preloaded = name, frozenset(sys.modules)
    listener = _listen(path)
    if listener is None:
        return
    pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
    own = os.stat(path).st_ino
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forks are reaped as they end
    listener.settimeout(LOOK_S)
    last = time.monotonic()
    restart = False
    try:
        while time.monotonic() - last < IDLE_S:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                try:
                    if os.stat(path).st_ino != own:
                        return
                    restart = os.stat(listing).st_mtime_ns != listed
                except OSError:
                    return
                if restart:
                    return
                continue
            last = time.monotonic()
            with contextlib.suppress(OSError):
                os.utime(pid_file)  # the least recently used go first (KEPT)
            if (relay := os.fork()) == 0:
                listener.close()
                _relay(conn, command)
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} serving a command (relay pid {relay})", flush=True)
            conn.close()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == own:
                path.unlink()
                if not restart:
                    pid_file.unlink(missing_ok=True)
        if restart:  # the same process (its pid recorded), new imports: commands go the long way meanwhile
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} importing ahead what a command added", flush=True)
            os.execv(sys.executable, _program(name))


def _import_ahead(name: str, modules: list[str]) -> bool:
    """Imports ``modules`` as a command would: whether this process may serve after them."""
    from flows.cli.prefect_env import configure_prefect

    configure_prefect()  # Prefect's defaults before Prefect is imported, as a command sets them
    # asyncio before its C half: imported first, `_asyncio` would import asyncio from inside its own
    # initialisation, and asyncio's tasks would keep a registry of running tasks nobody fills
    import asyncio  # noqa: F401

    failed = [module for module in modules if not _imports(module)]
    if failed:
        print(f"not imported: {' '.join(failed)}", flush=True)
    if threading.active_count() > 1:
        _refuse(name, f"not serving: threads after the imports: {threading.enumerate()}")
        return False
    import gc

    gc.freeze()  # the imports' objects stay shared with every fork, never scanned again
    return True


def _imports(module: str) -> bool:
    try:
        __import__(module)
    except Exception:  # a module the command imported another way: it stays lazy (a stop still stops)
        return False
    return True


def _listen(path: Path) -> socket.socket | None:
    """Listens on ``path``, unless another warm process already does."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with _short(path) as address:
        try:
            probe.connect(address)
            return None
        except OSError:
            pass
        finally:
            probe.close()
        try:
            path.unlink(missing_ok=True)  # left by a process that was killed
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(address)
            path.chmod(0o600)
        except OSError as exc:  # something else in its place (a folder): refused, not retried
            _refuse(path.stem, f"not serving: {path}: {exc}")
            return None
    listener.listen(16)
    return listener


def _refuse(name: str, reason: str) -> None:
    """This key gets no warm process (until the code, environment or folder changes its key)."""
    with contextlib.suppress(OSError):
        (folder() / f"{name}.refused").write_text(reason + "\n", encoding="utf-8")
    print(reason, flush=True)


def _relay(conn: socket.socket, run: Callable[[list[str]], object]) -> None:
    """In a fork: read the request, fork the command, pass on signals, send back its exit status."""
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        conn.settimeout(None)  # a command may run for hours: its line is quiet meanwhile
        _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():  # only this user's commands, whatever the folder's mode became
            os._exit(1)
        conn.sendall(b"\0")  # hello: from here the command runs here
        head, fds, _, _ = socket.recv_fds(conn, 8, 3)
        body = _read_exactly(conn, int.from_bytes(head, "big")) if len(head) == 8 else None
        if body is None or len(fds) != 3:
            os._exit(1)
        request = json.loads(body)
        command = os.fork()
        if command == 0:
            conn.close()
            _run(request, fds, run)
        for fd in fds:
            os.close(fd)
        threading.Thread(target=_pass_signals, args=(conn, command), daemon=True).start()
        _, status = os.waitpid(command, 0)
        code = os.waitstatus_to_exitcode(status)
        if code < 0:  # ended by a signal, as a shell reports it
            code = 128 - code
        conn.sendall(code.to_bytes(STATUS_BYTES, "big", signed=True))
    finally:
        os._exit(0)


def _end_with_parent() -> None:
    """The command ends (SIGTERM) if its relay is killed: the command line gets no status then, and
    the command must not go on writing to its streams. Linux's PR_SET_PDEATHSIG."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the relay was already gone
        os.kill(os.getpid(), signal.SIGTERM)


def _pass_signals(conn: socket.socket, command: int) -> None:
    while True:
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:  # the command line is gone: end the command as a terminal's hang-up would
            with contextlib.suppress(OSError):
                os.kill(command, signal.SIGTERM)
            return
        for signum in data:
            with contextlib.suppress(OSError):
                os.kill(command, signum)


def _run(request: dict[str, Any], fds: list[int], run: Callable[[list[str]], object]) -> None:
    """In the command's fork: become the command line's process, then run the command."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.setpgid(0, 0)
        _end_with_parent()
        for limit, (soft, hard) in request["limits"].items():
            with contextlib.suppress(ValueError, OSError):  # one above this process's own hard limit
                resource.setrlimit(getattr(resource, limit), (soft, hard))
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(int(request["umask"]))
        argv = [str(a) for a in request["argv"]]
        sys.argv = [str(request["argv0"]), *argv]
        for stream in (sys.stdout, sys.stderr):  # stderr is line-buffered, stdout at a terminal
            cast(io.TextIOWrapper, stream).reconfigure(line_buffering=stream is sys.stderr or os.isatty(1))
        for signum in FORWARDED:  # Python's own dispositions, as in a fresh process
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        for signum in request["ignored"]:  # as under nohup, or a shell's background job
            signal.signal(signum, signal.SIG_IGN)
        run(argv)  # ends the process itself
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:  # reported as the interpreter would
        traceback.print_exc()
        code = 130 if isinstance(sys.exc_info()[1], KeyboardInterrupt) else 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
