"""The OS sandbox every agent session and every task check runs in: bubblewrap (``bwrap``).

Inside, only what a command needs is visible: the system directories read-only (``/usr``, ``/etc``
less its secrets, the ``/bin``-style links), the executable and its install, the interpreters on its
PATH, the folders the caller names, and the session's own folders (its sandbox, its fresh HOME)
read-write; ``/tmp`` is a private size-limited tmpfs. Anything else on the host (other checkouts,
``/home``, ``/srv``, ``/opt``, ``/root``, ``.env`` files) does not exist there. The process gets its own
PID, IPC, UTS and network namespaces, loses every capability (as root, bwrap otherwise leaves the full
set), runs in a new session (no terminal to push input into), dies with its parent, and is bounded: a
pids cgroup (where one can be made) and a per-file size limit, with the disk use of its writable
folders watched by the caller (:class:`DiskWatch`).

The network namespace has only loopback. An agent session reaches its model through
``executors.egress``: a relay inside the sandbox listens on 127.0.0.1 and hands each connection to a
Unix socket bound in, where skillab's forwarder adds the key and talks to the model endpoint; no other
address, on this machine or beyond, answers. ``network="host"`` (``--allow-network``) shares the
host's network instead, and the report says so.

The caller chooses the isolation: ``"bubblewrap"`` (the default everywhere) or ``"none"`` (only a
fresh HOME between the agent and this machine, for machines where bwrap cannot run). Asking for
bubblewrap where it cannot run raises :class:`SandboxUnavailableError`; it is never downgraded
silently.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, get_args

from executors.errors import InputError
from executors.limits import DiskWatch, disk_limit, pids_cgroup, pids_limit, tmp_limit

Isolation = Literal["bubblewrap", "none"]
ISOLATIONS: tuple[str, ...] = get_args(Isolation)
#: What a sandboxed process may reach: nothing (task checks, custom assertions), only its model
#: endpoint through the forwarder (agent sessions), or the host's network (--allow-network).
Network = Literal["none", "model", "host"]
BWRAP_ENV = "SKILLAB_BWRAP"  # the bwrap executable, when not `bwrap` on PATH
#: The flag that turns the sandbox off, in the words every options model uses for it.
OS_SANDBOX_HELP = (
    "run agent sessions and task checks in bubblewrap (only the system folders visible, private "
    "/tmp, no network but the model endpoint); --no-os-sandbox: only a fresh HOME, for machines "
    "where bubblewrap cannot run"
)
ALLOW_NETWORK_HELP = (
    "let agent sessions reach the network beyond their model endpoint (the host's network, "
    "127.0.0.1 included); recorded in the report"
)
UNAVAILABLE = (
    "bubblewrap is not available: install the Debian package bubblewrap, or pass --no-os-sandbox to "
    "run agents with only a fresh HOME between them and this machine"
)
# Roots of version managers under HOME whose shims need the whole root (and which hold no secrets).
# Any other PATH entry under HOME is bound alone: ~/.cargo, for one, also holds a registry token.
TOOL_ROOTS = frozenset(
    {".pyenv", ".rbenv", ".nodenv", ".goenv", ".jenv", ".nvm", ".volta", ".asdf", ".bun", ".deno", ".rustup"}
)
#: The host's system folders, read-only in every sandbox (links such as /bin -> usr/bin kept as links).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: What of /etc holds secrets rather than configuration: covered by an empty file or folder.
ETC_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/apt/auth.conf",
    "/etc/apt/auth.conf.d",
    "/etc/docker",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/wireguard",
    "/etc/machine-id",
)
# Namespaces and limits that every sandbox gets; the probe runs with exactly these.
CONFINE = (
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)
#: Where the model forwarder's socket and the relay appear inside a sandbox.
EGRESS_DIR = "/run/skillab"
#: The loopback port the relay listens on inside a sandbox's own network namespace.
EGRESS_PORT = 18080
RELAY = Path(__file__).with_name("relay.py")


# The host variables a sandboxed process sees: locale and the interpreters' own, never a credential
# (a cloud key, a token) that happens to be set in the user's shell.
ENV_KEEP = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "SHELL"})
ENV_KEEP_PREFIXES = ("LC_", "PYENV_", "NVM_")
#: Words in a variable's name that make it a credential, an endpoint or a way to load code: never
#: passed from the host, whatever prefix a runner keeps.
SECRET_NAME_PARTS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "BASE_URL",
    "ENDPOINT",
    "PROXY",
    "HOST",
    "URL",
    "CERT",
    "CA_",
    "OPTIONS",
    "PRELOAD",
    "CONFIG",
)


def secret_name(name: str) -> bool:
    """A variable name that may carry a credential, an endpoint, a proxy, a CA or a loader."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def host_env(*keep_prefixes: str) -> dict[str, str]:
    """The part of this process's environment a sandboxed command may see, PATH always set.
    ``keep_prefixes`` adds a runner's own switches; a credential-shaped name never passes."""
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)}
    env |= {
        k: v
        for k, v in os.environ.items()
        if keep_prefixes and k.startswith(keep_prefixes) and not secret_name(k)
    }
    env.setdefault("PATH", os.defpath)
    return env


