"""The agentic-mode report: per-task sessions of both arms, criteria, checks and behaviour, built
through the same ``assemble`` as every mode."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from executors.sandbox import Isolation
from executors.schema import AgentSession
from flows.inputs.sessions import Session
from flows.inputs.skill_config import Skill, SkillBenchConfig
from flows.report.build import (
    agent_cli_meta,
    assemble,
    cli_version,
    isolation_meta,
    timestamp,
    variant_entry,
)
from flows.report.schema import Report
from graders.agent_task import AgentTask
from graders.criteria import WEIGHTS
from tasks.aggregate import aggregate
from tasks.schema import AGENTIC_SCALE, Arm, Record

#: The order arms appear in the report: the control first.
REPORT_ARMS = [Arm.BASELINE, Arm.WITH_SKILL]
TRANSCRIPT_CHARS = 600


@dataclass(frozen=True)
class Graded:
    """One session with everything known about it after grading."""

    plan: Session
    session: AgentSession
    checks: dict[str, Any]
    behavior: dict[str, Any]
    grade: dict[str, Any]
    contaminated: str | None


def session_entry(g: Graded) -> dict[str, Any]:
    s, session = g.plan, g.session
    return {
        "run": s.run,
        "ok": session.ok,
        "status": "contaminated" if g.contaminated else session.status,
        # a failed or excluded session is an error, not a 0: it has no score (the grade file keeps the seed's)
        "compositeScore": g.grade.get("weighted_total") if session.ok and not g.contaminated else None,
        "grade": g.grade,
        "contaminated": g.contaminated,
        "checks": {k: v for k, v in g.checks.items() if k != "details"},
        "checkDetails": g.checks.get("details"),
        "criteria": {k: g.grade[k]["score"] for k in WEIGHTS if k in g.grade},
        "behavior": g.behavior,
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
                "text": (e.text or json.dumps(e.input or {}))[:TRANSCRIPT_CHARS],
                "is_error": e.is_error,
            }
            for e in session.events
        ],
        "outputs": str(s.outputs),
    }


def task_results(
    tasks: list[AgentTask], graded: list[Graded], case_stats: dict[str, Any]
) -> list[dict[str, Any]]:
    per_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for g in graded:
        per_task.setdefault(g.plan.task.task_id, {}).setdefault(g.plan.mode, []).append(session_entry(g))
    results = []
    for t in tasks:
        arms = per_task.get(t.task_id, {})
        entries = {}
        for mode in REPORT_ARMS:
            runs = arms.get(mode, [])
            if runs:
                scores = [r["compositeScore"] for r in runs if r["compositeScore"] is not None]
                mean = sum(scores) / len(scores) if scores else None
                entries[str(mode)] = variant_entry(runs, case_stats.get(t.task_id, {}).get(mode, {}), mean)
        results.append(
            {
                "sample_id": t.task_id,
                "name": t.name,
                "prompt": t.prompt,
                "type": t.type,
                "difficulty": t.difficulty,
                "category": t.category,
                "tags": list(t.tags),
                "rubric": t.rubric,
                "variants": entries,
            }
        )
    return results


def criteria_means(graded: list[Graded]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for mode in REPORT_ARMS:
        grades = [
            g.grade
            for g in graded
            if g.plan.mode == mode and g.contaminated is None and "correctness" in g.grade
        ]
        out[mode] = {
            k: (sum(x[k]["score"] for x in grades) / len(grades) if grades else None) for k in WEIGHTS
        }
    return out


def behavior_summary(graded: list[Graded]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in REPORT_ARMS:
        rows = [(g.session, g.behavior) for g in graded if g.plan.mode == mode and g.contaminated is None]
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


@dataclass(frozen=True)
class AgenticRun:
    """What an agentic run was: its config, skill, fixed suite, results tree and start."""

    config: SkillBenchConfig
    skill: Skill
    tasks: list[AgentTask]
    suite_hash: str
    results: Path
    started: dt.datetime
    isolation: Isolation
    cli_version: str | None = None  # the agent CLI's --version before the run (None: not told)


def agentic_meta(run: AgenticRun, graded: list[Graded], records: list[Record]) -> dict[str, Any]:
    config, skill, tasks, suite_hash, results, started = (
        run.config,
        run.skill,
        run.tasks,
        run.suite_hash,
        run.results,
        run.started,
    )
    return {
        "skill": skill.name,
        "skillPath": str(skill.path),
        "skillSha256": skill.sha256,
        "variants": [str(a) for a in REPORT_ARMS],
        "control": Arm.BASELINE,
        "model": config.runner_model,
        "executor": config.runner,
        "judgeModel": f"{config.judge_executor}:{config.judge_model}",
        "sampleCount": len(tasks),
        "taskCount": len(graded),
        "runs": config.runs,
        "repeat": config.runs,
        "maxTurns": config.max_turns,
        "suiteSha256": suite_hash,
        "resultsDir": str(results),
        "seed": config.seed,
        "timestamp": timestamp(started),
        "cliVersion": cli_version(),
        "totalCostUSD": sum(r.result.cost_usd for r in records),
        **isolation_meta(run.isolation),
        **agent_cli_meta(config.runner, [g.session.meta.get("cli_version") for g in graded], run.cli_version),
        "plugin": plugin.summary(config.plugin_mcp) if (plugin := skill.plugin) else None,
        "contaminated": [
            {"task": g.plan.task.task_id, "mode": g.plan.mode, "run": g.plan.run, "reason": g.contaminated}
            for g in graded
            if g.contaminated
        ],
    }


def build_skill_report(run: AgenticRun, graded: list[Graded], records: list[Record]) -> Report:
    config, skill, tasks, started = run.config, run.skill, run.tasks, run.started
    agg = (
        aggregate(
            records,
            [],
            [str(a) for a in REPORT_ARMS],
            Arm.BASELINE,
            AGENTIC_SCALE,
            seed=config.seed,
            max_error_rate=config.max_error_rate,
        )
        if records
        else None
    )
    case_results = task_results(tasks, graded, agg["caseStats"] if agg else {})
    passes = {
        mode: [bool(g.checks["all_passed"]) for g in graded if g.plan.mode == mode] for mode in REPORT_ARMS
    }
    return assemble(
        "agentic",
        f"{started.strftime('%Y-%m-%dT%H-%M-%S')}-skill-{skill.name}",
        agentic_meta(run, graded, records),
        AGENTIC_SCALE,
        agg,
        case_results,
        criteria=criteria_means(graded),
        deterministicPassRate={m: (sum(v) / len(v) if v else None) for m, v in passes.items()},
        negativeControls=[r for r in case_results if r["type"] == "negative-control"],
        behavior=behavior_summary(graded),
    )
