"""The OS sandbox every agent session and every task check runs in: bubblewrap (``bwrap``).

Inside, the host filesystem is visible read-only, ``/tmp`` is a private tmpfs, the real HOME (and
``/root``) is covered by an empty tmpfs, and only the session's own folders (its sandbox, its fresh
HOME) are bound read-write. The process gets its own PID, IPC and UTS namespaces, loses every
capability (as root, bwrap otherwise leaves the full set, enough to unmount the cover over HOME or
remount ``/`` read-write), runs in a new session (no terminal to push input into) and dies with its
parent. The network is shared: the CLIs reach their model server on 127.0.0.1.

Some things the sandboxed command needs live under the hidden places and are bound back read-only:
the agent CLI's ``node_modules`` (``~/.cache/skillab/agent-clis``), the executable itself, and the
PATH entries under HOME (for a version manager such as pyenv, whose shims need its whole root, that
root). Nothing else of HOME is visible.

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
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, get_args

from executors.errors import InputError

Isolation = Literal["bubblewrap", "none"]
ISOLATIONS: tuple[str, ...] = get_args(Isolation)
BWRAP_ENV = "SKILLAB_BWRAP"  # the bwrap executable, when not `bwrap` on PATH
#: The flag that turns the sandbox off, in the words every options model uses for it.
OS_SANDBOX_HELP = (
    "run agent sessions and task checks in bubblewrap (read-only host, private /tmp); "
    "--no-os-sandbox: only a fresh HOME, for machines where bubblewrap cannot run"
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


# The host variables a sandboxed process sees: locale and the interpreters' own, never a credential
# (a cloud key, a token) that happens to be set in the user's shell.
ENV_KEEP = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "SHELL"})
ENV_KEEP_PREFIXES = ("LC_", "PYENV_", "NVM_")
# What an agent CLI needs besides: its provider's endpoint and key, its own switches, proxies and CA
# certificates (so it can reach its model server where a proxy is mandatory).
AGENT_ENV_PREFIXES = (
    "ANTHROPIC_",
    "CLAUDE_",
    "DISABLE_",
    "OPENAI_",
    "CODEX_",
    "GEMINI_",
    "GOOGLE_GEMINI_",
    "GOOGLE_API_KEY",
    "NODE_",
    "SSL_CERT_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def host_env(*keep_prefixes: str) -> dict[str, str]:
    """The part of this process's environment a sandboxed command may see, PATH always set."""
    prefixes = ENV_KEEP_PREFIXES + keep_prefixes
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith(prefixes)}
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
            [path, *_mounts((), ()), *CONFINE, "--", "true"],
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
    """The places covered by an empty tmpfs: the real HOME (from $HOME and from the password
    database, when they differ) and /root."""
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
    """PATH entries under a hidden place, bound back so interpreters (python3 via pyenv, node via
    nvm) still resolve inside; a version manager's whole root when the entry is inside one."""
    out: list[Path] = []
    for entry in (search_path or "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        path = Path(entry).resolve()
        for root in hidden:
            if path.is_relative_to(root) and path != root:
                top = root / path.relative_to(root).parts[0]
                out.append(top if top.name in TOOL_ROOTS else path)
                break
    return tuple(out)


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


def _mounts(writable: Sequence[Path], readable: Sequence[Path]) -> list[str]:
    hidden = hidden_dirs()
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for place in hidden:
        args += ["--tmpfs", str(place)]
    masked = [Path("/tmp"), *hidden]
    # Only what a tmpfs covered needs binding back; the rest is visible through the read-only root.
    ro = [p for p in _minimal(p.resolve() for p in readable if p.exists()) if _under(p, masked)]
    rw = _minimal(p.resolve() for p in writable)
    # Shallow first, so a read-only path inside a writable one (or the reverse) ends up as asked.
    binds = sorted(
        [(p, "--ro-bind") for p in ro] + [(p, "--bind") for p in rw], key=lambda b: len(b[0].parts)
    )
    for path, flag in binds:
        args += [flag, str(path), str(path)]
    return args


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
) -> list[str]:
    """``argv`` as run in the sandbox: ``workdir`` and ``writable`` read-write (they must exist),
    ``readable`` and the hidden ``search_path`` entries (the command's PATH) read-only, started in
    ``chdir`` (default ``workdir``). With isolation ``"none"``, ``argv`` unchanged."""
    if require(isolation, binary=binary) == "none":
        return list(argv)
    work = Path(workdir).resolve()
    hidden = hidden_dirs()
    extra_ro = [Path(p) for p in readable] + list(toolchain_paths(search_path, hidden))
    bwrap = shutil.which(bwrap_binary(binary)) or bwrap_binary(binary)
    start = Path(chdir).resolve() if chdir is not None else work
    return [
        bwrap,
        *_mounts([work, *(Path(p) for p in writable)], extra_ro),
        *CONFINE,
        "--chdir",
        str(start),
        "--",
        *argv,
    ]


def run_capped(
    command: Sequence[str], *, cwd: str | os.PathLike[str], env: dict[str, str], timeout_s: float, cap: int
) -> tuple[int | None, str]:
    """Run ``command`` (a wrapped one, usually) to its end or ``timeout_s``: its exit code (None:
    killed at the timeout) and the last ``cap`` bytes of its output, stdout and stderr together.

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
    try:
        code: int | None = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        code = None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    reader.join(timeout=5)
    if proc.stdout is not None and not reader.is_alive():
        proc.stdout.close()
    return code, b"".join(tail)[-cap:].decode("utf-8", "replace")


def _keep_tail(proc: subprocess.Popen[bytes], tail: deque[bytes], cap: int) -> None:
    if proc.stdout is None:
        return
    size = 0
    while chunk := os.read(proc.stdout.fileno(), 1 << 16):
        tail.append(chunk)
        size += len(chunk)
        while size - len(tail[0]) > cap:
            size -= len(tail.popleft())