class SandboxUnavailableError(RuntimeError):
    """Bubblewrap was asked for and cannot run here. ``str(error)`` is one complete line for the user."""


def bwrap_binary(binary: str | None = None) -> str:
    """``binary``, else $SKILLAB_BWRAP, else ``bwrap``."""
    return binary or os.environ.get(BWRAP_ENV) or "bwrap"


def probe(binary: str | None = None) -> str | None:
    """None when bwrap really builds a sandbox here, else why not (one line).

    Really runs ``true`` in a sandbox: bwrap can be installed on a kernel that forbids the user
    namespaces it needs, and only running it tells. Cached per executable for the process."""
    return _probe(bwrap_binary(binary))


@functools.cache
def _probe(binary: str) -> str | None:
    path = shutil.which(binary)
    if path is None:
        return f"{binary} was not found on PATH"
    try:
        proc = subprocess.run(
            [path, *_mounts((), ()), *CONFINE, "--unshare-net", "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} did not run: {exc}"
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return (
            f"{binary} cannot create a sandbox here: {lines[-1] if lines else f'exit code {proc.returncode}'}"
        )
    return None


def require(isolation: Isolation, *, binary: str | None = None) -> Isolation:
    """The isolation to use; raises SandboxUnavailableError when bubblewrap was asked for and cannot run.

    ``binary`` is the bwrap executable (default: $SKILLAB_BWRAP, else ``bwrap``); a missing name
    simulates a machine without bubblewrap."""
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)} (got {isolation!r})")
    if isolation == "bubblewrap":
        reason = probe(binary)
        if reason is not None:
            raise SandboxUnavailableError(f"{UNAVAILABLE} ({reason})")
    return isolation


def checked_isolation(os_sandbox: bool) -> Isolation:
    """Bubblewrap, verified to run here, or none when the user turned it off (--no-os-sandbox).
    Never downgraded silently: without bubblewrap the run refuses to start (exit 2)."""
    try:
        return require("bubblewrap" if os_sandbox else "none")
    except SandboxUnavailableError as exc:
        raise InputError(str(exc)) from None


def version(binary: str | None = None) -> str | None:
    """``bubblewrap 0.8.0`` or None: for the report beside the isolation used."""
    path = shutil.which(bwrap_binary(binary))
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip() or None


def hidden_dirs() -> tuple[Path, ...]:
    """The user's home places, where credentials live: the real HOME (from $HOME and from the
    password database, when they differ) and /root. A PATH entry there is bound narrowly."""
    candidates = [os.environ.get("HOME"), pwd.getpwuid(os.getuid()).pw_dir, "/root"]
    out: list[Path] = []
    for raw in candidates:
        if not raw:
            continue
        path = Path(raw).resolve()
        if path != Path("/") and path.is_dir() and path not in out:
            out.append(path)
    return tuple(out)


def executable_paths(binary: str | os.PathLike[str]) -> tuple[Path, ...]:
    """What must stay readable to run ``binary``: the file, where its symlink leads, and for an npm
    package (``node_modules/.bin/claude``, or a global ``bin/claude`` leading into
    ``lib/node_modules``) the outermost ``node_modules`` folder, where its dependencies are."""
    path = Path(binary).absolute()
    out = [path, path.resolve()]
    for candidate in (path, path.resolve()):
        roots = [parent for parent in candidate.parents if parent.name == "node_modules"]
        if roots:
            out.append(roots[-1])
    return tuple(out)


