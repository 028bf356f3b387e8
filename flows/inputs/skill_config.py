"""Agentic mode's inputs: the seed's config.yml, skill discovery, and the fixed task suite."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from executors.agent import agent_cli, agent_cli_classes, find_binary
from executors.contents import inspect_tree
from executors.conversation import world_problem
from executors.errors import InputError
from executors.parsing import JsonObject, load_json
from executors.plugin import MANIFEST, Plugin, looks_like_plugin, read_plugin, runner_problem
from executors.registry import AGENT_CLIS, EXECUTORS
from executors.schema import one_line
from executors.skill_md import read_skill_md
from executors.versions import installed_version
from flows.inputs.files import (
    check_endpoint,
    closest,
    dotted,
    parse_data,
    read_text,
    validation_lines,
)
from flows.inputs.options import FLEET_POOL_HELP, FLEET_RPM_HELP, FLEET_SESSIONS_HELP, RunOptions
from flows.inputs.recordings import MocksMode, with_recordings
from flows.inputs.suites.skill_creator import evals_file, load_evals
from graders.agent_task import AgentTask, parse_task
from graders.leakage import ARTIFACT_WORDS, case_leaks

CONFIG_NAME = "config.yml"
RUNNER_MODEL_HELP = (
    "model of the agent; with several runners one for all or runner=MODEL pairs (default: the "
    "runner's own: {})".format(
        ", ".join(f"{cls.default_model} for {cls.name}" for cls in agent_cli_classes())
    )
)
BASE_URL_HELP = (
    "the runner's API endpoint (e.g. a local model server); with several runners one for all or "
    "runner=URL pairs (default: each provider's)"
)


def agent_list(runner: str) -> list[str]:
    """The agent CLIs --runner names: one, or several comma-separated (a cross-agent run), each known."""
    runners = [r.strip() for r in runner.split(",") if r.strip()]
    if not runners:
        raise InputError("--runner: name an agent CLI")
    twice = [r for r in dict.fromkeys(runners) if runners.count(r) > 1]
    if twice:
        raise InputError(f"--runner: {twice[0]} is named twice")
    for name in runners:
        agent_cli(name)
    return runners


PAIR = re.compile(r"^\s*([\w.-]+)\s*=(.*)$")


def per_agent(value: str | None, runners: list[str], flag: str) -> dict[str, str | None]:
    """A flag's value for each agent: one value for all, or ``runner=value`` pairs, comma-separated
    (agents speak different protocols and name models differently); an agent a pair list does not
    name gets None, its own default."""
    items = (value or "").split(",")
    if value is None or not any(PAIR.match(i) for i in items):
        return dict.fromkeys(runners, value)
    out: dict[str, str | None] = dict.fromkeys(runners)
    for item in items:
        match = PAIR.match(item)
        name, given = (match[1], match[2].strip()) if match else ("", "")
        if name not in runners or not given:
            raise InputError(f"{flag}: {item.strip()!r} is not runner=value for one of {', '.join(runners)}")
        if out[name] is not None:
            raise InputError(f"{flag}: {name} is given twice")
        out[name] = given
    return out


def endpoints(value: str | None, runners: list[str]) -> dict[str, str | None]:
    """Each agent's --base-url (None: its provider's own), each an http(s) URL."""
    urls = per_agent(value, runners, "--base-url")
    for url in urls.values():
        if url is not None:
            check_endpoint(url, "--base-url")
    return urls


def agent_models(value: str, runners: list[str]) -> dict[str, str]:
    """Each agent's --runner-model: as given (for all, or per agent), else the runner's own default."""
    if value and not value.strip():
        raise InputError(f"--runner-model: {value!r} is not a model name")
    given = per_agent(value or None, runners, "--runner-model")
    return {r: given[r] or agent_cli(r).default_model for r in runners}


def runner_default_model(data: Any) -> Any:
    """Options as given, ``runner_model`` filled with the runner's own default when unset (a model
    name of one provider means nothing to another's CLI). An unknown runner is refused later, by
    its flag."""
    if isinstance(data, dict) and not data.get("runner_model"):
        cls = EXECUTORS.get(str(data.get("runner") or "claude"))
        return data | {"runner_model": cls.default_model if cls is not None else ""}
    return data


class SkillBenchConfig(RunOptions):
    """The seed's config.yml keys and defaults, plus what a program needs that a chat session did not."""

    runner_model: str = Field("", description=RUNNER_MODEL_HELP)
    judge_model: str = Field("opus", description="model of the four-criterion judge")
    task_count: int = Field(
        5, ge=1, description="positive tasks generate-tasks writes (= sum of difficulties)"
    )
    negative_controls: int = Field(1, ge=0, description="out-of-domain tasks generate-tasks adds")
    difficulties: dict[str, int] = Field(
        default_factory=lambda: {"easy": 2, "medium": 2, "hard": 1},
        description="positive tasks per difficulty (config.yml only)",
    )
    runs: int = Field(1, ge=1, description="sessions per task and arm")
    max_turns: int = Field(10, ge=1, description="turn limit of each session")
    results_dir: str = Field("./skill-bench/results", description="where each run's results tree goes")
    skill: str | None = Field(
        None,
        description="skill name (.claude/skills/<name>, ~/.claude/skills/<name>) or a path; a folder with "
        ".claude-plugin/plugin.json is a whole plugin",
    )
    # Beyond the seed:
    tasks: str | None = Field(None, description="the task-set folder (a fixed, reviewed suite)")
    runner: str = Field(
        "claude",
        description=f"agent CLI: {' | '.join(AGENT_CLIS)}; several, comma-separated, run the suite on each "
        "and add the cross-agent matrix",
    )
    base_url: str | None = Field(None, description=BASE_URL_HELP)
    judge_executor: str = Field("anthropic", description="executor of the judge model")
    timeout: float = Field(600.0, gt=0, description="seconds per session; the process group is killed after")
    concurrency: int = Field(2, ge=1, description="sessions at once")
    seed: int = Field(0, description="seed for shuffling, the bootstrap and task generation")
    max_error_rate: float = Field(0.1, ge=0, le=1, description="failed share of an arm that blocks a claim")
    diagnose: bool = Field(
        True,
        description="ask the judge for suggestions on grouped failures; --no-diagnose: group failures without asking",
    )
    threshold: float | None = Field(
        None, ge=0, le=100, description="CI gate: minimum average with-skill score (0-100); exit 1 below it"
    )
    require_portable: tuple[str, ...] = Field(
        (),
        description="CI gate: exit 1 unless the skill is portable to each of these agents (comma-separated "
        "--runner names): run on it, and nothing in the lint or the run breaks it",
    )
    junit: str | None = Field(None, description="write a JUnit XML file (with the portability certificate)")
    github_summary: str | None = Field(None, description="write a GitHub job summary (markdown)")
    require: Literal["none", "better", "not-worse"] = Field(
        "none", description="CI gate: the with-skill verdict required (exit 1 otherwise)"
    )
    fleet_sessions: int | None = Field(None, ge=1, description=FLEET_SESSIONS_HELP)
    fleet_rpm: int | None = Field(None, ge=1, description=FLEET_RPM_HELP)
    fleet_pool: str | None = Field(None, description=FLEET_POOL_HELP)
    reuse_baseline: bool = Field(
        True,
        description="take a baseline session from an earlier run when nothing that decides it changed (the "
        "agent CLI and its version, model, endpoint, task, run index, sandbox settings): iterating on the skill "
        "re-runs only the with-skill arm; --no-reuse-baseline: run every baseline session again",
    )
    ablate: bool = Field(
        False,
        description="also run the with-skill arm once per section of SKILL.md with that section left out, "
        "paired against the full skill (one arm per section)",
    )
    ablate_sections: tuple[str, ...] = Field(
        (), description="with --ablate: only these sections (headings, any level)"
    )
    mocks: MocksMode = Field(
        "replay",
        description="replay: every MCP server a task records from (## MCP record:) is served from its "
        "recording; record: the sessions meet the real servers, whose answers become the recordings "
        "(opt-in, not hermetic: review them, and the run is not a measurement)",
    )

    @property
    def reuses_baseline(self) -> bool:
        """Whether a baseline session may come from an earlier run (never in a recording run: its
        sessions meet real servers)."""
        return self.reuse_baseline and self.mocks == "replay"

    plugin_mcp: bool = Field(
        False,
        description="start the MCP servers of a plugin under test (without it they are left out of the "
        "copy loaded, and the report says so)",
    )
    suite: str | None = Field(
        None, description="a Claude Code plugin folder whose evals/ suite (claude plugin eval) runs in place"
    )
    case: tuple[str, ...] = Field(
        (),
        description="only the cases (tasks) whose name or id matches this glob (repeatable)",
        json_schema_extra={"append": True},
    )
    tag: tuple[str, ...] = Field(
        (), description="only the cases carrying this tag (repeatable)", json_schema_extra={"append": True}
    )
    dry_run: bool = Field(
        False,
        description="print the plan (sessions, model per case, tokens, an upper-bound cost), run nothing",
    )
    max_calls: int | None = Field(None, ge=1, description="start at most this many agent sessions")
    budget_usd: float | None = Field(
        None, gt=0, description="start no agent session once the sessions so far cost this much (USD)"
    )
    skip_unsupported: bool = Field(
        False,
        description="run a suite's cases without the fields skillab cannot honour (each named in the "
        "report) instead of refusing them",
    )
    json_file: str | None = Field(
        None,
        description="also write the result in the shape `claude plugin eval --json` writes (plugin suites)",
        json_schema_extra={"flag": "--json"},
    )
    case_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="CI gate in `claude plugin eval`'s sense: exit 1 if any case's with-skill score (0..1) is "
        "below it",
    )

    _runner_model = model_validator(mode="before")(runner_default_model)

    @model_validator(mode="after")
    def _task_count_matches(self) -> SkillBenchConfig:
        positives = sum(self.difficulties.values())
        if positives != self.task_count:
            raise ValueError(
                f"task_count is {self.task_count} but difficulties add up to {positives} positive tasks"
            )
        return self


