"""Agentic mode: does a skill make an agent do better than the same agent without it?

Every task runs in two arms (with-skill, baseline; --ablate adds one arm per section of SKILL.md,
the skill with that section left out), ``runs`` times, each session in its own sandbox
with a fresh HOME, then: deterministic checks, the four-criterion judge (blind to the arm),
transcript analysis, aggregation with the paired statistics, report.md and a report JSON.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed, Failed

from executors.agent import agent_cli, read_events, usage_of
from executors.base import HttpExecutor
from executors.contents import archive_tree
from executors.conversation import conversation_text
from executors.plugin import Plugin
from executors.registry import close_all, usable_executor
from executors.sandbox import Isolation, checked_isolation
from executors.schema import AgentRequest, AgentSession, RunResult
from executors.workspace import claim, release, sweep
from flows.engine.judging import run_judge_jobs
from flows.engine.progress import LogTarget, Progress
from flows.engine.runlog import add_tags, outcome_tag, run_logger, tag_flow_run
from flows.engine.runner import Refused, RunnerConfig, UnitRunner
from flows.inputs.ablation import SkillAblation, plan_skill_ablations, write_ablated_skills
from flows.inputs.plan import JudgeJob, Target
from flows.inputs.recordings import write_recordings
from flows.inputs.skill_config import (
    Skill,
    SkillBenchConfig,
    check_artifact,
    load_tasks,
    select_tasks,
    suite_warnings,
    task_leaks,
)
from flows.inputs.suites.skill_creator import evals_file, stage_inputs
from flows.modes.agentic.markdown import report_markdown
from flows.modes.agentic.model import AgenticReport
from flows.modes.agentic.plan import (
    ARMS,
    Session,
    arm_root,
    check_folders,
    isolation_root,
    plan_sessions,
)
from flows.modes.agentic.plugin_eval import (
    evidence,
    grade_plugin_run,
    judge_plugin_runs,
    plugin_request,
    prepare_sandbox,
)
from flows.modes.agentic.plugin_json import plugin_eval_json
from flows.modes.agentic.report import REPORT_ARMS, AgenticRun, Graded, build_skill_report
from flows.modes.agentic.reuse import Reuse
from flows.modes.agentic.sessions import contamination, init_event, write_outputs
from flows.modes.explain import diagnose_skill_run
from flows.report.build import RunOutcome
from flows.report.ci import write_ci_outputs
from flows.report.logtext import figure_lines, outcome_name, state_message, verdict_lines
from flows.report.schema import GraderCheck
from flows.report.validity import certify
from graders.agent_task import AgentTask
from graders.behavior import analyze
from graders.checks import sandbox_files
from graders.criteria import CRITERIA_SCHEMA_JSON, criteria_prompt, grade, parse_criteria, read_files
from graders.expectations import (
    expectations_grade,
    expectations_prompt,
    expectations_schema,
    parse_expectations,
    transcript_text,
)
from graders.expectations import max_tokens as expectation_tokens
from graders.grades import CheckResults, GradeStatus, SessionGrade
from graders.plugin_eval import PluginCase
from graders.plugin_grading import RunEvidence
from graders.schema import Grade
from graders.task_validation import tasks_without_broken, validate_tasks
from graders.validation import broken_notices
from tasks.agent import check_sandbox
from tasks.context import current
from tasks.schema import Arm, CallPolicy, Record, RunStats, UnitKind
from tasks.store.files import atomic_write_json, atomic_write_text


class InsufficientData(Exception):
    """Fewer than 2 tasks completed in both arms: no comparison is possible."""


def session_request(
    config: SkillBenchConfig, skill: Skill, s: Session, dirs: dict[str, Path], isolation: Isolation
) -> AgentRequest:
    """The session of one arm and run: the skill installed and forced in a with-skill arm (a whole
    plugin loaded instead, nothing forced), nothing of it in the baseline."""
    plugin = skill.plugin
    with_skill = s.kind == Arm.WITH_SKILL
    as_skill = with_skill and plugin is None
    return AgentRequest(
        cli=config.runner,
        model=config.runner_model,
        prompt=s.task.prompt,
        sandbox=str(s.sandbox),
        home=str(s.home),
        skill_name=skill.name if as_skill else None,
        skill_dir=str(dirs[s.mode]) if as_skill else None,
        max_turns=config.max_turns,
        timeout_s=config.timeout,
        raw_stream=str(s.outputs / "raw_stream.jsonl"),
        isolation=isolation,
        allow_network=config.allow_network,
        plugin_dir=str(skill.path) if with_skill and plugin is not None else None,
        plugin_mcp=config.plugin_mcp,
        user=s.task.user,  # both arms meet the same user, the same policy and the same MCP stand-ins
        permissions=s.task.permissions,
        mcp=s.task.mcp,
    )


def sessions_config(config: SkillBenchConfig) -> RunnerConfig:
    """What bounds a run's sessions: its concurrency, its budgets, the fleet's limit."""
    return RunnerConfig(
        config.concurrency,
        max_calls=config.max_calls,
        budget_usd=config.budget_usd,
        fleet_sessions=config.fleet_sessions,
        fleet_rpm=config.fleet_rpm,
        fleet_pool=config.fleet_pool,
    )


async def run_sessions(
    config: SkillBenchConfig,
    skill: Skill,
    plans: list[Session],
    isolation: Isolation,
    log: LogTarget | None = None,
    skill_dirs: dict[str, Path] | None = None,
    reuse: Reuse | None = None,
) -> tuple[list[Session], list[tuple[AgentSession, str | None]], RunStats]:
    """Every session (every arm, every run) under the concurrency cap, with its contamination: the
    plans that ran, their outcomes, and what the runner counted (a session --max-calls or
    --budget-usd kept from starting is not run, not a failure). ``skill_dirs``: an ablated arm -> its
    copy of the skill (the with-skill arm has the skill's own). ``reuse``: see agentic/reuse.py."""
    dirs = {str(Arm.WITH_SKILL): skill.path, **(skill_dirs or {})}
    progress = Progress(len(plans), "sessions", log=log)
    runner = UnitRunner(sessions_config(config), progress)
    refused: set[str] = set()  # why the budget kept sessions from starting
    plugin = skill.plugin  # a whole plugin: loaded by the CLI's own mechanism, in the with-arm only
    cli = agent_cli(config.runner)
    if plugin is not None and log is not None:
        log.info(plugin.summary(config.plugin_mcp) + "; loaded in the with-skill arm only, nothing forced")

    async def one(s: Session) -> tuple[AgentSession, str | None] | None:
        request = session_request(config, skill, s, dirs, isolation)
        key, kept = await reuse.take(s, request, config.base_url) if reuse else (None, None)
        if kept is None:
            stage_inputs(s.task, s.sandbox)  # a skill-creator eval's input files, before the agent starts
            unit = (s.task.task_id, s.mode, s.run)
            session = await runner.session(
                unit, s.label, request, config.base_url, lambda r: plugin_setup(s, r, isolation, skill.name)
            )
        else:  # an earlier run's, restored; checked against this skill all the same
            session = kept.session
            runner.saw_session(s.mode, session)  # what it ran on is tonight's fingerprint too
        if isinstance(session, Refused):
            refused.add(session.reason)
            return None
        raw = read_events(s.outputs / "raw_stream.jsonl")
        init = init_event(raw)
        contaminated = contamination(session, s.kind, skill.name, init, skill.description, plugin, cli=cli)
        write_outputs(s, session, skill.name, contaminated, raw)
        bad = None if contaminated is None else ("contaminated", contaminated)
        bad = bad or (None if session.ok else (session.status, session.error or session.status))
        if kept is not None:
            runner.hit(ok=bad is None)
            return session, contaminated
        if reuse is not None:
            await reuse.keep(key, s, session, clean=contaminated is None)
        failure = None if bad is None else (s.label, str(bad[0]), str(bad[1]))
        progress.advance(ok=bad is None, cost=session.cost_usd, failure=failure)
        return session, contaminated

    try:
        outcomes = await asyncio.gather(*(one(s) for s in plans))
    finally:
        progress.close()
    ran = [(s, o) for s, o in zip(plans, outcomes, strict=True) if o is not None]
    if refused and log is not None:
        log.warning(f"not run: {len(runner.not_run)} session(s): {'; '.join(sorted(refused))}")
    return [s for s, _ in ran], [o for _, o in ran], runner.stats()


def check_sessions(
    plans: list[Session], sessions: list[AgentSession], isolation: Isolation
) -> list[CheckResults]:
    """The deterministic checks of each sandbox (and conversation), then the seed's archive copy of it."""
    checks = [
        grade_plugin_run(s.task.plugin_case, evidence(s.sandbox, s.outputs), s.kind == Arm.WITH_SKILL)
        if s.task.plugin_case
        else check_sandbox(s.task, str(s.sandbox), s.label, isolation, session)
        for s, session in zip(plans, sessions, strict=True)
    ]
    for s, c in zip(plans, checks, strict=True):
        atomic_write_json(s.grades / f"{s.mode}-checks.json", c.dump())
        if s.sandbox.exists():
            archive_tree(s.sandbox, s.archive)  # the agent's links out of the sandbox become notes
    return checks


def judge_job(target: Target, s: Session, session: AgentSession, checks: CheckResults) -> JudgeJob:
    """The judgement of one session: each expectation of a skill-creator eval, else the four criteria."""
    task, files = s.task, read_files(s.archive, sandbox_files(s.archive))
    if task.expectations:
        prompt = expectations_prompt(
            task.prompt,
            task.expected_outcome,
            task.expectations,
            session.final_text,
            transcript_text(session.events),
            files,
            task.input_files,
        )
        schema = json.dumps(expectations_schema(len(task.expectations)))
        return JudgeJob(
            target,
            prompt,
            task.task_id,
            "session",
            s.run,
            schema_json=schema,
            max_tokens=expectation_tokens(task.expectations),
        )
    prompt = criteria_prompt(
        task.prompt,
        task.expected_outcome,
        task.rubric,
        session.final_text,
        checks,
        files,
        session.meta.usage or {},
        conversation_text(session.conversation, task.user),
    )
    return JudgeJob(target, prompt, task.task_id, "session", s.run, schema_json=CRITERIA_SCHEMA_JSON)


async def judge_sessions(
    config: SkillBenchConfig,
    plans: list[Session],
    outcomes: list[tuple[AgentSession, str | None]],
    checks: list[CheckResults],
) -> tuple[dict[int, SessionGrade], RunStats]:
    """The judge, blind to the arm, for every clean session that ran to its end; and what the
    judge's runner did (its calls' cost, the model ids they reported). A plugin eval case's checks are completed in ``checks`` (its judged graders)."""
    executor = usable_executor(config.judge_executor, "--judge-executor")
    endpoint = executor.base_url if isinstance(executor, HttpExecutor) else "in-process"
    target = Target(executor, config.judge_model, endpoint)
    cache_dir = Path(config.results_dir) / ".cache"
    runner = UnitRunner(RunnerConfig.judging(config, cache_dir), Progress(0, "judging", enabled=False))
    policy = CallPolicy(cache_dir=str(cache_dir))
    clean = [i for i, (session, bad) in enumerate(outcomes) if session.ok and bad is None]
    # a check that could not decide leaves the session ungraded (fail closed): no judgement is paid for
    undecided = {
        i: SessionGrade(status=GradeStatus.UNGRADED, error=error)
        for i in clean
        if (error := checks[i].grading_error)
    }
    judged = [i for i in clean if plans[i].task.plugin_case is None and i not in undecided]
    plugin: dict[int, SessionGrade] = {}
    for i, (done, plugin_grade) in (
        await judge_plugin_runs(runner, target, policy, plugin_runs(plans, clean), checks)
    ).items():
        checks[i], plugin[i] = done, plugin_grade
    # One batch for the four-criterion judgements, one per skill-creator eval (its own expectations).
    groups: dict[str, list[int]] = {}
    for i in judged:
        groups.setdefault(plans[i].task.task_id if plans[i].task.expectations else "", []).append(i)

    async def batch(part: list[int]) -> list[tuple[Any, str | None, str | None]]:
        jobs = [judge_job(target, plans[i], outcomes[i][0], checks[i]) for i in part]
        wanted = plans[part[0]].task.expectations
        if wanted:
            return await run_judge_jobs(
                runner, jobs, lambda reply: parse_expectations(reply, wanted), lambda _: policy
            )
        return await run_judge_jobs(runner, jobs, parse_criteria, lambda _: policy)

    verdicts = await asyncio.gather(*(batch(part) for part in groups.values()))
    out: dict[int, SessionGrade] = {}
    for part, results in zip(groups.values(), verdicts, strict=True):
        for i, (parsed, raw, error) in zip(part, results, strict=True):
            if parsed is None:
                out[i] = SessionGrade(status=GradeStatus.UNGRADED, error=error, raw=raw)
            elif plans[i].task.expectations:
                out[i] = expectations_grade(parsed)
            else:
                out[i] = grade(parsed, checks[i].all_passed)
    return plugin | out | undecided, runner.stats()


async def plugin_setup(
    s: Session, request: AgentRequest, isolation: Isolation, skill: str
) -> tuple[AgentRequest, str | None]:
    """A plugin eval case's own settings and scaffold (other tasks: the request as it is)."""
    case = s.task.plugin_case
    if case is None:
        return request, None
    error = await asyncio.to_thread(prepare_sandbox, case, s.task.case_dir, s.sandbox, s.outputs, isolation)
    return plugin_request(request, case, skill, s.task.case_dir), error


def plugin_runs(
    plans: list[Session], clean: list[int]
) -> list[tuple[int, PluginCase, RunEvidence, bool, tuple[str, str, int]]]:
    """The clean sessions of plugin eval cases, with what their judged graders read."""
    return [
        (
            i,
            case,
            evidence(s.sandbox, s.outputs),
            s.kind == Arm.WITH_SKILL,
            (s.task.task_id, str(s.mode), s.run),
        )
        for i in clean
        if (case := (s := plans[i]).task.plugin_case) is not None
    ]


def session_record(g: Graded, config: SkillBenchConfig) -> Record:
    """The aggregation row of one clean session (contaminated ones are excluded before)."""
    session = g.session
    result = RunResult(
        ok=session.ok,
        output=session.final_text,
        error=session.error,
        error_kind=None if session.ok else session.status,
        usage=usage_of(session.meta),
        cost_usd=session.cost_usd,
        latency_ms=session.duration_ms,
        model=session.meta.model or config.runner_model,
    )
    return Record(
        sample_id=g.plan.task.task_id,
        variant=g.plan.mode,
        run=g.plan.run,
        result=result,
        grade=Grade(composite=g.grade.weighted_total) if session.ok else None,
        gate=g.checks.all_passed,
    )


def grade_sessions(
    plans: list[Session],
    outcomes: list[tuple[AgentSession, str | None]],
    checks: list[CheckResults],
    grades: dict[int, SessionGrade],
) -> list[Graded]:
    """Each session with its grade file: judged, ungraded, contaminated or failed."""
    graded = []
    for i, s in enumerate(plans):
        session, contaminated = outcomes[i]
        behavior = analyze(session)
        atomic_write_json(s.outputs / "behavior.json", behavior.dump())
        if contaminated:
            g = SessionGrade(status=GradeStatus.CONTAMINATED, reason=contaminated, weighted_total=None)
        elif not session.ok:
            g = SessionGrade(
                status=GradeStatus.FAILED, reason=f"{session.status}: {session.error}", weighted_total=0.0
            )
        else:
            g = grades[i]
        atomic_write_json(s.grades / f"{s.mode}-grade.json", g.dump())
        if s.task.plugin_case is not None:  # the judged graders' votes came in after the checks file
            atomic_write_json(s.grades / f"{s.mode}-checks.json", checks[i].dump())
        graded.append(Graded(s, session, checks[i], behavior, g, contaminated))
    return graded


def plan_line(config: SkillBenchConfig, skill: Skill, plans: list[Session], isolation: Isolation) -> str:
    arms = list(dict.fromkeys(s.mode for s in plans))
    tasks = len({s.task.task_id for s in plans})
    return (
        f"plan: {tasks} tasks × {len(arms)} arms ({', '.join(arms)}) × {config.runs} run(s) = {len(plans)} "
        f"agent sessions of {config.runner}:{config.runner_model} with skill {skill.name}, concurrency "
        f"{config.concurrency}; judge {config.judge_executor}:{config.judge_model}; OS sandbox "
        f"{isolation}; cost not estimated (agent sessions vary): the closing lines give it"
    )


def complete_tasks(tasks: list[AgentTask], records: list[Record]) -> set[str]:
    """Tasks with a successful session in both report arms (the ablated arms are not needed)."""
    return {
        t.task_id
        for t in tasks
        if all(
            any(r.sample_id == t.task_id and r.variant == m and r.result.ok for r in records)
            for m in REPORT_ARMS
        )
    }


def start_results(config: SkillBenchConfig, skill: Skill, tasks_dir: str, started: dt.datetime) -> Path:
    """The run's results tree, with its copy of the suite."""
    results = Path(config.results_dir) / f"{skill.name}-{started.strftime('%Y%m%d-%H%M%S')}"
    (results / "tasks").mkdir(parents=True, exist_ok=True)
    evals = evals_file(Path(tasks_dir))  # a skill-creator suite: its evals.json
    for path in [evals] if evals else sorted(Path(tasks_dir).glob("*.md")):
        shutil.copyfile(path, results / "tasks" / path.name)
    return results


def ablated_arms(skill: Skill, ablations: list[SkillAblation], results: Path) -> dict[str, Path]:
    """--ablate: each arm's copy of the skill, made once under the run's results tree (so what the
    agent saw stays on record); none without --ablate."""
    return write_ablated_skills(skill.path, skill.name, ablations, results / "ablated-skills")


def write_reports(
    report: AgenticReport,
    results: Path,
    config: SkillBenchConfig,
    tasks: list[AgentTask],
    tasks_dir: str,
    started: dt.datetime,
    plugin: Plugin | None = None,
) -> Path:
    """report.json and report.md in the results tree, a copy for the report server, and with
    --json the shape `claude plugin eval --json` writes (for a suite's own post-run gates)."""
    report_path = results / "report.json"
    atomic_write_json(report_path, report.dump())
    atomic_write_text(results / "report.md", report_markdown(report))
    if config.json_file:
        official = plugin_eval_json(
            report,
            tasks,
            root=tasks_dir,
            threshold=1.0 if config.case_threshold is None else config.case_threshold,
            case_filter=config.case,
            tags=config.tag,
            seconds=(dt.datetime.now(dt.UTC) - started).total_seconds(),
            plugin=plugin,
        )
        atomic_write_json(Path(config.json_file), official)
    if config.output_dir:
        atomic_write_json(Path(config.output_dir) / f"{report.id}.json", report.dump())
    write_ci_outputs(
        report, config.junit, config.github_summary, config.threshold or 0.0, config.require_valid
    )
    return report_path


async def tried_graders(
    tasks: list[AgentTask], tasks_dir: Path, isolation: Isolation
) -> tuple[list[AgentTask], list[GraderCheck], list[str]]:
    """The tasks' checks tried on their reference solutions before any session; the broken ones
    taken out, and named for the certificate and the report's warnings."""
    findings = await asyncio.to_thread(validate_tasks, tasks, tasks_dir, isolation, check_folders)
    checks = [GraderCheck.model_validate(f, from_attributes=True) for f in findings]
    return tasks_without_broken(tasks, findings), checks, broken_notices(findings)


def claimed_sessions(
    config: SkillBenchConfig, tasks: list[AgentTask], results: Path, skill_dirs: dict[str, Path]
) -> tuple[list[Session], set[Path]]:
    """Every session of the run planned, and the sandbox roots claimed for them (what a run killed
    with -9 left behind swept first)."""
    sweep()
    isolated = isolation_root()
    case_runs = "runs" not in config.model_fields_set  # plugin eval cases: their own runs, unless --runs
    plans = plan_sessions(tasks, results, config.runs, isolated, (*ARMS, *skill_dirs), case_runs=case_runs)
    return plans, {claim(arm_root(isolated, s.mode)) for s in plans}


def keep_recordings(config: SkillBenchConfig, plans: list[Session], tasks_dir: Path, log: LogTarget) -> None:
    """--mocks record: what the real MCP servers answered, written as the recordings replaying runs serve."""
    if config.mocks == "record":
        for path in write_recordings(((s.task, s.outputs) for s in plans), tasks_dir):
            log.info(f"recorded: {path} (review it before measuring with it)")


@flow(name="skill-bench", log_prints=False)
async def skill_bench(config: SkillBenchConfig, skill_name: str, skill_path: str, tasks_dir: str) -> Any:
    skill = Skill(skill_name, Path(skill_path))
    await tag_flow_run("agentic", skill_name)
    version = check_artifact(skill, config.runner)  # exit 2 on a plugin this CLI cannot load
    isolation = checked_isolation(config.os_sandbox)
    tasks, suite_hash = load_tasks(Path(tasks_dir), config.mocks)
    leaks = task_leaks(tasks := select_tasks(tasks, config), skill)
    tasks, graders, broken = await tried_graders(tasks, Path(tasks_dir), isolation)
    warnings = suite_warnings(tasks, config, skill.name, skill.plugin is not None) + leaks + broken
    ablations = plan_skill_ablations(skill.path, config.ablate, config.ablate_sections)
    started = dt.datetime.now(dt.UTC)
    results = start_results(config, skill, tasks_dir, started)
    skill_dirs = ablated_arms(skill, ablations, results)
    plans, roots = claimed_sessions(config, tasks, results, skill_dirs)
    try:
        log = run_logger()
        log.info(f"{plan_line(config, skill, plans, isolation)}; results in {results}")
        reuse = Reuse.of(config.reuses_baseline, results, version)
        plans, outcomes, stats = await run_sessions(config, skill, plans, isolation, log, skill_dirs, reuse)
        keep_recordings(config, plans, Path(tasks_dir), log)
        checks = check_sessions(plans, [session for session, _ in outcomes], isolation)
        try:
            grades, judged = await judge_sessions(config, plans, outcomes, checks)
        finally:
            await close_all()
        graded = grade_sessions(plans, outcomes, checks, grades)
        records = [session_record(g, config) for g in graded if not g.contaminated]
        ablated, suite = {a.arm: a.heading for a in ablations}, (tasks, suite_hash, results, started)
        stats, judge_cost = stats.with_judge(judged), judged.spent_by_kind.get(UnitKind.JUDGE, 0.0)
        run = AgenticRun(config, skill, *suite, isolation, ablated, version, warnings, judge_cost, stats)
        report = build_skill_report(run, graded, records)
        report.diagnosis = await diagnose_skill_run(
            report, config, skill, {a.arm: a.skill_md for a in ablations}
        )
        report.validity = certify(report, config.max_error_rate, graders, leaks)
        report_path = write_reports(report, results, config, tasks, tasks_dir, started, skill.plugin)
    finally:  # the sandboxes go however the run ends; a run killed with -9 leaves them to the sweep
        for root in roots:
            release(root)
    complete = complete_tasks(tasks, records)
    if len(complete) < 2:  # the run ends Failed with the reason, not a traceback in the terminal
        short = InsufficientData(
            f"insufficient data: {len(complete)} task(s) completed in both arms (at least 2 are needed); "
            f"see {results}"
        )
        await add_tags(outcome_tag("insufficient data"))
        return Failed(message=str(short), data=current().keep(short))
    await add_tags(outcome_tag(outcome_name(report)))
    for line in [
        *figure_lines(report),
        *verdict_lines(report),
        *(s.line for s in (report.ablation.sections if report.ablation else [])),
        f"report: {results / 'report.md'} ({report_path})",
    ]:
        log.info(line)
    result = current().keep(RunOutcome(id=report.id, report_path=str(report_path), results_dir=str(results)))
    return Completed(message=state_message(report), data=result)