def toolchain_paths(search_path: str | None, hidden: Sequence[Path]) -> tuple[Path, ...]:
    """The command's PATH entries that the system folders do not already show, so interpreters
    (python3 via pyenv, node via nvm, a virtualenv's bin) still resolve inside: under a home place
    (HOME, /root) a version manager's whole root or the entry alone; elsewhere the root of a
    self-contained install (``/opt/node`` for ``/opt/node/bin``, a virtualenv: a ``bin`` beside a
    ``lib`` or a ``pyvenv.cfg``, at least two levels down), else the entry alone."""
    out: list[Path] = []
    for entry in (search_path or "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        path = Path(entry).resolve()
        if _under(path, _system_roots()):
            continue
        root = next((r for r in hidden if path.is_relative_to(r)), None)
        if root is not None:
            if path == root:
                continue
            top = root / path.relative_to(root).parts[0]
            out.append(top if top.name in TOOL_ROOTS else path)
        elif path.name == "bin" and len(path.parent.parts) > 2 and _install_root(path.parent):
            out.append(path.parent)
        else:
            out.append(path)
    return tuple(out)


def _install_root(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "lib").is_dir()


@functools.cache
def _system_roots() -> tuple[Path, ...]:
    return tuple(Path(d).resolve() for d in SYSTEM_DIRS if os.path.isdir(d))


def _under(path: Path, places: Iterable[Path]) -> bool:
    return any(path.is_relative_to(p) for p in places)


def _minimal(paths: Iterable[Path]) -> list[Path]:
    """Distinct paths, none inside another (binding the outer one already shows the inner)."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    out: list[Path] = []
    for p in unique:
        if not _under(p, out):
            out.append(p)
    return out


def _system_mounts() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for secret in ETC_SECRETS:
        if os.path.isdir(secret) and not os.path.islink(secret):
            args += ["--tmpfs", secret, "--remount-ro", secret]
        elif os.path.lexists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    return args


def _mounts(writable: Sequence[Path], readable: Sequence[Path]) -> list[str]:
    args = [*_system_mounts(), "--dev", "/dev", "--proc", "/proc"]
    args += ["--size", str(tmp_limit()), "--tmpfs", "/tmp"]
    system = _system_roots()
    ro = [p for p in _minimal(p.resolve() for p in readable if p.exists()) if not _under(p, system)]
    rw = _minimal(p.resolve() for p in writable)
    # Shallow first, so a read-only path inside a writable one (or the reverse) ends up as asked.
    binds = sorted(
        [(p, "--ro-bind") for p in ro] + [(p, "--bind") for p in rw], key=lambda b: len(b[0].parts)
    )
    for path, flag in binds:
        args += [flag, str(path), str(path)]
    return args


def relay_paths() -> tuple[Path, ...]:
    """What the relay needs readable: this interpreter's installation (standard library only; the
    relay runs with ``-I -S``) and the relay script."""
    return (Path(sys.base_prefix), Path(_interpreter()).parent, RELAY)


def _interpreter() -> str:
    """This interpreter's real file: a virtualenv's ``python`` is a link into the base install,
    and the relay needs only the base (its standard library)."""
    return os.path.realpath(sys.executable)


def wrap(
    argv: Sequence[str],
    *,
    isolation: Isolation,
    workdir: str | os.PathLike[str],
    writable: Iterable[str | os.PathLike[str]] = (),
    readable: Iterable[str | os.PathLike[str]] = (),
    search_path: str | None = None,
    chdir: str | os.PathLike[str] | None = None,
    binary: str | None = None,
    network: Network = "none",
    egress: str | os.PathLike[str] | None = None,
    cgroup: Path | None = None,
) -> list[str]:
    """``argv`` as run in the sandbox: ``workdir`` and ``writable`` read-write (they must exist),
    ``readable`` and the ``search_path`` entries (the command's PATH) read-only, started in
    ``chdir`` (default ``workdir``). ``network="model"`` binds the forwarder's socket ``egress`` and
    starts ``argv`` under the relay, which serves it on 127.0.0.1:EGRESS_PORT inside. ``cgroup``: a
    pids cgroup (see :func:`pids_cgroup`) the whole sandbox is put in. With isolation ``"none"``,
    ``argv`` unchanged (the network and the limits are then the host's)."""
    if require(isolation, binary=binary) == "none":
        return list(argv)
    work = Path(workdir).resolve()
    hidden = hidden_dirs()
    extra_ro = [Path(p) for p in readable] + list(toolchain_paths(search_path, hidden))
    inner = list(argv)
    egress_args: list[str] = []
    if network == "model":
        if egress is None:
            raise ValueError("network='model' needs the forwarder's socket (egress)")
        extra_ro += relay_paths()
        egress_args = ["--ro-bind", str(egress), f"{EGRESS_DIR}/model.sock"]
        inner = [_interpreter(), "-I", "-S", str(RELAY), str(EGRESS_PORT), f"{EGRESS_DIR}/model.sock", *argv]
    bwrap = shutil.which(bwrap_binary(binary)) or bwrap_binary(binary)
    start = Path(chdir).resolve() if chdir is not None else work
    command = [
        bwrap,
        *_mounts([work, *(Path(p) for p in writable)], extra_ro),
        *egress_args,
        *CONFINE,
        *([] if network == "host" else ["--unshare-net"]),
        "--chdir",
        str(start),
        "--",
        *inner,
    ]
    return _limited(command, cgroup)


def _limited(command: list[str], cgroup: Path | None) -> list[str]:
    """``command`` under the sandbox's limits: its file sizes, no core dumps, its process count
    (the pids cgroup, else the kernel's per-user count)."""
    # One file may not outgrow the disk bound (the watch catches the sum); as an rlimit it holds for
    # root too, unlike a process count.
    limited = ["prlimit", f"--fsize={disk_limit()}", "--core=0", "--"] if shutil.which("prlimit") else []
    if cgroup is not None:
        join = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        return ["/bin/sh", "-c", join, str(cgroup), *limited, *command]
    if limited and os.getuid() != 0:  # without a cgroup: the kernel counts a non-root user's processes
        limited.insert(1, f"--nproc={pids_limit()}")
    return [*limited, *command]


def run_sandboxed(
    argv: Sequence[str],
    *,
    isolation: Isolation,
    workdir: Path,
    env: dict[str, str],
    timeout_s: float,
    cap: int,
    writable: Sequence[Path] = (),
    readable: Iterable[str | os.PathLike[str]] = (),
    chdir: Path | None = None,
) -> tuple[int | None, str]:
    """``argv`` run to its end in a sandbox with no network, its pids and disk bounded: see
    :func:`run_capped`. A sandbox that outgrows the disk bound is killed and says so last."""
    with pids_cgroup(isolation) as group:
        command = wrap(
            argv,
            isolation=isolation,
            workdir=workdir,
            writable=writable,
            readable=readable,
            search_path=env.get("PATH"),
            chdir=chdir,
            cgroup=group,
        )
        return run_capped(
            command, cwd=chdir or workdir, env=env, timeout_s=timeout_s, cap=cap, watch=[workdir, *writable]
        )


def run_capped(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: dict[str, str],
    timeout_s: float,
    cap: int,
    watch: Sequence[Path] = (),
) -> tuple[int | None, str]:
    """Run ``command`` (a wrapped one, usually) to its end or ``timeout_s``: its exit code (None:
    killed at the timeout or for outgrowing the disk bound in ``watch``) and the last ``cap`` bytes
    of its output, stdout and stderr together.

    Its whole process group is killed afterwards, also when it exited: a child it left behind
    (possible without bubblewrap) is not kept. The output is drained in a thread keeping only the
    last chunks, so a flood cannot fill memory."""
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    tail: deque[bytes] = deque()
    reader = threading.Thread(target=_keep_tail, args=(proc, tail, cap), daemon=True)
    reader.start()
    disk = DiskWatch(watch, disk_limit(), on_exceeded=lambda: kill_group(proc.pid))
    with disk if watch else contextlib.nullcontext():
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
    kill_group(proc.pid)
    proc.wait()
    reader.join(timeout=5)
    if proc.stdout is not None and not reader.is_alive():
        proc.stdout.close()
    out = b"".join(tail)[-cap:].decode("utf-8", "replace")
    if disk.exceeded.is_set():
        return None, f"{out}\n{disk.message}"
    return code, out


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _keep_tail(proc: subprocess.Popen[bytes], tail: deque[bytes], cap: int) -> None:
    if proc.stdout is None:
        return
    size = 0
    while chunk := os.read(proc.stdout.fileno(), 1 << 16):
        tail.append(chunk)
        size += len(chunk)
        while size - len(tail[0]) > cap:
            size -= len(tail.popleft())
