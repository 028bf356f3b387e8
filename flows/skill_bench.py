"""Agentic mode: does a skill make an agent do better than the same agent without it?

Every task runs in two arms (with-skill, baseline), ``runs`` times, each session in its own sandbox
with a fresh HOME, then: deterministic checks, the four-criterion judge (blind to the arm),
transcript analysis, aggregation with the paired statistics, report.md and a report JSON.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.states import Completed

from executors.agent import read_events, usage_of
from executors.base import HttpExecutor
from executors.registry import close_all, usable_executor
from executors.sandbox import Isolation
from executors.schema import AgentRequest, AgentSession, RunResult
from flows.engine.judging import run_judge_jobs
from flows.engine.plugin_eval import (
    evidence,
    grade_plugin_run,
    judge_plugin_runs,
    plugin_request,
    prepare_sandbox,
)
from flows.engine.progress import LogTarget, Progress
from flows.engine.runlog import run_logger
from flows.engine.runner import RunnerConfig, UnitRunner
from flows.engine.sessions import contamination, init_event, write_outputs
from flows.explain import diagnose_skill_run
from flows.inputs.plan import JudgeJob, Target
from flows.inputs.sessions import Session, checked_isolation, isolation_root, plan_sessions
from flows.inputs.skill_config import Skill, SkillBenchConfig, load_tasks
from flows.report.agentic import REPORT_ARMS, AgenticRun, Graded, build_skill_report
from flows.report.logtext import figure_lines, state_message, verdict_lines
from flows.report.markdown import report_markdown
from graders.behavior import analyze
from graders.checks import sandbox_files
from graders.criteria import CRITERIA_SCHEMA_JSON, criteria_prompt, grade, parse_criteria, read_files
from graders.plugin_eval import PluginCase, RunEvidence
from graders.schema import Grade
from tasks.agent import check_sandbox, run_agent_session
from tasks.files import atomic_write_json, atomic_write_text
from tasks.schema import Arm, CallPolicy, Record


class InsufficientData(Exception):
    """Fewer than 2 tasks completed in both arms: no comparison is possible."""


async def run_sessions(
    config: SkillBenchConfig,
    skill: Skill,
    plans: list[Session],
    isolation: Isolation,
    log: LogTarget | None = None,
) -> list[tuple[AgentSession, str | None]]:
    """Every session (both arms, every run) under the concurrency cap, with its contamination."""
    semaphore = asyncio.Semaphore(config.concurrency)
    progress = Progress(len(plans), "sessions", log=log)

    async def one(s: Session) -> tuple[AgentSession, str | None]:
        with_skill = s.mode == Arm.WITH_SKILL
        request = AgentRequest(
            cli=config.runner,
            model=config.runner_model,
            prompt=s.task.prompt,
            sandbox=str(s.sandbox),
            home=str(s.home),
            skill_name=skill.name if with_skill else None,
            skill_dir=str(skill.path) if with_skill else None,
            max_turns=config.max_turns,
            timeout_s=config.timeout,
            raw_stream=str(s.outputs / "raw_stream.jsonl"),
            isolation=isolation,
        )
        async with semaphore:
            request, setup_error = await plugin_setup(s, request, isolation, skill.name)
            session = (
                AgentSession(ok=False, status="error", error=setup_error)
                if setup_error
                else await run_agent_session(request, config.base_url, s.label)
            )
        raw = read_events(s.outputs / "raw_stream.jsonl")
        contaminated = contamination(session, s.mode, skill.name, init_event(raw), skill.description)
        write_outputs(s, session, skill.name, contaminated, raw)
        bad = None if contaminated is None else ("contaminated", contaminated)
        bad = bad or (None if session.ok else (session.status, session.error or session.status))
        progress.advance(
            ok=bad is None,
            cost=float(session.meta.get("total_cost_usd") or 0),
            failure=None if bad is None else (s.label, str(bad[0]), str(bad[1])),
        )
        return session, contaminated

    try:
        return await asyncio.gather(*(one(s) for s in plans))
    finally:
        progress.close()


def check_sessions(plans: list[Session], isolation: Isolation) -> list[dict[str, Any]]:
    """The deterministic checks of each sandbox, then the seed's archive copy of it."""
    checks = [
        grade_plugin_run(s.task.plugin_case, evidence(s.sandbox, s.outputs), s.mode == Arm.WITH_SKILL)
        if s.task.plugin_case
        else check_sandbox(s.task, str(s.sandbox), s.label, isolation)
        for s in plans
    ]
    for s, c in zip(plans, checks, strict=True):
        atomic_write_json(s.grades / f"{s.mode}-checks.json", c)
        if s.sandbox.exists():
            shutil.copytree(s.sandbox, s.archive, symlinks=True, dirs_exist_ok=True)
    return checks