def config_candidates(explicit: str | None, cwd: Path) -> list[Path]:
    """The seed's order: the skill directory's config.yml, then ~/.claude's, then the given path."""
    found = [
        cwd / ".claude" / "skills" / "skill-benchmark" / CONFIG_NAME,
        Path.home() / ".claude" / "skills" / "skill-benchmark" / CONFIG_NAME,
    ]
    return [Path(explicit)] if explicit else found


def load_config(explicit: str | None, cwd: Path, overrides: JsonObject) -> SkillBenchConfig:
    data: JsonObject = {}
    source = "config"
    for path in config_candidates(explicit, cwd):
        if path.is_file():
            loaded = parse_data(path, read_text(path)) or {}
            if not isinstance(loaded, dict):
                raise InputError(f"{path}: expected a mapping of key: value")
            unknown = [k for k in loaded if k not in SkillBenchConfig.model_fields]
            if unknown:
                raise InputError(
                    [
                        f"{path}: {k}: unknown key{closest(k, list(SkillBenchConfig.model_fields))}"
                        for k in unknown
                    ]
                )
            data, source = loaded, str(path)
            break
        if explicit:
            raise InputError(f"{path}: file not found (--config)")
    try:
        return SkillBenchConfig(**(data | overrides))
    except ValidationError as exc:

        def where(loc: tuple[int | str, ...]) -> str:
            key = str(loc[0]) if loc else ""
            return (
                f"--{key.replace('_', '-')}" if key in overrides else f"{source}: {dotted(loc) or 'config'}"
            )

        raise InputError(validation_lines(exc, where, list(SkillBenchConfig.model_fields))) from None


