"""Trigger mode's inputs: does a skill fire when it should, given only its listing?

The options (every field a flag), the skill variants (one skill; several folders of the same skill
for a description A/B; or a whole skills folder for routing), the fixed queries file (hashed), the
optional holdout split, and the sessions: one per query x variant x run.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from executors.agent import agent_cli
from executors.errors import InputError
from executors.parsing import load_json
from executors.registry import AGENT_CLIS
from executors.sandbox import Isolation, checked_isolation
from flows.inputs.environment import Environment, snapshot
from flows.inputs.files import options_file, writable_folder
from flows.inputs.options import (
    FLEET_POOL_HELP,
    FLEET_RPM_HELP,
    FLEET_SESSIONS_HELP,
    NightControl,
    RunOptions,
    fleet_sandbox,
)
from flows.inputs.skill_config import (
    BASE_URL_HELP,
    RUNNER_MODEL_HELP,
    Skill,
    agent_list,
    agent_models,
    check_artifact,
    endpoints,
    find_skill,
    runner_default_model,
)
from graders.leakage import DESCRIPTION_WORDS, case_leaks
from graders.loading import read_text
from graders.queries import (
    Query,
    QuerySet,
    Split,
    check_expectations,
    load_queries,
    resolve_under_test,
    split,
)
from graders.triggers import SessionTriggers, TriggerStatus, install_problem
from tasks.schema import TRIGGER_SCALE, TranscriptStep
from tasks.stats.models import Model
from tasks.store.cache import cache_key

DEFAULT_VARIANT = "default"
ENVIRONMENT_VARIANT = "environment"  # the user's setup without the skill under test


class TriggerOptions(NightControl, RunOptions):
    """The parameters of a trigger run; every one is also a flag."""

    _runner_model = model_validator(mode="before")(runner_default_model)

    skill: tuple[str, ...] = Field(
        (),
        description="a skill (name or folder with SKILL.md); repeat with folders of one skill for a description A/B",
        json_schema_extra={"append": True},
    )
    skills_dir: str | None = Field(None, description="install every skill of this folder at once (routing)")
    queries: str | None = Field(
        None, description="the queries file (YAML or JSON; `skill triggers generate` drafts one)"
    )
    runs: int = Field(5, ge=1, description="sessions per query and variant")
    holdout: float = Field(0.0, ge=0, lt=1, description="share of queries held out (stratified, seeded)")
    runner: str = Field(
        "claude",
        description=f"the agent CLI: {' | '.join(AGENT_CLIS)}; several, comma-separated, run every "
        "variant on each (each agent a variant, compared with the first by query)",
    )
    runner_model: str = Field("", description=RUNNER_MODEL_HELP)
    base_url: str | None = Field(None, description=BASE_URL_HELP)
    timeout: float = Field(
        300.0, gt=0, description="seconds per session: generous, a skill called on turn three counts"
    )
    max_turns: int = Field(10, ge=1, description="turn limit of each session")
    seed: int = Field(0, description="seed of the split and the bootstrap intervals")
    results_dir: str = Field("./skill-bench/triggers", description="where each run's report and sessions go")
    cache: bool = Field(
        True,
        description="reuse cached sessions and cache new ones; --no-cache: neither read nor write the session cache",
    )
    cache_dir: str | None = Field(None, description="session cache (default ~/.skillab/cache)")
    dry_run: bool = Field(False, description="print the plan (sessions, estimated cost); run nothing")
    margin: float = Field(
        TRIGGER_SCALE.margin, ge=0, le=1, description="practical margin of an A/B verdict on the rate scale"
    )
    min_effect: float = Field(
        TRIGGER_SCALE.min_effect, gt=0, le=1, description="rate difference an A/B should detect"
    )
    min_recall: float | None = Field(
        None, ge=0, le=1, description="CI gate: every skill's recall at least this"
    )
    max_false_fire: float | None = Field(
        None, ge=0, le=1, description="CI gate: every skill's false-fire rate at most this"
    )
    fleet_sessions: int | None = Field(None, ge=1, description=FLEET_SESSIONS_HELP)
    fleet_rpm: int | None = Field(None, ge=1, description=FLEET_RPM_HELP)
    fleet_pool: str | None = Field(None, description=FLEET_POOL_HELP)
    junit: str | None = Field(None, description="write JUnit XML (one test per query and variant)")
    plugin_mcp: bool = Field(
        False,
        description="start the MCP servers of a plugin under test (without it they are left out of the "
        "copy loaded, and the report says so)",
    )
    environment: str | None = Field(
        None,
        description="a HOME whose Claude Code setup every session runs in: its skills, enabled plugins, "
        "CLAUDE.md and listing settings, snapshotted and hashed (never credentials or history); with "
        "--skill, each query runs with and without the skill in it",
    )
    environment_project: str | None = Field(
        None,
        description="a project folder whose .claude/skills, CLAUDE.md, AGENTS.md and listing settings "
        "join the environment",
    )
    from_home: bool = Field(
        False, description="the environment is yours: --environment ~ --environment-project ."
    )
    context_fill: float | None = Field(
        None,
        gt=0,
        le=0.9,  # the system prompt, the tools and the listing need the rest
        description="also run every variant with this share of the context window taken by a neutral "
        "prior turn (a long log file), paired by query with the empty window (Claude Code)",
    )
    context_window: int = Field(
        200_000, ge=1000, description="the model's context window in tokens, for --context-fill"
    )


def load_trigger_config(path: Path, suite: str | None = None) -> TriggerOptions:
    """A trigger suite's options file (a scheduled suite in deployments.yaml): the flags' names."""
    given = options_file(path, TriggerOptions, frozenset({"skill"}))
    return TriggerOptions(**given | ({"suite": suite} if suite else {}))


@dataclass(frozen=True)
class TriggerVariant:
    """What one arm installs: the skills, each under the name the CLI lists it by, and the agent
    that runs it (several --runner: each skill variant on each agent)."""

    label: str
    skills: tuple[Skill, ...]
    runner: str = "claude"
    model: str = ""
    base_url: str | None = None
    environment: Environment | None = None  # the user's setup every session of the variant runs in
    hidden: tuple[str, ...] = ()  # installed skills of the environment this variant leaves out
    fill: float = 0.0  # share of the context window pre-filled (--context-fill)
    filled_from: str | None = None  # the label of the same variant with an empty window

    @property
    def sha256(self) -> str:
        """The variant's skills; with an environment, the environment's too (its hash)."""
        digest = hashlib.sha256()
        for s in self.skills:
            digest.update(s.name.encode() + b"\0" + s.sha256.encode())
        if self.environment is not None:
            digest.update(b"environment\0" + self.environment.sha256.encode())
            digest.update("\0".join(self.hidden).encode())
        return digest.hexdigest()

    @property
    def own(self) -> tuple[str, ...]:
        """The names its own skills are listed by: the skills under test it installs."""
        return tuple(n for s in self.skills for n in candidate_names(s))

    @property
    def candidates(self) -> tuple[str, ...]:
        """Every skill the variant's sessions can fire: its own and the environment's."""
        installed = [s for s in self.environment.skills if s not in self.hidden] if self.environment else []
        return tuple(dict.fromkeys((*self.own, *installed)))


@dataclass(frozen=True)
class TriggerSession:
    """One planned session: a query under a variant, the n-th time."""

    query: Query
    variant: TriggerVariant
    run: int
    part: str | None
    key: str

    @property
    def label(self) -> str:
        return f"{self.query.id} · {self.variant.label} · run {self.run}"


@dataclass(frozen=True)
class TriggerPlan:
    options: TriggerOptions
    queries: QuerySet
    variants: tuple[TriggerVariant, ...]
    candidates: tuple[str, ...]
    split: Split | None
    sessions: tuple[TriggerSession, ...]
    isolation: Isolation
    cli_versions: dict[str, str | None] = field(
        default_factory=dict
    )  # each agent CLI's --version before the run
    notices: tuple[str, ...] = ()  # what the user is told before the run (graders/leakage.py)


def candidate_names(skill: Skill) -> tuple[str, ...]:
    """The names the CLI lists an artifact's skills by: a skill's folder name; a plugin's skills
    namespaced ``<plugin>:<skill>`` (the queries file expects those)."""
    plugin = skill.plugin
    return plugin.namespaced(plugin.skills) if plugin is not None else (skill.name,)


def artifact_problems(skill: Skill) -> list[str]:
    """Why an artifact's skills would not be listed under the names the run looks for."""
    plugin = skill.plugin
    if plugin is None:
        return [p] if (p := install_problem(skill.name, skill.path)) else []
    if not plugin.skills:
        return [f"{skill.path}: the plugin has no skills (skills/<name>/SKILL.md): nothing can trigger"]
    return [p for name, folder in plugin.skill_dirs().items() if (p := install_problem(name, folder))]


