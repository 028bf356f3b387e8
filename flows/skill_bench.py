"""Agentic mode: does a skill make an agent do better than the same agent without it?

Every task runs in two arms (with-skill, baseline), ``runs`` times, each session in its own sandbox
with a fresh HOME, then: deterministic checks, the four-criterion judge (blind to the arm),
transcript analysis, aggregation with the paired statistics, report.md and a report JSON.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow

from executors.base import HttpExecutor
from executors.registry import EXECUTORS, get_executor
from executors.schema import AgentRequest, AgentSession, RunResult, Usage
from flows.errors import UsageError
from flows.options import BenchOptions
from flows.plan import JudgeJob, Target
from flows.prepare import Prepared
from flows.progress import Progress
from flows.report import cli_version
from flows.sample_bench import UnitRunner, run_judge_jobs
from flows.skill_config import Skill, SkillBenchConfig
from graders.agent_task import AgentTask
from graders.behavior import analyze
from graders.checks import sandbox_files
from graders.criteria import CRITERIA_SCHEMA_JSON, WEIGHTS, criteria_prompt, grade, parse_criteria, read_files
from graders.schema import Grade
from tasks.agent import check_sandbox, run_agent_session
from tasks.aggregate import aggregate
from tasks.files import atomic_write_json, atomic_write_text
from tasks.schema import AGENTIC_SCALE, Record

MODES = ("with-skill", "baseline")


class InsufficientData(Exception):
    """Fewer than 2 tasks completed in both arms: no comparison is possible."""


@dataclass(frozen=True)
class Session:
    task: AgentTask
    index: int
    run: int
    mode: str
    sandbox: Path  # where the agent works: outside the project (see isolation_root)
    home: Path
    outputs: Path
    grades: Path
    archive: Path  # the seed's results/sandbox/... copy of the sandbox, made after grading

    @property
    def label(self) -> str:
        return f"{self.task.task_id} · {self.mode} · run {self.run}"


def isolation_root(results: Path) -> Path:
    """Sessions run outside the project: Claude Code also reads .claude/skills (and CLAUDE.md) of
    every parent folder, so a sandbox under the project would hand the baseline the skill. (The
    seed's layout, sandboxes under ./skill-bench/results, has exactly this leak.)"""
    return Path(tempfile.gettempdir()) / "skillab-sandboxes" / results.name


def plan_sessions(tasks: list[AgentTask], results: Path, runs: int) -> list[Session]:
    """The seed's tree; the run-N level only when runs > 1. Arms of a task run side by side."""
    out = []
    isolated = isolation_root(results)
    for run in range(1, runs + 1):
        for index, task in enumerate(tasks, start=1):
            for mode in MODES:
                level = Path(f"task-{index:02d}") / (f"run-{run}" if runs > 1 else "")
                out.append(
                    Session(
                        task,
                        index,
                        run,
                        mode,
                        sandbox=isolated / "sandbox" / level / mode,
                        home=isolated / "home" / level / mode,
                        outputs=results / "outputs" / level / mode,
                        grades=results / "grades" / level,
                        archive=results / "sandbox" / level / mode,
                    )
                )
    return out


def contamination(session: AgentSession, mode: str, skill: str) -> str | None:
    """The init event must list the skill in the with-skill arm and must not in the baseline."""
    listed = session.skills_listed
    if mode == "with-skill" and listed is not None and skill not in listed:
        return f"the with-skill session's init event does not list {skill!r}"
    if mode == "baseline" and listed is not None and skill in listed:
        return f"the baseline session's init event lists {skill!r}"
    if mode == "baseline" and session.skill_invoked:
        return f"the baseline session invoked {skill!r}"
    return None


def write_outputs(s: Session, session: AgentSession, skill: str, contaminated: str | None) -> None:
    raw = (
        [
            json.loads(line)
            for line in (s.outputs / "raw_stream.jsonl")
            .read_text(encoding="utf-8", errors="replace")
            .splitlines()
            if line.startswith("{") and _is_json(line)
        ]
        if (s.outputs / "raw_stream.jsonl").exists()
        else []
    )
    results = [e for e in raw if e.get("type") == "result"]
    atomic_write_json(s.outputs / "response.json", results[-1] if results else {"error": session.error})
    atomic_write_json(s.outputs / "transcript.json", raw)
    meta = {
        **session.meta,
        "skill_name": skill,
        "mode": s.mode,
        "status": session.status,
        "ok": session.ok,
        "error": session.error,
        "exit_code": session.exit_code,
        "wall_ms": round(session.duration_ms),
        "skills_listed": list(session.skills_listed) if session.skills_listed is not None else None,
        "skill_invoked": session.skill_invoked,
        "contaminated": contaminated,
    }
    atomic_write_json(s.outputs / "meta.json", meta)


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True


def judge_host(config: SkillBenchConfig, cache_dir: Path) -> tuple[Prepared, Target]:
    """The sample-mode runner, reused for judge calls (retries, cache, concurrency)."""
    name = config.judge_executor
    if name not in EXECUTORS:
        raise UsageError(f"--judge-executor: unknown executor {name!r}")
    executor = get_executor(name)
    problem = executor.problem()
    if problem:
        raise UsageError(f"--judge-executor: {problem}")
    target = Target(
        executor,
        config.judge_model,
        executor.base_url if isinstance(executor, HttpExecutor) else "in-process",
    )
    options = BenchOptions(
        executor=name,
        model=config.judge_model,
        concurrency=config.concurrency,
        cache_dir=str(cache_dir),
        seed=config.seed,
    )
    return Prepared(options, Path(), [], [], "baseline", target, [target]), target


@flow(name="skill-bench", log_prints=False)
async def skill_bench(
    config: SkillBenchConfig, skill_name: str, skill_path: str, tasks_dir: str
) -> dict[str, Any]:
    from flows.skill_config import load_tasks

    skill = Skill(skill_name, Path(skill_path))
    tasks, suite_hash = load_tasks(Path(tasks_dir))
    started = dt.datetime.now(dt.UTC)
    results = Path(config.results_dir) / f"{skill.name}-{started.strftime('%Y%m%d-%H%M%S')}"
    (results / "tasks").mkdir(parents=True, exist_ok=True)
    for path in sorted(Path(tasks_dir).glob("*.md")):
        shutil.copyfile(path, results / "tasks" / path.name)
    plans = plan_sessions(tasks, results, config.runs)
    semaphore = asyncio.Semaphore(config.concurrency)
    progress = Progress(len(plans), "sessions")

    async def one(s: Session) -> tuple[AgentSession, str | None]:
        request = AgentRequest(
            cli=config.runner,
            model=config.runner_model,
            prompt=s.task.prompt,
            sandbox=str(s.sandbox),
            home=str(s.home),
            skill_name=skill.name if s.mode == "with-skill" else None,
            skill_dir=str(skill.path) if s.mode == "with-skill" else None,
            max_turns=config.max_turns,
            timeout_s=config.timeout,
            raw_stream=str(s.outputs / "raw_stream.jsonl"),
        )
        async with semaphore:
            session = await run_agent_session(request, config.base_url, s.label)
        contaminated = contamination(session, s.mode, skill.name)
        write_outputs(s, session, skill.name, contaminated)
        progress.advance(ok=session.ok and contaminated is None)
        return session, contaminated

    try:
        outcomes = await asyncio.gather(*(one(s) for s in plans))
    finally:
        progress.close()
    checks = [check_sandbox(s.task, str(s.sandbox), s.label) for s in plans]
    for s, c in zip(plans, checks, strict=True):
        atomic_write_json(s.grades / f"{s.mode}-checks.json", c)
        if s.sandbox.exists():
            shutil.copytree(s.sandbox, s.archive, symlinks=True, dirs_exist_ok=True)
    host, judge = judge_host(config, Path(config.results_dir) / ".cache")
    runner = UnitRunner(host, Progress(0, "judging", enabled=False))
    judged = [i for i, (session, bad) in enumerate(outcomes) if session.ok and bad is None]
    jobs = []
    for i in judged:
        s, (session, _) = plans[i], outcomes[i]
        files = read_files(s.archive, sandbox_files(s.archive))
        prompt = criteria_prompt(
            s.task.prompt,
            s.task.expected_outcome,
            s.task.rubric,
            session.final_text,
            checks[i],
            files,
            session.meta.get("usage") or {},
        )
        jobs.append(
            JudgeJob(judge, prompt, s.task.task_id, "session", s.run, schema_json=CRITERIA_SCHEMA_JSON)
        )
    verdicts = await run_judge_jobs(runner, jobs, parse_criteria)
    grades: dict[int, dict[str, Any]] = {}
    for i, (criteria, raw, error) in zip(judged, verdicts, strict=True):
        grades[i] = (
            grade(criteria, bool(checks[i]["all_passed"]))
            if criteria is not None
            else {"status": "UNGRADED", "error": error, "raw": raw}
        )
    records, entries = [], []
    for i, s in enumerate(plans):
        session, contaminated = outcomes[i]
        behavior = analyze(session)
        atomic_write_json(s.outputs / "behavior.json", behavior)
        g = grades.get(i)
        if contaminated:
            g = {"status": "CONTAMINATED", "reason": contaminated, "weighted_total": None}
        elif not session.ok:
            g = {"status": "FAILED", "reason": f"{session.status}: {session.error}", "weighted_total": 0.0}
        assert g is not None
        atomic_write_json(s.grades / f"{s.mode}-grade.json", g)
        entries.append((s, session, behavior, g, contaminated))
        if contaminated:
            continue
        total = g.get("weighted_total")
        usage = session.meta.get("usage") or {}
        result = RunResult(
            ok=session.ok,
            output=session.final_text,
            error=session.error,
            error_kind=None if session.ok else session.status,
            usage=Usage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
            ),
            cost_usd=float(session.meta.get("total_cost_usd") or 0.0),
            latency_ms=session.duration_ms,
            model=str(session.meta.get("model") or config.runner_model),
        )
        records.append(
            Record(
                sample_id=s.task.task_id,
                variant=s.mode,
                run=s.run,
                result=result,
                grade=Grade(composite=total) if session.ok else None,
                gate=bool(checks[i]["all_passed"]),
            )
        )
    complete = {
        t.task_id
        for t in tasks
        if all(
            any(r.sample_id == t.task_id and r.variant == m and r.result.ok for r in records) for m in MODES
        )
    }
    report = build_skill_report(
        config, skill, tasks, suite_hash, results, started, entries, records, checks, plans
    )
    report_path = results / "report.json"
    atomic_write_json(report_path, report)
    from flows.skill_report import report_markdown

    atomic_write_text(results / "report.md", report_markdown(report))
    if config.output_dir:
        atomic_write_json(Path(config.output_dir) / f"{report['id']}.json", report)
    shutil.rmtree(isolation_root(results), ignore_errors=True)
    if len(complete) < 2:
        raise InsufficientData(
            f"insufficient data: {len(complete)} task(s) completed in both arms (at least 2 are needed); "
            f"see {results}"
        )
    return {"results_dir": str(results), "report_path": str(report_path), "id": report["id"]}


