"""The agentic-mode report: per-task sessions of both arms, criteria, checks and behaviour, built
through the same ``assemble`` as every mode. With --ablate, the ablated arms' sessions too, and the
section ablation computed against the with-skill arm (its own comparisons and Holm adjustment, so
the with-skill vs baseline verdict is the one a run without --ablate gives)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from executors.agent import usage_of
from executors.sandbox import Isolation
from executors.schema import AgentSession
from flows.inputs.skill_config import Skill, SkillBenchConfig
from flows.modes.agentic.matrix_report import agent_lift
from flows.modes.agentic.model import AgenticMeta, AgenticReport, BehaviorSummary, Contamination
from flows.modes.agentic.plan import Session
from flows.modes.agentic.portability import certificate, listed, measured_of, skill_findings
from flows.report.ablation import ablation
from flows.report.build import agent_cli_meta, assemble, isolation_meta, run_meta, variant_entry
from flows.report.entries import AgentRun, AgentVariantResult, CaseResult
from graders.agent_task import AgentTask
from graders.grades import WEIGHTS, Behavior, CheckResults, SessionGrade
from tasks.schema import AGENTIC_SCALE, Arm, Record, RunStats, TranscriptStep
from tasks.stats.aggregate import aggregate
from tasks.stats.figures import Aggregate, CaseStats

#: The order arms appear in the report: the control first.
REPORT_ARMS = [Arm.BASELINE, Arm.WITH_SKILL]
TRANSCRIPT_CHARS = 600
#: What a case's entry takes from its task as it is.
TASK_FIELDS = ("name", "prompt", "type", "difficulty", "category", "rubric")


@dataclass(frozen=True)
class Graded:
    """One session with everything known about it after grading."""

    plan: Session
    session: AgentSession
    checks: CheckResults
    behavior: Behavior
    grade: SessionGrade
    contaminated: str | None


def prompt_tokens(session: AgentSession) -> int | None:
    """Every input token of the session, however billed (what a longer SKILL.md costs)."""
    if not session.meta.usage:
        return None
    u = usage_of(session.meta)
    return u.input_tokens + u.cache_read_tokens + u.cache_write_tokens


def session_entry(g: Graded) -> AgentRun:
    s, session = g.plan, g.session
    return AgentRun(
        run=s.run,
        ok=session.ok,
        status="contaminated" if g.contaminated else session.status,
        # a failed or excluded session is an error, not a 0: it has no score (the grade file keeps the seed's)
        composite_score=g.grade.weighted_total if session.ok and not g.contaminated else None,
        grade=g.grade,
        contaminated=g.contaminated,
        checks=g.checks.totals(),
        check_details=g.checks.details,
        criteria=g.grade.criteria(),
        behavior=g.behavior,
        output=session.final_text,
        error=session.error,
        duration_ms=session.duration_ms,
        cost_usd=session.cost_usd,
        usage=session.meta.usage,
        input_tokens=prompt_tokens(session),
        num_turns=session.meta.num_turns,
        conversation=list(session.conversation) or None,
        transcript=[
            TranscriptStep(
                kind=e.kind,
                tool=e.tool,
                text=(e.text or json.dumps(e.input or {}))[:TRANSCRIPT_CHARS],
                is_error=e.is_error,
            )
            for e in session.events
        ],
        outputs=str(s.outputs),
        **({"reused_from": origin} if (origin := session.meta.reused_from) else {}),
    )


def task_results(
    tasks: list[AgentTask],
    graded: list[Graded],
    case_stats: dict[str, dict[str, CaseStats]],
    arms: list[str],
    skill: str,
) -> list[CaseResult[AgentVariantResult]]:
    """Each task with its arms' results; ``expect`` the artifact's name where the task expects it
    to be used, "none" where it expects it not to be, absent where the task does not say."""
    per_task: dict[str, dict[str, list[AgentRun]]] = {}
    for g in graded:
        per_task.setdefault(g.plan.task.task_id, {}).setdefault(g.plan.mode, []).append(session_entry(g))
    results = []
    for t in tasks:
        sessions = per_task.get(t.task_id, {})
        entries: dict[str, AgentVariantResult] = {}
        for mode in arms:
            runs = sessions.get(mode, [])
            if runs:
                scores = [r.composite_score for r in runs if r.composite_score is not None]
                mean = sum(scores) / len(scores) if scores else None
                entries[str(mode)] = variant_entry(
                    AgentVariantResult, runs, case_stats.get(t.task_id, {}).get(mode, {}), mean
                )
        results.append(
            CaseResult[AgentVariantResult](
                sample_id=t.task_id,
                tags=list(t.tags),
                variants=entries,
                expect={True: skill, False: "none", None: None}[t.expects_skill],
                **{name: getattr(t, name) for name in TASK_FIELDS},
            )
        )
    return results


def criteria_means(graded: list[Graded], arms: list[str]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for mode in arms:
        grades = [
            g.grade.criteria()
            for g in graded
            if g.plan.mode == mode and g.contaminated is None and g.grade.correctness is not None
        ]
        out[mode] = {k: (sum(x[k] for x in grades) / len(grades) if grades else None) for k in WEIGHTS}
    return out


def ran_on(asked: str, sessions: Iterable[AgentSession]) -> str:
    """The model(s) sessions ran on as their answers named them (an alias such as ``sonnet`` moves),
    with the name asked for where it differs; the name asked for when no session named one."""
    named = sorted({m for s in sessions if (m := s.meta.model)})
    if not named or named == [asked]:
        return asked
    return f"{', '.join(named)} (asked: {asked})"


def case_settings(tasks: list[AgentTask], config: SkillBenchConfig, graded: list[Graded]) -> dict[str, str]:
    """What each plugin eval case ran with, where it set its own model, turns, timeout or runs (the
    header's --runner-model and --max-turns do not describe those cases)."""
    out = {}
    for t in tasks:
        case = t.plugin_case
        if case is None:
            continue
        sessions = [g.session for g in graded if g.plan.task.task_id == t.task_id]
        model = ran_on(case.model or config.runner_model, sessions)
        runs = config.runs if "runs" in config.model_fields_set else case.runs
        extra = [f"tools {', '.join(case.allowed_tools)}"] if case.allowed_tools else []
        extra += [f"scaffold {case.scaffold_script}"] if case.scaffold_script else []
        extra += [f"add_dirs {', '.join(case.add_dirs)}"] if case.add_dirs else []
        settings = [
            f"model {model}",
            f"{case.max_turns} turns",
            f"{case.timeout_seconds} s",
            f"{runs} run(s)",
            *extra,
        ]
        out[t.task_id] = ", ".join(settings)
    return out


def behavior_summary(graded: list[Graded], arms: list[str]) -> dict[str, BehaviorSummary]:
    out: dict[str, BehaviorSummary] = {}
    for mode in arms:
        rows = [(g.session, g.behavior) for g in graded if g.plan.mode == mode and g.contaminated is None]
        n = len(rows) or 1
        out[mode] = BehaviorSummary(
            avg_tool_calls=sum(b.total_tool_calls for _, b in rows) / n,
            avg_turns=sum(b.turns or 0 for _, b in rows) / n,
            thrashing=sum(1 for _, b in rows if b.thrashing_detected),
            sessions=len(rows),
            avg_duration_s=sum(s.duration_ms for s, _ in rows) / n / 1000,
            avg_cost_usd=sum(s.cost_usd for s, _ in rows) / n,
            total_cost_usd=sum(s.cost_usd for s, _ in rows),
            skill_invoked=sum(1 for _, b in rows if b.skill_invoked),
            errors_encountered=sum(b.errors_encountered for _, b in rows),
            errors_recovered=sum(b.errors_recovered for _, b in rows),
            max_turns_hit=sum(1 for _, b in rows if b.max_turns_hit),
            permission_denials=sum(b.permission_denials for _, b in rows),
            skills_called=dict(Counter(n for _, b in rows for n in set(b.skills_invoked))),
        )
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
    ablated: dict[str, str] = field(default_factory=dict)  # --ablate: arm -> the section it leaves out
    cli_version: str | None = None  # the agent CLI's --version before the run (None: not told)
    warnings: list[str] = field(default_factory=list)  # what the report must say about the suite
    judge_cost: float = 0.0  # what the judge's calls cost, USD
    stats: RunStats = field(default_factory=RunStats)  # sessions started, and those the budget kept back

    @property
    def arms(self) -> list[str]:
        """The report's arms: the control first, then the with-skill arm and any ablated ones."""
        return [*map(str, REPORT_ARMS), *self.ablated]


def agentic_meta(run: AgenticRun, graded: list[Graded], records: list[Record]) -> AgenticMeta:
    config, skill, tasks, suite_hash, results, started = (
        run.config,
        run.skill,
        run.tasks,
        run.suite_hash,
        run.results,
        run.started,
    )
    return AgenticMeta(
        skill=skill.name,
        skill_path=str(skill.path),
        skill_sha256=skill.sha256,
        variants=run.arms,
        control=Arm.BASELINE,
        model=ran_on(config.runner_model, (g.session for g in graded)),
        executor=config.runner,
        judge_model=f"{config.judge_executor}:{config.judge_model}",
        sample_count=len(tasks),
        task_count=len(graded),
        runs=config.runs,
        repeat=config.runs,
        max_turns=config.max_turns,
        suite_sha256=suite_hash,
        results_dir=str(results),
        seed=config.seed,
        total_cost_usd=sum(r.result.cost_usd for r in records),
        **isolation_meta(run.isolation, config.allow_network, config.fleet_pool),
        warnings=run.warnings,
        judge_cost_usd=round(run.judge_cost, 6),
        case_settings=case_settings(run.tasks, config, graded) or None,
        **agent_cli_meta(config.runner, [g.session.meta.cli_version for g in graded], run.cli_version),
        plugin=plugin.summary(config.plugin_mcp) if (plugin := skill.plugin) else None,
        **run_meta(started, run.stats),
        contaminated=[
            Contamination(task=g.plan.task.task_id, mode=g.plan.mode, run=g.plan.run, reason=g.contaminated)
            for g in graded
            if g.contaminated
        ],
        **reused_meta(graded),
    )


def reused_meta(graded: list[Graded]) -> dict[str, Any]:
    """How many baseline sessions were taken from earlier runs, and which (absent when none was)."""
    origins = [o for g in graded if (o := g.session.meta.reused_from)]
    return {"reused_sessions": len(origins), "reused_from": sorted(set(origins))} if origins else {}


def ablation_aggregate(run: AgenticRun, records: list[Record]) -> Aggregate | None:
    """--ablate: the ablated arms against the full skill (the control), Holm-adjusted over the
    sections only, apart from the with-skill vs baseline comparison."""
    arms = [str(Arm.WITH_SKILL), *run.ablated]
    chosen = [r for r in records if r.variant in arms]
    if not run.ablated or not chosen:
        return None
    return aggregate(
        chosen,
        [],
        arms,
        Arm.WITH_SKILL,
        AGENTIC_SCALE,
        seed=run.config.seed,
        max_error_rate=run.config.max_error_rate,
    )


def add_ablation(run: AgenticRun, agg: Aggregate, report: AgenticReport) -> None:
    """The ablated arms' figures join the summary; their comparisons go into the section ablation
    only (the gates and the headline verdict stay with-skill vs baseline)."""
    for arm in run.ablated:
        report.summary[arm] = agg.summary[arm]
    view = report.model_copy(
        update={"comparisons": agg.comparisons, "multiple_comparisons": agg.multiple_comparisons}
    )
    skill_md = str(run.skill.path / "SKILL.md")
    report.ablation = ablation(view, skill_md, Arm.WITH_SKILL, run.ablated, per="session")


def case_stats(*aggs: Aggregate | None) -> dict[str, dict[str, CaseStats]]:
    """Per task and arm, from every aggregate (the first one's figures win where they overlap)."""
    out: dict[str, dict[str, CaseStats]] = {}
    for agg in reversed([a for a in aggs if a]):
        for task, arms in agg.case_stats.items():
            out.setdefault(task, {}).update(arms)
    return out


def build_skill_report(run: AgenticRun, graded: list[Graded], records: list[Record]) -> AgenticReport:
    config, skill, tasks, started = run.config, run.skill, run.tasks, run.started
    main = [r for r in records if r.variant in REPORT_ARMS]
    agg = (
        aggregate(
            main,
            [],
            [str(a) for a in REPORT_ARMS],
            Arm.BASELINE,
            AGENTIC_SCALE,
            seed=config.seed,
            max_error_rate=config.max_error_rate,
        )
        if main
        else None
    )
    sections = ablation_aggregate(run, records)
    case_results = task_results(tasks, graded, case_stats(agg, sections), run.arms, run.skill.name)
    # a task without checks (a skill-creator eval judged on its expectations) has no check to pass
    passes = {
        mode: [
            g.checks.all_passed
            for g in graded
            if g.plan.mode == mode and (g.checks.details or g.checks.plugin_eval is not None)
        ]
        for mode in run.arms
    }
    report = assemble(
        AgenticReport,
        f"{started.strftime('%Y-%m-%dT%H-%M-%S')}-skill-{skill.name}",
        agentic_meta(run, graded, records),
        AGENTIC_SCALE,
        agg,
        case_results,
        run.stats,
        criteria=criteria_means(graded, run.arms),
        deterministic_pass_rate={m: (sum(v) / len(v) if v else None) for m, v in passes.items()},
        deterministic_checked={m: len(v) for m, v in passes.items()},
        negative_controls=[r for r in case_results if r.type == "negative-control"],
        behavior=behavior_summary(graded, run.arms),
    )
    lift = agent_lift(config.runner, report.meta.model, report, None)
    required = config.require_portable
    report.portability = certificate(
        skill_findings(skill), {config.runner: measured_of(lift)}, listed(skill), required
    )
    if sections is not None:
        add_ablation(run, sections, report)
    return report