def variants_of(options: TriggerOptions, cwd: Path) -> tuple[tuple[TriggerVariant, ...], tuple[str, ...]]:
    """(variants, candidate names). Several --skill folders of one skill are an A/B (labelled by
    their parent folder); of different skills, they are installed together."""
    if options.skills_dir:
        root = cwd / options.skills_dir
        found = tuple(Skill(p.parent.name, p.parent.resolve()) for p in sorted(root.glob("*/SKILL.md")))
        if not found:
            raise InputError(f"--skills-dir: {root}: no <name>/SKILL.md folders")
        for s in found:
            if not s.path.is_relative_to(root.resolve()):
                raise InputError(f"--skills-dir: {root / s.name}: a link that leaves the folder: refused")
        return (TriggerVariant(DEFAULT_VARIANT, found),), tuple(s.name for s in found)
    if not options.skill:
        if options.environment or options.from_home:
            return (), ()  # the environment alone: how its own skills route
        raise InputError("--skill: name the skill (or --skills-dir for routing, or --environment)")
    skills = [find_skill(name, cwd) for name in options.skill]
    names = list(dict.fromkeys(s.name for s in skills))
    if sum(1 for s in skills if s.plugin is not None) > 1 and len(names) > 1:
        raise InputError("--skill: one plugin per run (or folders of the same plugin for an A/B)")
    if len(skills) > 1 and len(names) == 1:
        labels = [s.path.parent.name for s in skills]
        if len(set(labels)) < len(labels):
            labels = [chr(ord("A") + i) if len(skills) <= 26 else f"v{i + 1}" for i in range(len(skills))]
        candidates = tuple(dict.fromkeys(n for s in skills for n in candidate_names(s)))
        variants = tuple(TriggerVariant(label, (s,)) for label, s in zip(labels, skills, strict=True))
        return variants, candidates
    if len(names) < len(skills):
        raise InputError("--skill: the same skill twice among different skills; give an A/B or a routing set")
    candidates = tuple(dict.fromkeys(n for s in skills for n in candidate_names(s)))
    return (TriggerVariant(DEFAULT_VARIANT, tuple(skills)),), candidates