@dataclass(frozen=True)
class Skill:
    """The artifact under test: a skill (a folder holding SKILL.md) or a whole plugin (a folder with
    ``.claude-plugin/plugin.json``; ``name`` is then the manifest's name)."""

    name: str
    path: Path  # the folder holding SKILL.md, or the plugin's root

    def __post_init__(self) -> None:
        try:  # the name is the folder the CLI lists, shown in every report and on the terminal
            one_line(self.name)
        except ValueError as exc:
            raise InputError(f"skill {self.name!r}: {self.path}: the name {exc}: refused") from None

    @property
    def plugin(self) -> Plugin | None:
        """The plugin when the artifact is one (its manifest read afresh: the folder is the truth)."""
        return read_plugin(self.path) if (self.path / MANIFEST).is_file() else None

    @property
    def description(self) -> str:
        """The front matter's description: all the model sees of a skill before invoking it (of a
        plugin: its manifest's description)."""
        if (self.path / MANIFEST).is_file():
            try:
                manifest = load_json((self.path / MANIFEST).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                return ""
            return str(manifest.get("description") or "") if isinstance(manifest, dict) else ""
        try:
            text = (self.path / "SKILL.md").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""
        return read_skill_md(text).description()

    @property
    def artifact_text(self) -> str:
        """What the artifact says, for prompts about it (diagnosis, task drafting): SKILL.md, or a
        plugin's manifest and the text of its skills, commands and agents, each under its path."""
        if not (self.path / MANIFEST).is_file():
            return read_text(self.path / "SKILL.md")
        parts = sorted(
            p
            for folder in ("skills", "commands", "agents")
            for p in (self.path / folder).rglob("*.md")
            if (self.path / folder).is_dir()
        )
        files = [self.path / MANIFEST, *parts]
        return "\n\n".join(
            f"=== {f.relative_to(self.path)}\n{f.read_text(encoding='utf-8', errors='replace')}"
            for f in files
        )

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for f in sorted(p for p in self.path.rglob("*") if p.is_file()):
            digest.update(str(f.relative_to(self.path)).encode() + b"\0" + f.read_bytes())
        return digest.hexdigest()


def find_skill(name: str | None, cwd: Path) -> Skill:
    """.claude/skills/<name>/SKILL.md, ~/.claude/skills/<name>/SKILL.md, or a direct path."""
    roots = [cwd / ".claude" / "skills", Path.home() / ".claude" / "skills"]
    if not name:
        raise InputError("--skill: name the skill to benchmark" + _listing(roots))
    direct = cwd / Path(name).expanduser()  # relative to the run's folder (a scheduled suite's)
    if looks_like_plugin(direct):  # a whole plugin; a malformed one is one line naming the field
        return Skill(read_plugin(direct.resolve()).name, direct.resolve())
    if direct.name == "SKILL.md" and direct.is_file():
        return Skill(direct.parent.name, direct.parent.resolve())
    if (direct / "SKILL.md").is_file():
        return Skill(direct.resolve().name, direct.resolve())
    for root in roots:
        if (root / name / "SKILL.md").is_file():
            return Skill(name, (root / name).resolve())
    raise InputError(f"--skill: no skill {name!r}" + _listing(roots))


def check_artifact(skill: Skill, runner: str) -> str | None:
    """Before any session: whether ``runner`` can load the artifact, and the installed CLI's version
    (None when it cannot be told). A plugin needs a CLI that loads plugins (Claude Code, recent
    enough) or consists of skills alone."""
    # Links out of the folder, special files, a huge tree: refused before any session copies it.
    inspect_tree(skill.path, "plugin" if skill.plugin is not None else f"skill {skill.name}")
    cli = agent_cli(runner)
    binary = find_binary(cli.binary)
    version = installed_version(binary) if binary else None
    plugin = skill.plugin
    if plugin is not None:
        problem = runner_problem(plugin, runner, cli.loads_plugins) or cli.feature_problem(
            "plugin-dir", version
        )
        if problem:
            raise InputError(problem)
    return version


def _listing(roots: list[Path]) -> str:
    found = sorted({p.parent.name for r in roots if r.is_dir() for p in r.glob("*/SKILL.md")})
    return (
        f" (skills found: {', '.join(found)})"
        if found
        else " (no skills found in .claude/skills or ~/.claude/skills)"
    )


def _names(task: AgentTask) -> tuple[str, ...]:
    """What --case matches: the id, the name, and the author's title (a skill-creator eval_name)."""
    return (task.task_id, task.name, task.name.split(": ", 1)[-1])


def select_tasks(tasks: list[AgentTask], config: SkillBenchConfig) -> list[AgentTask]:
    """The cases ``--case`` (globs on the id or name) and ``--tag`` keep; InputError when none is
    left (the run would measure nothing)."""
    chosen = [
        t
        for t in tasks
        if (not config.case or any(fnmatch.fnmatchcase(n, g) for g in config.case for n in _names(t)))
        and (not config.tag or set(config.tag) & set(t.tags))
    ]
    if not chosen:
        asked = " ".join([*(f"--case {g}" for g in config.case), *(f"--tag {t}" for t in config.tag)])
        names = ", ".join(" / ".join(dict.fromkeys(_names(t))) for t in tasks[:8]) + (
            "…" if len(tasks) > 8 else ""
        )
        raise InputError(f"{asked}: no case matches (cases: {names})")
    return chosen


def suite_warnings(
    tasks: list[AgentTask], config: SkillBenchConfig, skill_name: str, plugin: bool
) -> list[str]:
    """What the report must say about the suite (a grader that will fail whatever the session does,
    evals written for another skill, fields run without). A case using a field skillab cannot honour
    is refused (InputError, one line each) unless --skip-unsupported runs it without the field."""
    refused: list[str] = []
    warnings: list[str] = []
    written_for = sorted({t.category for t in tasks if "skill-creator" in t.tags})
    if written_for and not plugin and skill_name not in written_for:
        warnings.append(
            f"{config.tasks}: skill_name: these evals were written for {written_for[0]!r}, not for the skill "
            f"under test {skill_name!r}"
        )
    cases = [t.plugin_case for t in tasks if t.plugin_case is not None]
    if any(c.scaffold_script for c in cases):
        warnings.append(
            "note: skillab runs each case's scaffold_script inside its OS sandbox (claude plugin eval runs "
            "one only with --scaffold, outside any sandbox)"
        )
    if any(c.allowed_tools for c in cases):
        warnings.append(
            "note: skillab grants each case's allowed_tools inside its OS sandbox (claude plugin eval "
            "grants the gated ones only with --allow-tools)"
        )
    if config.mocks == "record":
        recorded = sorted({f"{t.task_id}/{n}" for t in tasks for n, s in (t.mcp or {}).items() if s.record})
        warnings.append(
            f"--mocks record: the sessions met the real MCP servers {', '.join(recorded) or '(none)'}: this run "
            "recorded them and is not hermetic; review the recordings, and measure with a replaying run"
        )
    refused += conversation_refusals(tasks, config.runner, config.tasks)
    for t in tasks:  # a model playing a user: its executor must exist before anything runs
        if t.user is not None and t.user.model is not None and t.user.executor not in EXECUTORS:
            refused.append(f"{t.task_id}: user.executor: {t.user.executor!r}: one of {', '.join(EXECUTORS)}")
    for t in tasks:
        case = t.plugin_case
        if case is None:
            continue
        warnings += [f"{t.task_id}: {w}" for w in case.warnings]
        if not case.unsupported:
            continue
        fields = ", ".join(case.unsupported)
        if config.skip_unsupported:
            warnings.append(
                f"{t.task_id}: {fields}: not supported by skillab; the case runs without it (--skip-unsupported) "
                "and may score differently than under claude plugin eval"
            )
        else:
            refused.append(
                f"{t.case_dir}: {fields}: not supported by skillab, so the case cannot run as its author "
                "meant; --skip-unsupported runs it without (the report then says so)"
            )
    if refused:
        raise InputError(refused)
    return warnings


def conversation_refusals(tasks: list[AgentTask], runner: str, folder: str | None) -> list[str]:
    """Cases with a simulated user, a permission policy or MCP stand-ins, refused (one line each)
    for an agent CLI that cannot run them (executors.conversation.world_problem)."""
    runners = [agent_cli(r) for r in dict.fromkeys(x.strip() for x in runner.split(",")) if r]
    return [
        f"{f'{Path(folder) / t.task_id}.md' if folder else t.task_id}: {problem.split(':', 1)[0]}: "
        f"--runner {cli.name}:{problem.split(':', 1)[1]}"
        for cli in runners
        for t in tasks
        if (problem := world_problem(t, cli)) is not None
    ]


def load_tasks(folder: Path, mocks: MocksMode = "replay") -> tuple[list[AgentTask], str]:
    """Every task-*.md of a suite, and the suite's hash (recorded, so runs stay comparable). A
    skill-creator evals.json (or a skill folder holding evals/evals.json) is read as its evals, a
    Claude Code plugin (or its evals/ folder) as its plugin eval suite. A task's recorded MCP servers
    are as ``mocks`` runs them (flows.inputs.recordings)."""
    from flows.inputs.suites.plugin_eval import is_plugin_suite, load_plugin_tasks

    evals = evals_file(folder)
    if evals is not None:
        return load_evals(evals)
    if is_plugin_suite(folder):
        return load_plugin_tasks(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no task-set folder (--tasks); write one or run `skill generate-tasks`")
    if (folder / "SKILL.md").is_file():  # a skill folder, not a task set: its evals are missing
        raise InputError(
            f"{folder}: a skill folder without evals/evals.json (--tasks): name a task-set folder, "
            "an evals.json, or a plugin with evals/"
        )
    files = sorted(folder.glob("*.md"))
    if not files:
        raise InputError(f"{folder}: no task files (*.md)")
    tasks, problems = [], []
    digest = hashlib.sha256()
    for path in files:
        text = read_text(path)
        digest.update(path.name.encode() + b"\0" + text.encode())
        try:
            tasks.append(parse_task(text, path.stem))
        except ValueError as exc:
            problems.append(f"{path}: {exc}")
    if problems:
        raise InputError(problems)
    tasks, recorded = with_recordings(tasks, folder, mocks)
    digest.update(recorded.encode())
    return tasks, digest.hexdigest()


def task_leaks(tasks: list[AgentTask], skill: Skill) -> list[str]:
    """Tasks whose prompt already holds a long run of the skill's text (graders/leakage.py), and
    files put in a session's sandbox whose path names the skill (a cue to the agent)."""
    source = "SKILL.md" if skill.plugin is None else "the plugin's text"
    cases = [(f"task {t.task_id}: prompt", t.prompt) for t in tasks]
    named = [
        f"leakage: task {t.task_id}: the input file {name!r} names the skill {skill.name!r}"
        for t in tasks
        for name in t.input_files
        if skill.name.lower() in name.lower()
    ]
    return case_leaks(cases, [(source, skill.artifact_text)], ARTIFACT_WORDS) + named