def build_skill_report(
    config: SkillBenchConfig,
    skill: Skill,
    tasks: list[AgentTask],
    suite_hash: str,
    results: Path,
    started: dt.datetime,
    entries: list[tuple[Any, ...]],
    records: list[Record],
    checks: list[dict[str, Any]],
    plans: list[Session],
) -> dict[str, Any]:
    variants = ["baseline", "with-skill"]
    agg = (
        aggregate(
            records,
            [],
            variants,
            "baseline",
            AGENTIC_SCALE,
            seed=config.seed,
            max_error_rate=config.max_error_rate,
        )
        if records
        else None
    )
    per_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s, session, behavior, g, contaminated in entries:
        per_task.setdefault(s.task.task_id, {}).setdefault(s.mode, []).append(
            {
                "run": s.run,
                "ok": session.ok,
                "status": "contaminated" if contaminated else session.status,
                "compositeScore": g.get("weighted_total"),
                "grade": g,
                "contaminated": contaminated,
                "checks": {k: v for k, v in checks[plans.index(s)].items() if k != "details"},
                "checkDetails": checks[plans.index(s)].get("details"),
                "criteria": {k: g[k]["score"] for k in WEIGHTS if k in g},
                "behavior": behavior,
                "output": session.final_text,
                "error": session.error,
                "durationMs": session.duration_ms,
                "costUSD": session.meta.get("total_cost_usd") or 0.0,
                "usage": session.meta.get("usage"),
                "numTurns": session.meta.get("num_turns"),
                "transcript": [
                    {
                        "kind": e.kind,
                        "tool": e.tool,
                        "text": (e.text or json.dumps(e.input or {}))[:600],
                        "is_error": e.is_error,
                    }
                    for e in session.events
                ],
                "outputs": str(s.outputs),
            }
        )
    results_list = []
    for t in tasks:
        arms = per_task.get(t.task_id, {})
        variants_entry = {}
        for mode in variants:
            runs = arms.get(mode, [])
            if not runs:
                continue
            entry = dict(runs[0])
            if len(runs) > 1:
                scores = [r["compositeScore"] for r in runs if r["compositeScore"] is not None]
                entry["compositeScore"] = sum(scores) / len(scores) if scores else None
                entry["runs"] = runs
            if agg:
                entry["caseStats"] = agg["caseStats"].get(t.task_id, {}).get(mode, {})
            variants_entry[mode] = entry
        results_list.append(
            {
                "sample_id": t.task_id,
                "name": t.name,
                "prompt": t.prompt,
                "type": t.type,
                "difficulty": t.difficulty,
                "category": t.category,
                "tags": list(t.tags),
                "rubric": t.rubric,
                "variants": variants_entry,
            }
        )
    crit: dict[str, dict[str, float | None]] = {}
    for mode in variants:
        graded = [e[3] for e in entries if e[0].mode == mode and e[4] is None and "correctness" in e[3]]
        crit[mode] = {
            k: (sum(g[k]["score"] for g in graded) / len(graded) if graded else None) for k in WEIGHTS
        }
    det = {
        mode: [bool(checks[i]["all_passed"]) for i, s in enumerate(plans) if s.mode == mode]
        for mode in variants
    }
    contaminated = [
        {"task": s.task.task_id, "mode": s.mode, "run": s.run, "reason": c} for s, _, _, _, c in entries if c
    ]
    report_id = f"{started.strftime('%Y-%m-%dT%H-%M-%S')}-skill-{skill.name}"
    return {
        "version": 1,
        "id": report_id,
        "mode": "agentic",
        "meta": {
            "skill": skill.name,
            "skillPath": str(skill.path),
            "skillSha256": skill.sha256,
            "variants": variants,
            "control": "baseline",
            "model": config.runner_model,
            "executor": config.runner,
            "judgeModel": f"{config.judge_executor}:{config.judge_model}",
            "sampleCount": len(tasks),
            "taskCount": len(plans),
            "runs": config.runs,
            "repeat": config.runs,
            "maxTurns": config.max_turns,
            "suiteSha256": suite_hash,
            "resultsDir": str(results),
            "seed": config.seed,
            "timestamp": started.isoformat().replace("+00:00", "Z"),
            "cliVersion": cli_version(),
            "totalCostUSD": sum(r.result.cost_usd for r in records),
            "contaminated": contaminated,
        },
        "summary": agg["summary"] if agg else {},
        "comparisons": agg["comparisons"] if agg else [],
        "scale": AGENTIC_SCALE.model_dump(),
        "criteria": crit,
        "deterministicPassRate": {m: (sum(v) / len(v) if v else None) for m, v in det.items()},
        "negativeControls": [r for r in results_list if r["type"] == "negative-control"],
        "behavior": behavior_summary(entries),
        "results": results_list,
        "analysis": agg["analysis"] if agg else {"insights": [], "suggestions": []},
    }


def behavior_summary(entries: list[tuple[Any, ...]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        rows = [(e[1], e[2]) for e in entries if e[0].mode == mode and e[4] is None]
        n = len(rows) or 1
        out[mode] = {
            "avgToolCalls": sum(b["total_tool_calls"] for _, b in rows) / n,
            "avgTurns": sum(b["turns"] or 0 for _, b in rows) / n,
            "thrashing": sum(1 for _, b in rows if b["thrashing_detected"]),
            "sessions": len(rows),
            "avgDurationS": sum(s.duration_ms for s, _ in rows) / n / 1000,
            "avgCostUSD": sum(float(s.meta.get("total_cost_usd") or 0) for s, _ in rows) / n,
            "totalCostUSD": sum(float(s.meta.get("total_cost_usd") or 0) for s, _ in rows),
            "skillInvoked": sum(1 for _, b in rows if b["skill_invoked"]),
            "errorsEncountered": sum(b["errors_encountered"] for _, b in rows),
            "errorsRecovered": sum(b["errors_recovered"] for _, b in rows),
            "maxTurnsHit": sum(1 for _, b in rows if b["max_turns_hit"]),
            "permissionDenials": sum(b["permission_denials"] for _, b in rows),
        }
    return out