def environment_of(options: TriggerOptions, cwd: Path) -> Environment | None:
    """The snapshot of --environment / --environment-project / --from-home, None without them."""
    if options.from_home and (options.environment or options.environment_project):
        raise InputError("--from-home: takes your HOME and this folder; give it or --environment, not both")
    if options.from_home:
        home: Path | None = Path.home().resolve()
        project: Path | None = cwd.resolve()
    else:
        home = (cwd / Path(options.environment).expanduser()).resolve() if options.environment else None
        project = (
            (cwd / Path(options.environment_project).expanduser()).resolve()
            if options.environment_project
            else None
        )
    if project is not None and project == home:
        project = None  # run from the HOME itself: its .claude is the user level, once
    if home is None and project is None:
        return None
    source = ("--from-home: " if options.from_home else "") + ", ".join(str(p) for p in (home, project) if p)
    # --dry-run writes nothing where results go: its snapshot is made in a temporary folder
    store = Path(tempfile.mkdtemp(prefix="skillab-env-")) if options.dry_run else cwd / options.results_dir
    if options.dry_run:
        atexit.register(shutil.rmtree, store, True)
    return snapshot(home, project, store / ".environments", source)


def with_environment(artifacts: tuple[TriggerVariant, ...], env: Environment) -> tuple[TriggerVariant, ...]:
    """The environment alone (the control), then each artifact variant installed into it. A skill
    under test already installed there unchanged (``--from-home`` with your own skill) is left out
    of the control: the question is then what adding it does; installed in another version, the
    control keeps that version (the new one replaces it)."""
    unchanged = tuple(
        s.name
        for v in artifacts
        for s in v.skills
        if s.plugin is None
        and (d := env.skill_dir(s.name)) is not None
        and Skill(s.name, d).sha256 == s.sha256
    )
    control = TriggerVariant(ENVIRONMENT_VARIANT, (), environment=env, hidden=tuple(dict.fromkeys(unchanged)))
    tested = tuple(
        replace(
            v,
            label=f"+{'+'.join(s.name for s in v.skills)}" if v.label == DEFAULT_VARIANT else v.label,
            environment=env,
        )
        for v in artifacts
    )
    return (control, *tested)


