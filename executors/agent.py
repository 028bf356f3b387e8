"""What the agent CLIs share: finding the binary, an isolated environment (a fresh HOME, and the OS
sandbox of ``executors.sandbox`` unless the request says ``isolation="none"``), the model reached
only through the forwarder of ``executors.egress`` (the session holds no key), and a subprocess
that is killed with its whole process group when it hangs or outgrows its disk bound, writing its
stream to a file (so a CLI that floods output cannot fill a pipe or memory), secrets masked."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, cast

from executors import agent_config
from executors.agent_config import CONFIG_FILES, HERE
from executors.base import Executor, ExecutorSettings
from executors.conversation import Conversation, Talking, talks, world_problem
from executors.egress import Provider, Route, forwarder
from executors.errors import PermanentError, TransientError, is_transient_status
from executors.limits import DiskWatch, disk_limit, pids_cgroup
from executors.parsing import JsonObject, json_lines
from executors.redaction import redact_file
from executors.registry import AGENT_CLIS, executor_class, get_executor
from executors.sandbox import (
    EGRESS_PORT,
    Isolation,
    Network,
    executable_paths,
    host_env,
    kill_group,
    require,
    secret_name,
    wrap,
)
from executors.schema import (
    AgentEvent,
    AgentRequest,
    AgentSession,
    RunRequest,
    RunResult,
    SessionMeta,
    SessionStatus,
    SkillListing,
    Usage,
)
from executors.support import SkillSupport
from executors.versions import installed_version, version_problem
from executors.workspace import session_root

CLI_DIR_ENV = "SKILLAB_AGENT_CLI_DIR"
DEFAULT_CLI_DIR = Path.home() / ".cache" / "skillab" / "agent-clis"
# Variables of an enclosing Claude Code session that would make a nested `claude -p` refuse to run.
NESTED = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT")
STREAM_LIMIT = 64 * 1024 * 1024  # a session writing more than this is killed (a flood, not an answer)
EXIT_GRACE_S = 5.0  # after the CLI exits, how long its leftover children may keep its output open
ADD_DIRS = "skillab-add-dirs"  # in the session's HOME: copies of the folders it may only read
#: Sample mode: the turns an agent CLI may take to answer one prompt.
SAMPLE_TURNS = 3
#: --dry-run's upper bound per turn: what each earlier turn adds to the next request, and a long answer.
TURN_GROWTH_TOKENS, TURN_OUTPUT_TOKENS = 4_000, 4_000


def cli_dir() -> Path:
    """Where scripts/install-agent-clis.sh installs the pinned agent CLIs ($SKILLAB_AGENT_CLI_DIR)."""
    return Path(os.environ.get(CLI_DIR_ENV) or DEFAULT_CLI_DIR)


def find_binary(name: str) -> str | None:
    env = os.environ.get(f"SKILLAB_{name.upper()}_BIN")
    if env:
        return env
    local = cli_dir() / "node_modules" / ".bin" / name
    return str(local) if local.exists() else shutil.which(name)


@functools.cache
def _skill_file(homes: tuple[str, ...]) -> re.Pattern[str]:
    folders = "|".join(re.escape(h) for h in homes)
    return re.compile(rf"""(?:^|[\s'"=/])(?:{folders})/([^/\s'"]+)/SKILL\.md""")


def skill_file_reads(text: str, *homes: str) -> list[str]:
    """The skills whose SKILL.md ``text`` (a path, a shell command) names in one of the folders
    ``homes`` (".agents/skills"): reading it is loading that skill, for a CLI that can."""
    return list(dict.fromkeys(_skill_file(homes).findall(text)))


def json_object(value: Any) -> JsonObject:
    """``value`` when a stream gave a JSON object there, else an empty one (a field missing or odd)."""
    return value if isinstance(value, dict) else {}


def read_events(path: Path) -> list[JsonObject]:
    """JSON lines of a stream; lines that are not JSON objects (warnings, banners) are skipped."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(STREAM_LIMIT)
    except FileNotFoundError:
        return []
    return json_lines(data.decode("utf-8", "replace"))


@functools.cache
def _source_digest(cls: type) -> str:
    """The source of every module that defines ``cls`` or one of its agent executor bases."""
    digest = hashlib.sha256()
    for base in cls.__mro__:
        module = sys.modules.get(base.__module__)
        if module is not None and base.__module__.startswith("executors.") and module.__file__:
            digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()


def shipped_configuration(folder: Path, what: str, at: PurePosixPath = HERE) -> str | None:
    """One line naming what under ``folder`` (placed at ``at`` in a session's working folder) any
    agent CLI would read as its own configuration; None when nothing."""
    return agent_config.shipped_configuration(folder, what, CONFIG_FILES, at)


@dataclass
class _Ended:
    """How a CLI's process ended, as :meth:`AgentExecutor._execute` saw it."""

    code: int | None = None
    timed_out: bool = False
    flooded: bool = False
    held: bool = False  # a child it left kept its output open past the grace period
    disk: Any = None  # its DiskWatch

    def failure(
        self, session: AgentSession, request: AgentRequest, raw: Path
    ) -> tuple[SessionStatus, str] | None:
        """The status and error the session's record says instead of its own account, when the
        process did not end as the stream claims: None when it did."""
        if self.disk is not None and self.disk.exceeded.is_set():
            return SessionStatus.ERROR, self.disk.message
        if self.timed_out:
            return SessionStatus.TIMEOUT, f"killed after {request.timeout_s:g}s"
        if self.flooded:
            return SessionStatus.FLOOD, f"killed: more than {STREAM_LIMIT // (1024 * 1024)} MiB of output"
        if session.status == SessionStatus.SUCCESS and self.code not in (0, None):
            return SessionStatus.CRASHED, f"exit code {self.code}"
        if not session.events and self.code != 0:
            tail = raw.with_name("stderr.txt").read_bytes()[-300:].decode("utf-8", "replace").strip()
            return SessionStatus.CRASHED, f"exit code {self.code}: {tail}"
        return None


class AgentExecutor(Executor):
    """Runs one CLI session. Subclasses build the command and parse the stream."""

    binary: ClassVar[str]
    #: Whose endpoint and key the CLI's session uses (the forwarder's route).
    provider: ClassVar[Provider]
    #: The CLI's own switches passed from the host (never a credential, endpoint or loader: see
    #: executors.sandbox.secret_name).
    env_prefixes: ClassVar[tuple[str, ...]] = ()
    #: Where the CLI discovers skills, below the session's HOME: a skill is installed there, never forced.
    skills_home: ClassVar[tuple[str, str]]
    #: True when the CLI loads a whole plugin folder (commands, agents, hooks, MCP servers); the
    #: others run a plugin made of skills alone, its skills installed as single skills are.
    loads_plugins: ClassVar[bool] = False
    #: feature -> the oldest CLI version known to have it, and what the feature is: a run that needs
    #: it stops before any session with one line (exit 2) instead of sessions that load nothing.
    features: ClassVar[dict[str, tuple[str, str]]] = {}
    #: Input tokens of one model request of the CLI (its system prompt and tools): --dry-run's estimate.
    request_tokens: ClassVar[int]
    #: The CLI's short model names and the models they name today (priced as those).
    model_aliases: ClassVar[dict[str, str]] = {}
    #: The CLI's own folders in a workspace (settings, installed skills): not the agent's work. The
    #: skills home's top folder unless the CLI names its folders.
    workspace_dirs: ClassVar[tuple[str, ...]]
    #: Skills every session of the CLI lists of its own: never the user's artifact.
    builtin_skills: ClassVar[frozenset[str]] = frozenset()
    #: What the CLI does with a skill: its tools under Claude Code's names, the SKILL.md fields it acts
    #: on, how it lists skills (executors/support.py; the portability lint reads only this).
    support: ClassVar[SkillSupport]
    #: False when the CLI has no hard turn limit (``max_turns`` is advice or ignored; the timeout bounds it).
    turn_limit: ClassVar[bool] = True
    #: The CLI reads the prompt on stdin (its argv form would alter it); argv otherwise.
    prompt_on_stdin: ClassVar[bool] = False
    agentic = True
    stream_limit: int = STREAM_LIMIT

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """What follows from what a CLI declares is derived, never declared twice."""
        super().__init_subclass__(**kwargs)
        if not hasattr(cls, "workspace_dirs") and hasattr(cls, "skills_home"):
            cls.workspace_dirs = (cls.skills_home[0],)

    @classmethod
    def cache_version(cls) -> str:
        """The installed CLI's version too: a night on a new CLI answers anew, never from the cache
        of the old one (a changed CLI is part of the world a night must see)."""
        path = find_binary(cls.binary)
        return f"{cls.version} {cls.binary} {(installed_version(path) if path else None) or 'unknown'}"

    #: The CLI takes a conversation on its input (a case's user and permission policy);
    #: ``resumes``: it can resume a finished session for a next turn (a case's user
    #: only). A case with what its CLI cannot do is refused before anything runs.
    converses: ClassVar[bool] = False
    resumes: ClassVar[bool] = False
    #: The CLI starts a case's MCP stand-ins from the config skillab writes for the session.
    serves_mcp: ClassVar[bool] = False

    def resume_argv(self, argv: list[str], session_id: str, message: str) -> list[str]:
        """The arguments of a run that resumes ``session_id`` with ``message`` (``resumes``)."""
        raise NotImplementedError(f"{self.name} does not resume sessions")

    def conversation(self, request: AgentRequest, voice: Executor | None) -> Conversation | None:
        """The session's user and permission policy: over the CLI's input (``converses``), or as
        resumed runs (``resumes``: its user only)."""
        if self.converses or self.resumes:
            return Conversation(request.prompt, request.user, request.permissions, voice)
        return None

    @classmethod
    def priced_as(cls, model: str) -> str:
        """The model whose price a model name of the CLI is looked up under."""
        return cls.model_aliases.get(model, model)

    @classmethod
    def session_tokens(cls, turns: int, prompt_tokens: int = 0) -> tuple[int, int]:
        """(input, output) tokens of one session that uses every turn: an upper bound for --dry-run
        (each request carries the CLI's system prompt and tools, the prompt, and every earlier turn)."""
        tokens_in = sum(cls.request_tokens + prompt_tokens + TURN_GROWTH_TOKENS * k for k in range(turns))
        return tokens_in, turns * TURN_OUTPUT_TOKENS

    @classmethod
    def invoked_skills(cls, event: AgentEvent) -> list[str]:
        """The skills a tool call of this CLI loads, as the model named them (trigger detection: a
        firing is a tool call, never prose); none for any other event."""
        return []

    @classmethod
    def feature_problem(cls, feature: str, version: str | None) -> str | None:
        """Why ``version`` of this CLI cannot do ``feature`` (None when it can, or when unknown)."""
        return version_problem(cls.name, cls.binary, cls.features.get(feature), version)

    @classmethod
    def config_digest(cls) -> str:
        """A digest of the configuration skillab gives this CLI's sessions: the code that writes
        its settings and flags (this class's modules) and the CLI's own switches this process passes
        on (``env_prefixes``). A session cached under another digest was configured differently."""
        switches = sorted(
            (k, v)
            for k, v in os.environ.items()
            if cls.env_prefixes and k.startswith(cls.env_prefixes) and not secret_name(k) and k not in NESTED
        )
        return hashlib.sha256(_source_digest(cls).encode() + json.dumps(switches).encode()).hexdigest()

    def problem(self) -> str | None:
        if find_binary(self.binary) is None:
            return (
                f"the {self.binary!r} CLI was not found: install it (scripts/install-agent-clis.sh) or set "
                f"SKILLAB_{self.binary.upper()}_BIN"
            )
        return None

    def readable(self) -> tuple[Path, ...]:
        """Host folders of the CLI's own (not of any run) its sessions read: bound read-only."""
        return ()

    def base_env(self, request: AgentRequest) -> dict[str, str]:
        # Only what the CLI needs: the agent runs with permissions skipped and must find no
        # credential in its environment, its own provider's key included (the forwarder adds it).
        env = {k: v for k, v in host_env(*self.env_prefixes).items() if k not in NESTED}
        tmp = Path(request.home) / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env.update(HOME=request.home, TMPDIR=str(tmp), NO_COLOR="1", CI="1")
        return env

    @abstractmethod
    def prepare(self, request: AgentRequest, endpoint: str) -> tuple[list[str], dict[str, str]]:
        """Install the skill (with-skill arm), write config files, point the CLI at ``endpoint``
        (the forwarder, as seen from inside the sandbox) with :data:`PLACEHOLDER_KEY` where it
        insists on a key; return (argv, env)."""

    @abstractmethod
    def parse(self, events: list[JsonObject], request: AgentRequest) -> AgentSession:
        """The session from the stream's JSON events."""

    async def session(self, request: AgentRequest, voice: Executor | None = None) -> AgentSession:
        """Run the CLI in the request's sandbox (``voice``: the executor of a model playing the
        case's user). Raises SandboxUnavailableError when the request asks for bubblewrap and it
        cannot run here (a setup problem, not a failed session)."""
        binary = find_binary(self.binary)
        if binary is None:
            raise PermanentError(self.problem() or self.binary)
        isolation = require(request.isolation)
        # What a suite staged or its scaffold made, looked through before the CLI's own files go in.
        shipped = shipped_configuration(Path(request.sandbox), "the session's working folder")
        if shipped is not None:
            return AgentSession(ok=False, status="error", error=shipped)
        if (problem := world_problem(request, type(self))) is not None:
            return AgentSession(ok=False, status="error", error=f"{self.name}: {problem}")
        Path(request.sandbox).mkdir(parents=True, exist_ok=True)
        Path(request.home).mkdir(parents=True, exist_ok=True)
        network: Network = "host" if request.allow_network else "model"
        # Without a network namespace (no bubblewrap, or --allow-network) the forwarder listens on
        # a loopback port; inside one, on a socket the relay reaches.
        route = forwarder().route(
            self.provider, self.settings.base_url, tcp=isolation == "none" or network == "host"
        )
        argv, env = self.prepare(request, route.url(EGRESS_PORT))
        if self.provider.observe is not None:
            forwarder().expect(request.sandbox)
        talk = self.conversation(request, voice) if talks(request) else None
        try:
            with pids_cgroup(isolation) as group:
                session = await self._run(
                    request, binary, argv, env, isolation, (network, route), group, talk
                )
        except BaseException:
            forwarder().listing(None, request.sandbox)  # its folder is no longer expected
            raise
        listing = (
            forwarder().listing(session.meta.session_id, request.sandbox) if self.provider.observe else None
        )
        if listing is None:
            return session
        return session.model_copy(update={"listing": self.budgeted(listing, session, request)})

    def budgeted(self, listing: SkillListing, session: AgentSession, request: AgentRequest) -> SkillListing:
        """The listing with the CLI's budget for it, where the CLI's rule and the session tell it."""
        return listing.model_copy(update={"budget": self.support.listing.budget(session.meta.context_window)})

    async def _run(
        self,
        request: AgentRequest,
        binary: str,
        argv: list[str],
        env: dict[str, str],
        isolation: Isolation,
        egress: tuple[Network, Route],
        group: Path | None,
        talk: Conversation | None,
    ) -> AgentSession:
        network, route = egress
        writable = [request.home, *(env[k] for k in ("TMPDIR", "CODEX_HOME") if env.get(k))]

        def sandboxed(args: list[str]) -> list[str]:
            return wrap(
                [binary, *args],
                isolation=isolation,
                workdir=request.sandbox,
                # CODEX_HOME and TMPDIR live in the fresh HOME today; bound anyway should that change.
                writable=writable,
                # bound read-only over the writable HOME: the session reads its add_dirs, cannot change them
                readable=[*executable_paths(binary), *self.readable(), Path(request.home) / ADD_DIRS],
                search_path=env.get("PATH"),
                network=network,
                egress=route.socket,
                cgroup=group,
            )

        raw = Path(request.raw_stream)
        raw.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        ended = await self._execute(sandboxed(argv), request, env, raw, talk if self.converses else None)
        session = self.parse(read_events(raw), request)
        if talk is not None and not self.converses:  # one run per turn, each resuming the session
            session, ended = await self._resumed(request, session, ended, talk, (sandboxed, argv, env, raw))
        elapsed = (time.perf_counter() - started) * 1000
        for written in (raw, raw.with_name("stderr.txt")):
            redact_file(written)
        session = self.parse(read_events(raw), request)
        session = session.model_copy(
            update={"exit_code": ended.code, "duration_ms": elapsed, "isolation": isolation}
        )
        if talk is not None:
            session = session.model_copy(update={"conversation": tuple(talk.log)})
            if (voice := talk.voice) is not None and voice.calls:  # a model played the user: priced apart
                user = {
                    "user_calls": voice.calls,
                    "user_cost_usd": round(voice.cost_usd, 6),
                    "user_errors": voice.errors,
                }
                session = session.model_copy(update={"meta": session.meta.model_copy(update=user)})
        if (failed := ended.failure(session, request, raw)) is not None:
            status, error = failed
            session = session.model_copy(update={"ok": False, "status": status, "error": error})
        return session

    async def _resumed(
        self,
        request: AgentRequest,
        session: AgentSession,
        ended: _Ended,
        talk: Conversation,
        run: tuple[Callable[[list[str]], list[str]], list[str], dict[str, str], Path],
    ) -> tuple[AgentSession, _Ended]:
        """The user's answers as further runs resuming the session, each run's stream appended to
        the first's, until a turn ends without a question or the user has no answers left."""
        sandboxed, argv, env, raw = run
        talk.opening()  # the first run's prompt, in the log (its argv carried it)
        turn = raw.with_name("raw_stream.turn.jsonl")
        while ended.failure(session, request, raw) is None and (sid := session.meta.session_id):
            answer = await talk.follow_up(session.final_text, session.ok)
            if answer is None:
                break
            told = request.model_copy(update={"prompt": answer})  # what a CLI reading stdin is told
            ended = await self._execute(sandboxed(self.resume_argv(argv, str(sid), answer)), told, env, turn)
            with raw.open("ab") as whole:
                whole.write(turn.read_bytes())
            turn.unlink()
            session = self.parse(read_events(raw), request)
        return session, ended

    async def _execute(
        self,
        command: list[str],
        request: AgentRequest,
        env: dict[str, str],
        raw: Path,
        talk: Conversation | None = None,
    ) -> _Ended:
        """The CLI run to its end: its stream copied to ``raw`` (cut at the flood limit), killed
        with its process group at the timeout, a flood, the disk bound, or a child left holding
        its output. With a conversation, the CLI's input is a pipe it answers on."""
        # stdout is a pipe of our own, not asyncio's: asyncio's wait() also waits for the pipes it
        # made to close, which never happens once reading stops at a flood (the paused reader
        # leaves data unread) or while a background child of the agent still holds the pipe.
        read_fd, write_fd = os.pipe()
        reader = asyncio.StreamReader()
        ended = _Ended()
        watched = [Path(request.sandbox), Path(request.home)]  # TMPDIR and CODEX_HOME are in HOME
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(open(raw, "wb"))
            err = stack.enter_context(open(raw.with_name("stderr.txt"), "wb"))
            stdin: Any = asyncio.subprocess.DEVNULL
            if talk is not None:
                stdin = asyncio.subprocess.PIPE
            elif self.prompt_on_stdin:
                prompt = Path(request.home) / "skillab-prompt.txt"
                prompt.write_text(request.prompt, encoding="utf-8")
                stdin = stack.enter_context(open(prompt, "rb"))
            pipe = stack.enter_context(os.fdopen(read_fd, "rb", buffering=0))
            try:
                proc = await asyncio.create_subprocess_exec(
                    *command, cwd=request.sandbox, env=env, stdin=stdin, stdout=write_fd, stderr=err,
                    start_new_session=True,
                )  # fmt: skip
            finally:
                os.close(write_fd)
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pipe
            )
            stack.callback(transport.close)
            ended.disk = stack.enter_context(
                DiskWatch(watched, disk_limit(), on_exceeded=lambda: kill_group(proc.pid))
            )
            try:
                pump = self._pump(
                    proc, reader, out, ended, Talking(talk, proc.stdin) if talk and proc.stdin else None
                )
                await asyncio.wait_for(pump, request.timeout_s)
            except TimeoutError:
                ended.timed_out = True
            finally:
                if proc.returncode is None or ended.flooded or ended.held:
                    kill_group(proc.pid)
                await proc.wait()
        ended.code = proc.returncode
        return ended

    async def _pump(
        self, proc: Any, reader: asyncio.StreamReader, out: Any, ended: _Ended, talking: Talking | None
    ) -> None:
        """The stream copied until the CLI exits (and its last lines are read)."""

        async def copy() -> None:
            # Copied through Python so a flood is cut at the limit, not after filling the disk.
            written = 0
            if talking is not None:
                await talking.start()
            while chunk := await reader.read(1 << 16):
                written += len(chunk)
                if written > self.stream_limit:
                    ended.flooded = True
                    return
                out.write(chunk)
                if talking is not None:
                    await talking.heard(chunk)

        copying = asyncio.ensure_future(copy())
        exited = asyncio.ensure_future(proc.wait())
        try:
            await asyncio.wait({copying, exited}, return_when=asyncio.FIRST_COMPLETED)
            if not copying.done():
                # The CLI exited; its last lines are in the pipe. A child it left running
                # may hold the pipe open: it gets a grace period, then the group is killed.
                await asyncio.wait({copying}, timeout=EXIT_GRACE_S)
                ended.held = not copying.done()
        finally:
            copying.cancel()
            exited.cancel()

    async def run(self, request: RunRequest) -> RunResult:
        """Sample mode through an agent CLI: one prompt in a throw-away sandbox, the artifact as
        system instructions. Failures map onto the error tree like an API's."""
        with session_root() as tmp:
            session = await self.session(
                AgentRequest(
                    cli=self.name,
                    model=request.model,
                    prompt=request.prompt,
                    sandbox=f"{tmp}/sandbox",
                    home=f"{tmp}/home",
                    system=request.system,
                    max_turns=SAMPLE_TURNS,
                    timeout_s=self.settings.timeout_s,
                    raw_stream=f"{tmp}/out/raw_stream.jsonl",
                    isolation=self.settings.isolation,
                    allow_network=self.settings.allow_network,
                )
            )
        if not session.ok:
            status = session.meta.api_error_status
            timed_out = session.status == SessionStatus.TIMEOUT
            if timed_out or (status is not None and is_transient_status(status)):
                raise TransientError(
                    f"{self.name}: {session.status}: {session.error}", status=status, timeout=timed_out
                )
            raise PermanentError(f"{self.name}: {session.status}: {session.error}", status=status)
        usage = usage_of(session.meta)
        cost = session.meta.total_cost_usd
        return RunResult(
            ok=True,
            output=session.final_text,
            usage=usage,
            cost_usd=float(cost) if cost is not None else self.prices.cost_of(request.model, usage),
            latency_ms=session.duration_ms,
            model=session.meta.model or request.model,
            tools=tuple(sorted(session.meta.tools or ())),
        )


def usage_of(meta: SessionMeta) -> Usage:
    """A session's token counts with the API executors' meaning (``input_tokens`` uncached).

    Two conventions arrive: Claude Code's (Anthropic's: ``input_tokens`` excludes
    ``cache_creation_input_tokens`` and ``cache_read_input_tokens``) and the OpenAI-style one of the
    Codex and Gemini CLI parsers (``cached_input_tokens`` and ``cache_write_input_tokens`` are part
    of ``input_tokens``, so they are taken out of it)."""
    usage = meta.usage or {}

    def count(key: str) -> int:
        return int(usage.get(key) or 0)

    written = count("cache_creation_input_tokens")
    read = count("cache_read_input_tokens")
    uncached = count("input_tokens")
    subset_read, subset_written = count("cached_input_tokens"), count("cache_write_input_tokens")
    if subset_read or subset_written:
        uncached = max(0, uncached - subset_read - subset_written)
        read, written = read + subset_read, written + subset_written
    return Usage(
        input_tokens=uncached,
        output_tokens=count("output_tokens"),
        cache_write_tokens=written,
        cache_read_tokens=read,
    )


def agent_cli(name: str) -> type[AgentExecutor]:
    """The executor class of the agent CLI ``--runner`` names (an InputError otherwise)."""
    return cast(type[AgentExecutor], executor_class(name, "--runner", agentic=True))


def agent_cli_classes() -> tuple[type[AgentExecutor], ...]:
    """The agent CLIs' executor classes, in the registry's order."""
    return tuple(agent_cli(name) for name in AGENT_CLIS)


async def agent_session(request: AgentRequest, base_url: str | None) -> AgentSession:
    """One agent session of ``request`` with its runner's CLI (and its simulated user's model)."""
    executor = get_executor(request.cli, ExecutorSettings(base_url=base_url, timeout_s=request.timeout_s))
    if not isinstance(executor, AgentExecutor):
        raise TypeError(f"{request.cli!r} is not an agent CLI executor")
    user = request.user
    voice = get_executor(user.executor) if user is not None and user.model is not None else None
    return await executor.session(request, voice)
