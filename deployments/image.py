"""The fleet's session image, built here from Debian packages and the pinned agent CLIs (no image
registry is needed or reachable): three layers, each tagged by a digest of what makes it, so a build
is idempotent and a layer whose inputs did not change is never made again.

1. ``skillab-rootfs:<digest>``: a Debian root file system made with ``debootstrap`` (minbase and the
   packages a session needs: Python, bubblewrap, Node.js, git, ripgrep), imported with ``docker import``.
2. ``skillab-base:<digest>``: skillab's runtime dependencies at the versions installed here (a
   virtual environment made by this machine's Debian Python, the same 3.11 the image has), and the
   chosen agent CLIs copied from their pinned install (scripts/install-agent-clis.sh).
3. ``skillab-session:<digest>``: skillab's own source, so every container runs the code of the run
   that dispatched to it (the deployment records the digest; a run refuses a fleet on other code).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from executors.agent import CLI_DIR_ENV, cli_dir
from executors.errors import InputError
from flows.engine.container_engine import IMAGE_VARIABLE
from flows.engine.remote import ROOT, SOURCES, source_digest, source_files

SUITE, MIRROR = "bookworm", "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-venv", "ca-certificates", "bubblewrap", "nodejs", "git", "ripgrep")
#: The npm package of each agent CLI (its platform binaries are its optional dependencies).
CLI_PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "copilot": "@github/copilot",
    "opencode": "opencode-ai",
}
IMAGE_CLI_DIR = "/opt/agent-clis"
VENV = "/opt/venv"
APP = "/opt/skillab"


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def docker(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["docker", *args], input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise InputError("docker: not found (install docker.io and start dockerd)") from None


def exists(tag: str) -> bool:
    return docker("image", "inspect", tag).returncode == 0


def _image_id(tag: str) -> str:
    """A local image's id (the digest of its content): the root file system's says which Debian
    packages the image holds, which its tag (a digest of the recipe) does not."""
    proc = docker("image", "inspect", "--format", "{{.Id}}", tag)
    _checked(proc, f"docker image inspect {tag}")
    return proc.stdout.decode().strip().removeprefix("sha256:")[:12]


def _checked(proc: subprocess.CompletedProcess[bytes], what: str) -> None:
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or b"").decode("utf-8", "replace").strip()[-600:]
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {tail}")


def runtime_requirements(extras: tuple[str, ...] = ("s3",)) -> list[str]:
    """skillab's runtime dependencies and those of its ``extras`` that are installed here, their
    whole closure, at the versions installed here (the image runs what the dispatching machine
    tested): ``name==version`` lines."""
    base = {k: str(v) for k, v in default_environment().items()}
    seen: dict[str, str] = {}
    todo = [
        req
        for r in metadata.requires("skillab") or []
        if (req := Requirement(r)).marker is None
        or any(req.marker.evaluate({**base, "extra": e}) for e in extras)
    ]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name in seen:
            continue
        try:
            seen[name] = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            continue  # an extra's package this machine does not have: not in the image either
        todo.extend(
            dep
            for r in metadata.requires(req.name) or []
            if (dep := Requirement(r)).marker is None or dep.marker.evaluate({**base, "extra": ""})
        )
    return sorted(f"{n}=={v}" for n, v in seen.items())


def cli_closure(modules: Path, clis: Iterable[str]) -> list[str]:
    """The node_modules entries the chosen CLIs need: each package, its dependencies and its
    optional ones (the platform binaries) that are installed, transitively."""
    todo = [CLI_PACKAGES[c] for c in clis]
    seen: list[str] = []
    while todo:
        name = todo.pop()
        manifest = modules / name / "package.json"
        if name in seen or not manifest.is_file():
            continue
        seen.append(name)
        data = json.loads(manifest.read_text(encoding="utf-8"))
        todo.extend({**data.get("dependencies", {}), **data.get("optionalDependencies", {})})
    return sorted(seen)


def _cli_versions(modules: Path, packages: list[str]) -> dict[str, str]:
    return {p: json.loads((modules / p / "package.json").read_text())["version"] for p in packages}


@dataclass(frozen=True)
class Built:
    tag: str
    seconds: float
    made: tuple[str, ...]  # the layers made by this build (empty: every one was there)


def _rootfs() -> tuple[str, bool]:
    tag = f"skillab-rootfs:{_digest(SUITE, MIRROR, PACKAGES)}"
    if exists(tag):
        return tag, False
    if shutil.which("debootstrap") is None:
        raise InputError("debootstrap: not found (apt-get install debootstrap)")
    with tempfile.TemporaryDirectory(prefix="skillab-rootfs-") as tmp:
        target = Path(tmp) / "root"
        proc = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                SUITE,
                str(target),
                MIRROR,
            ],
            capture_output=True,
            check=False,
        )
        _checked(proc, "debootstrap")
        tar = subprocess.run(["tar", "-C", str(target), "-c", "."], capture_output=True, check=False)
        _checked(tar, "tar of the root file system")
        _checked(docker("import", "-", tag, stdin=tar.stdout), "docker import")
    return tag, True


def _build(tag: str, context: Path, dockerfile: str) -> None:
    (context / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    _checked(docker("build", "-q", "-t", tag, str(context)), f"docker build {tag}")


def _base(rootfs: str, clis: tuple[str, ...]) -> tuple[str, bool]:
    modules = cli_dir() / "node_modules"
    packages = cli_closure(modules, clis)
    missing = [c for c in clis if CLI_PACKAGES[c] not in packages]
    if missing:
        raise InputError(
            f"{', '.join(missing)}: not installed in {cli_dir()} (scripts/install-agent-clis.sh)"
        )
    requirements = runtime_requirements()
    recipe = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()  # how the layer is made
    tag = f"skillab-base:{_digest(rootfs, requirements, _cli_versions(modules, packages), clis, recipe)}"
    if exists(tag):
        return tag, False
    with tempfile.TemporaryDirectory(prefix="skillab-image-") as tmp:
        context = Path(tmp)
        python = "/usr/bin/python3.11"  # Debian's, as in the image: the environment moves as it is
        _checked(
            _run([sys.executable, "-m", "uv", "venv", "-q", "--python", python, str(context / "venv")]),
            "venv",
        )
        (context / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
        install = [
            sys.executable,
            "-m",
            "uv",
            "pip",
            "install",
            "-q",
            "--python",
            str(context / "venv/bin/python"),
        ]
        _checked(_run([*install, "-r", str(context / "requirements.txt")]), "the runtime dependencies")
        _rehome_scripts(context / "venv/bin", f"{VENV}/bin/python")
        for name in packages:
            shutil.copytree(modules / name, context / "clis/node_modules" / name, symlinks=True)
        bins = context / "clis/node_modules/.bin"
        bins.mkdir(parents=True)
        for cli in clis:
            link = modules / ".bin" / cli
            if link.is_symlink():
                (bins / cli).symlink_to(os.readlink(link))
        _build(
            tag,
            context,
            # bytecode made once here (uv writes none): a container imports Prefect without compiling it
            f"FROM {rootfs}\nCOPY venv {VENV}\nRUN python3 -m compileall -q -j0 {VENV} >/dev/null; true\n"
            f"COPY clis {IMAGE_CLI_DIR}\n"
            f"ENV PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin {CLI_DIR_ENV}={IMAGE_CLI_DIR} "
            "PYTHONDONTWRITEBYTECODE=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1\n",
        )
    return tag, True


def _rehome_scripts(bin_dir: Path, python: str) -> None:
    """The environment's scripts (``prefect``, which the worker runs) name the interpreter where the
    image has it, not where it was made."""
    for script in bin_dir.iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0]:
            script.write_bytes(b"#!" + python.encode() + b"\n" + data.split(b"\n", 1)[1])


def _run(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, check=False)


def build(clis: tuple[str, ...] = ("claude",)) -> Built:
    """The session image with these agent CLIs, made where missing; its tag is
    ``skillab-session:<digest>``, also tagged ``skillab-session:latest``."""
    started = time.perf_counter()
    unknown = [c for c in clis if c not in CLI_PACKAGES]
    if unknown:
        raise InputError(f"--cli {unknown[0]}: not an agent CLI (one of {', '.join(CLI_PACKAGES)})")
    if importlib.util.find_spec("uv") is None:  # what makes the image's Python environment
        raise InputError(f"uv: not installed in {sys.executable} (pip install -e '.[fleet]' brings it)")
    made: list[str] = []
    rootfs, new = _rootfs()
    made += [rootfs] if new else []
    base, new = _base(rootfs, clis)
    made += [base] if new else []
    source = source_digest()
    tag = f"skillab-session:{_digest(base, source)}"
    if not exists(tag):
        with tempfile.TemporaryDirectory(prefix="skillab-image-") as tmp:
            context = Path(tmp)
            for path in source_files():  # exactly what the digest covers
                copy = context / path.relative_to(ROOT)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, copy)
            copies = "".join(f"COPY {name} {APP}/{name}\n" for name in SOURCES)
            _build(
                tag,
                context,
                f"FROM {base}\n{copies}RUN python -m compileall -q {APP}\nWORKDIR {APP}\nENV PYTHONPATH={APP}\n"
                f'LABEL skillab.source="{source}"\nENV {IMAGE_VARIABLE}="{tag} on {_image_id(rootfs)}"\n',
            )
        made.append(tag)
    _checked(docker("tag", tag, "skillab-session:latest"), "docker tag")
    return Built(tag, time.perf_counter() - started, tuple(made))