def with_fill(variants: tuple[TriggerVariant, ...], fill: float | None) -> tuple[TriggerVariant, ...]:
    """Each variant, then (--context-fill) each again with the window pre-filled."""
    if not fill:
        return variants
    filled = tuple(
        replace(v, label=f"{v.label}@fill{fill:.0%}", fill=fill, filled_from=v.label) for v in variants
    )
    return variants + filled


def claude_only(options: TriggerOptions, runners: list[str]) -> None:
    """An environment and a filled window are Claude Code's layout and session format."""
    wanted = [
        flag
        for flag, on in (
            ("--environment", options.environment or options.environment_project or options.from_home),
            ("--context-fill", options.context_fill),
        )
        if on
    ]
    others = [r for r in runners if r != "claude"]
    if wanted and others:
        raise InputError(
            f"{wanted[0]}: Claude Code's skills, plugins and sessions (--runner claude); not {', '.join(others)}"
        )


def session_key(options: TriggerOptions, query: Query, variant: TriggerVariant, run: int) -> str:
    """Everything that determines a session's outcome, and the run index (repeats are real)."""
    return cache_key(
        "trigger",
        {
            "runner": variant.runner,
            "cli": agent_cli(variant.runner).cache_version(),  # a new CLI is a new session
            "model": variant.model,
            "endpoint": variant.base_url,
            "query": query.query,
            "skills": variant.sha256,
            "max_turns": options.max_turns,
            "timeout": options.timeout,
            "run": run,
            # Only when set, so the keys of sessions cached before these options stay valid.
            **({"plugin_mcp": True} if options.plugin_mcp else {}),
            **({"fill": variant.fill, "window": options.context_window} if variant.fill else {}),
        },
    )


def prepare_triggers(options: TriggerOptions, cwd: Path) -> TriggerPlan:
    """Everything checked before any session starts."""
    if not options.queries:
        raise InputError("--queries: name the queries file (`skill triggers generate` drafts one)")
    queries = load_queries(cwd / options.queries)
    runners = agent_list(options.runner)
    claude_only(options, runners)
    urls = endpoints(options.base_url, runners)
    models = agent_models(options.runner_model, runners)
    artifacts, tested = variants_of(options, cwd)
    candidates = tested
    writable_folder(cwd / options.results_dir, "--results-dir")  # before the snapshot is written there
    env = environment_of(options, cwd)
    if env is not None:
        artifacts = with_environment(artifacts, env)
        candidates = tuple(dict.fromkeys((*tested, *env.skills)))
    variants = tuple(
        replace(
            v,
            label=agent_label(v.label, runner, len(artifacts), len(runners)),
            runner=runner,
            model=models[runner],
            base_url=urls[runner],
        )
        for runner in runners
        for v in artifacts
    )
    variants = with_fill(variants, options.context_fill)
    queries = resolve_under_test(queries, tested, str(cwd / options.queries))
    problems = [p for v in variants for s in v.skills for p in artifact_problems(s)]
    if problems:
        raise InputError(problems)
    skills = {s.path: s for v in artifacts for s in v.skills}.values()
    versions = {r: next((v for s in skills if (v := check_artifact(s, r))), None) for r in runners}
    check_expectations(queries.queries, candidates, str(cwd / options.queries))
    chosen = split(queries.queries, options.holdout, options.seed) if options.holdout else None
    sessions = tuple(
        TriggerSession(q, v, run, chosen.part(q.id) if chosen else None, session_key(options, q, v, run))
        for run in range(1, options.runs + 1)
        for q in queries.queries
        for v in variants
    )
    isolation = checked_isolation(options.os_sandbox)
    fleet_sandbox(options.fleet_pool, options.os_sandbox, options.allow_network)
    leaks: list[str] = case_leaks(
        [(f"query {q.id}", q.query) for q in queries.queries],
        [(f"{s.name}'s description", s.description) for s in skills],
        DESCRIPTION_WORDS,
    )
    if chosen is not None:
        leaks += holdout_reuse(cwd / options.results_dir, options, queries.path, chosen, variants)
    return TriggerPlan(
        options, queries, variants, candidates, chosen, sessions, isolation, versions, tuple(leaks)
    )