async def judge_sessions(
    config: SkillBenchConfig,
    plans: list[Session],
    outcomes: list[tuple[AgentSession, str | None]],
    checks: list[dict[str, Any]],
) -> dict[int, dict[str, Any]]:
    """The four-criterion judge, blind to the arm, for every clean session that ran to its end."""
    executor = usable_executor(config.judge_executor, "--judge-executor")
    endpoint = executor.base_url if isinstance(executor, HttpExecutor) else "in-process"
    target = Target(executor, config.judge_model, endpoint)
    cache_dir = Path(config.results_dir) / ".cache"
    runner = UnitRunner(RunnerConfig(config.concurrency, cache_dir), Progress(0, "judging", enabled=False))
    policy = CallPolicy(cache_dir=str(cache_dir))
    clean = [i for i, (session, bad) in enumerate(outcomes) if session.ok and bad is None]
    judged = [i for i in clean if plans[i].task.plugin_case is None]
    plugin = await judge_plugin_runs(runner, target, policy, plugin_runs(plans, clean), checks)
    jobs = []
    for i in judged:
        s, session = plans[i], outcomes[i][0]
        prompt = criteria_prompt(
            s.task.prompt,
            s.task.expected_outcome,
            s.task.rubric,
            session.final_text,
            checks[i],
            read_files(s.archive, sandbox_files(s.archive)),
            session.meta.get("usage") or {},
        )
        jobs.append(
            JudgeJob(target, prompt, s.task.task_id, "session", s.run, schema_json=CRITERIA_SCHEMA_JSON)
        )
    verdicts = await run_judge_jobs(runner, jobs, parse_criteria, lambda _: policy)
    return plugin | {
        i: grade(criteria, bool(checks[i]["all_passed"]))
        if criteria is not None
        else {"status": "ungraded", "error": error, "raw": raw}
        for i, (criteria, raw, error) in zip(judged, verdicts, strict=True)
    }


async def plugin_setup(
    s: Session, request: AgentRequest, isolation: Isolation, skill: str
) -> tuple[AgentRequest, str | None]:
    """A plugin eval case's own settings and scaffold (other tasks: the request as it is)."""
    case = s.task.plugin_case
    if case is None:
        return request, None
    error = await asyncio.to_thread(prepare_sandbox, case, s.task.case_dir, s.sandbox, s.outputs, isolation)
    return plugin_request(request, case, skill), error


