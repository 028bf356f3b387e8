"""Reuse what did not change: a baseline session taken from an earlier run when only the skill did.

The baseline arm never sees the skill, so when a user iterates on the skill alone, every baseline
session of the next run would repeat one already paid for. A baseline session that ended normally
and clean is kept under the results folder's cache, keyed by everything that decides it: the agent
CLI and its version, the model and its endpoint, the request the CLI got (prompt, turns, timeout,
sandbox and network settings, but not its random paths), the configuration skillab gives the CLI,
every byte of the case's folder, input files, readable folders and environment, and the run index. A later run whose baseline session has the same key restores the session, its raw outputs
and the sandbox it left, and grades them as if they had just run; its report counts the sessions
reused and names the run each came from.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from executors.agent import agent_cli
from executors.contents import archive_tree, copy_tree, tree_digest
from executors.errors import InputError
from executors.parsing import load_json
from executors.schema import AgentRequest, AgentSession
from flows.modes.agentic.plan import Session
from tasks.schema import Arm
from tasks.store.cache import cache_key
from tasks.store.files import atomic_write_json

#: The request's fields that name this run's random folders, not what the agent was asked.
PATHS = {"sandbox", "home", "raw_stream"}
SESSION = "session.json"


@dataclass(frozen=True)
class Reused:
    """A baseline session restored from an earlier run."""

    session: AgentSession
    origin: str  # the results folder of the run that paid for it


def _inputs_digest(root: str | None, names: tuple[str, ...]) -> str:
    """Every byte of a skill-creator eval's input files and folders, by their relative paths."""
    digest = hashlib.sha256()
    for name in sorted(names):
        path = Path(root or ".").joinpath(*name.split("/"))
        digest.update(f"{name}\0{tree_digest(path, 'files')}\0".encode())
    return digest.hexdigest()


def baseline_key(s: Session, request: AgentRequest, cli_version: str | None, endpoint: str | None) -> str:
    """Everything a baseline session can see, and its run index (repeats are real): the request,
    the CLI (its version and the configuration skillab gives it), the endpoint, every byte of the
    case's folder (its scaffold's inputs in subfolders included), the input files, the folders it
    may read and the environment snapshot. Any change runs the baseline again."""
    task = s.task
    return cache_key(
        "agentic-baseline",
        {
            "request": request.model_dump(mode="json", exclude=PATHS),
            "cli_version": cli_version,
            "cli_config": agent_cli(request.cli).config_digest(),
            "endpoint": endpoint,
            "inputs": _inputs_digest(task.input_root, task.input_files),
            "case": tree_digest(Path(task.case_dir), "case folder") if task.case_dir else None,
            "add_dirs": [tree_digest(Path(d), "add_dirs") for d in request.add_dirs],
            "environment": tree_digest(Path(request.environment), "environment")
            if request.environment
            else None,
            "run": s.run,
        },
    )


@dataclass(frozen=True)
class Reuse:
    """What a run needs to reuse baseline sessions: the cache, its own name (the origin of what it
    adds) and the agent CLI's version."""

    cache: BaselineCache
    origin: str
    cli_version: str

    @classmethod
    def of(cls, enabled: bool, results: Path, cli_version: str | None) -> Reuse | None:
        """For a run writing into ``results``; None when turned off or when the CLI's version is
        unknown (a changed CLI could not be told apart)."""
        if not enabled or not cli_version:
            return None
        return cls(BaselineCache(results.parent / ".cache" / "baseline"), results.name, cli_version)

    async def take(
        self, s: Session, request: AgentRequest, endpoint: str | None
    ) -> tuple[str | None, Reused | None]:
        """A baseline session's key and, when an earlier run kept it, the session restored into
        ``s``'s folders; (None, None) for any other arm."""
        if s.mode != Arm.BASELINE:
            return None, None
        key = baseline_key(s, request, self.cli_version, endpoint)
        return key, await asyncio.to_thread(self.cache.take, key, s)

    async def keep(self, key: str | None, s: Session, session: AgentSession, clean: bool) -> None:
        """Keep a baseline session that ended normally and clean, for the next run."""
        if key is not None and session.ok and clean:
            await asyncio.to_thread(self.cache.put, key, s, session, self.origin)


class BaselineCache:
    """Finished clean baseline sessions, one folder per key: the session, its raw outputs and the
    sandbox it left (links out of it already replaced by notes)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def take(self, key: str, s: Session) -> Reused | None:
        """The session under ``key``, its outputs and sandbox restored into ``s``'s folders."""
        entry = self.root / key
        try:
            data = load_json((entry / SESSION).read_text(encoding="utf-8"))
            session = AgentSession.model_validate(data["session"])
            origin = str(data["origin"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent, or half written by a run that was killed: run it again
        try:
            copy_tree(entry / "outputs", s.outputs, "cached baseline session")
            if (entry / "sandbox").is_dir():
                copy_tree(entry / "sandbox", s.sandbox, "cached baseline session")
            else:  # the session left nothing
                s.sandbox.mkdir(parents=True, exist_ok=True)
        except (OSError, InputError):
            return None  # a cache entry that cannot be restored is run again (its files are overwritten)
        return Reused(
            session.model_copy(update={"meta": session.meta.model_copy(update={"reused_from": origin})}),
            origin,
        )

    def put(self, key: str, s: Session, session: AgentSession, origin: str) -> None:
        """Keep a finished clean baseline session (written last: a half copy is never taken)."""
        entry = self.root / key
        shutil.rmtree(entry, ignore_errors=True)
        shutil.copytree(s.outputs, entry / "outputs", symlinks=True)
        if s.sandbox.is_dir():
            archive_tree(s.sandbox, entry / "sandbox")
        atomic_write_json(entry / SESSION, {"session": session.model_dump(mode="json"), "origin": origin})