#: Earlier reports read for the holdout check, newest first (a results folder can hold thousands).
EARLIER_REPORTS = 200


def holdout_reuse(
    results: Path,
    options: TriggerOptions,
    queries_file: str,
    chosen: Split,
    variants: tuple[TriggerVariant, ...],
) -> list[str]:
    """Holdout queries an earlier run of the same suite (``--suite``, else the same queries file)
    already held out while another description was under test: their results were seen while the
    description was being changed, so they no longer measure generalisation."""
    held = {q.id for q in chosen.holdout}
    current = {v.sha256 for v in variants}
    files = sorted(results.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)[:EARLIER_REPORTS]
    for path in files:
        try:
            data = load_json(read_text(path))
        except (InputError, ValueError, OSError):
            continue  # not a report of ours: nothing to compare
        figures = data.get("triggers") if isinstance(data, dict) else None
        meta = data.get("meta") if isinstance(data, dict) else None
        if not isinstance(figures, dict) or not isinstance(meta, dict):
            continue
        same = (
            meta.get("suite") == options.suite
            if options.suite
            else figures.get("queriesFile") == queries_file
        )
        split = figures.get("split") or {}
        seen = held & set(split.get("holdout") or []) if isinstance(split, dict) else set()
        hashes = meta.get("skillHashes")
        earlier = set(hashes.values()) if isinstance(hashes, dict) else set()
        if same and seen and not earlier <= current:
            shown = ", ".join(sorted(seen)[:8]) + (" ..." if len(seen) > 8 else "")
            return [
                f"leakage: holdout reuse: {len(seen)} of {len(held)} holdout queries ({shown}) were held out in "
                f"run {data.get('id')} of another description: the holdout has been seen while iterating; "
                "draw a fresh one (another --seed) or add queries"
            ]
    return []


def agent_label(label: str, runner: str, artifacts: int, runners: int) -> str:
    """A variant's label: the artifact's alone on one agent; the agent's alone for one artifact on
    several; both otherwise."""
    if runners == 1:
        return label
    return runner if artifacts == 1 else f"{label}@{runner}"


class TriggerOutcome(Model):
    """One trigger-mode session as the result cache stores it and the report keeps it."""

    status: TriggerStatus
    """ok (the session counts), or why it does not"""
    triggers: SessionTriggers
    """what fired, and the listing the session saw"""
    fired: list[str]
    """the skills that fired, in order"""
    first_turns: dict[str, int]
    """skill -> the turn it first fired in"""
    session_status: str
    """how the agent session ended"""
    ok: bool
    """the session succeeded"""
    error: str | None
    """why it did not"""
    output: str
    """the agent's final text"""
    duration_ms: float
    """wall time of the session"""
    cost_usd: float
    """what the CLI reported the session cost"""
    listed: list[str] | None
    """the skills the CLI listed to the model, where it says"""
    cli_version: str | None
    """the agent CLI's version as the session reported it"""
    model: str | None = None
    """the model id the session reported (a night served from the cache still says what ran)"""
    tools: list[str] = Field(default_factory=list)
    """the tools the CLI offered the session"""
    transcript: list[TranscriptStep]
    """the session's steps, each shortened"""
    cached: bool = False
    """taken from the result cache, not run"""
    cache_error: str | None = None
    """why the session could not be cached (it is in the report all the same)"""

    def cache_value(self) -> dict[str, Any]:
        """What the cache stores: the session, not how this run came by it."""
        return self.model_dump(mode="json", exclude={"cached", "cache_error"})