def plugin_runs(
    plans: list[Session], clean: list[int]
) -> list[tuple[int, PluginCase, RunEvidence, bool, tuple[str, str, int]]]:
    """The clean sessions of plugin eval cases, with what their judged graders read."""
    return [
        (
            i,
            case,
            evidence(s.sandbox, s.outputs),
            s.mode == Arm.WITH_SKILL,
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
        cost_usd=float(session.meta.get("total_cost_usd") or 0.0),
        latency_ms=session.duration_ms,
        model=str(session.meta.get("model") or config.runner_model),
    )
    return Record(
        sample_id=g.plan.task.task_id,
        variant=g.plan.mode,
        run=g.plan.run,
        result=result,
        grade=Grade(composite=g.grade.get("weighted_total")) if session.ok else None,
        gate=bool(g.checks["all_passed"]),
    )


def grade_sessions(
    plans: list[Session],
    outcomes: list[tuple[AgentSession, str | None]],
    checks: list[dict[str, Any]],
    grades: dict[int, dict[str, Any]],
) -> list[Graded]:
    """Each session with its grade file: judged, ungraded, contaminated or failed."""
    graded = []
    for i, s in enumerate(plans):
        session, contaminated = outcomes[i]
        behavior = analyze(session)
        atomic_write_json(s.outputs / "behavior.json", behavior)
        if contaminated:
            g: dict[str, Any] = {"status": "contaminated", "reason": contaminated, "weighted_total": None}
        elif not session.ok:
            g = {"status": "failed", "reason": f"{session.status}: {session.error}", "weighted_total": 0.0}
        else:
            g = grades[i]
        atomic_write_json(s.grades / f"{s.mode}-grade.json", g)
        if s.task.plugin_case is not None:  # the judged graders' votes came in after the checks file
            atomic_write_json(s.grades / f"{s.mode}-checks.json", checks[i])
        graded.append(Graded(s, session, checks[i], behavior, g, contaminated))
    return graded


@flow(name="skill-bench", log_prints=False)
async def skill_bench(config: SkillBenchConfig, skill_name: str, skill_path: str, tasks_dir: str) -> Any:
    skill = Skill(skill_name, Path(skill_path))
    isolation = checked_isolation(config.os_sandbox)
    tasks, suite_hash = load_tasks(Path(tasks_dir))
    started = dt.datetime.now(dt.UTC)
    results = Path(config.results_dir) / f"{skill.name}-{started.strftime('%Y%m%d-%H%M%S')}"
    (results / "tasks").mkdir(parents=True, exist_ok=True)
    for path in sorted(Path(tasks_dir).glob("*.md")):
        shutil.copyfile(path, results / "tasks" / path.name)
    isolated = isolation_root()
    plans = plan_sessions(tasks, results, config.runs, isolated)
    log = run_logger()
    log.info(
        f"plan: {len(tasks)} tasks × 2 arms (with-skill, baseline) × {config.runs} run(s) = {len(plans)} "
        f"agent sessions of {config.runner}:{config.runner_model} with skill {skill.name}, concurrency "
        f"{config.concurrency}; judge {config.judge_executor}:{config.judge_model}; OS sandbox "
        f"{isolation}; cost not estimated (agent sessions "
        "vary): the closing lines give it; results in " + str(results)
    )
    outcomes = await run_sessions(config, skill, plans, isolation, log)
    checks = check_sessions(plans, isolation)
    try:
        grades = await judge_sessions(config, plans, outcomes, checks)
    finally:
        await close_all()
    graded = grade_sessions(plans, outcomes, checks, grades)
    records = [session_record(g, config) for g in graded if not g.contaminated]
    report = build_skill_report(
        AgenticRun(config, skill, tasks, suite_hash, results, started, isolation), graded, records
    )
    report.diagnosis = await diagnose_skill_run(report, config, skill)
    report_path = results / "report.json"
    atomic_write_json(report_path, report.dump())
    atomic_write_text(results / "report.md", report_markdown(report))
    if config.output_dir:
        atomic_write_json(Path(config.output_dir) / f"{report.id}.json", report.dump())
    shutil.rmtree(isolated, ignore_errors=True)
    complete = {
        t.task_id
        for t in tasks
        if all(
            any(r.sample_id == t.task_id and r.variant == m and r.result.ok for r in records)
            for m in REPORT_ARMS
        )
    }
    if len(complete) < 2:
        raise InsufficientData(
            f"insufficient data: {len(complete)} task(s) completed in both arms (at least 2 are needed); "
            f"see {results}"
        )
    for line in [
        *figure_lines(report),
        *verdict_lines(report),
        f"report: {results / 'report.md'} ({report_path})",
    ]:
        log.info(line)
    result = {"results_dir": str(results), "report_path": str(report_path), "id": report.id}
    return Completed(message=state_message(report), data=result)
