"""The cross-agent report (``skill run --runner A,B,...``): each agent's own agentic run merged into
one report whose variants are ``<runner>/<arm>``, with the matrix: the skill's lift on each agent
(its own paired comparison and verdict) and, task by task, how each agent's lift differs from the
first agent's (the interaction)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from flows.modes.agentic.model import AgenticMeta, AgenticReport
from flows.report.ci import validity_markdown
from flows.report.diagnosis_parts import AgentInteraction, AgentLift, AgentMatrix
from flows.report.entries import AgentVariantResult, CaseResult
from flows.report.logtext import md
from flows.report.validity import combined
from tasks.schema import Arm, VerdictLabel
from tasks.stats.agents import pooled_lift
from tasks.stats.figures import Comparison, Paired
from tasks.stats.statistics import ALPHA, paired

#: What a verdict says of a skill on one agent, in words that claim no more than the label.
EFFECT_WORDS = {
    VerdictLabel.BETTER: "helps on",
    VerdictLabel.WORSE: "hurts on",
    VerdictLabel.EQUIVALENT: "makes no practical difference on",
}


def agent_report(root: Path, runner: str) -> Path | None:
    """The report an agent's own run wrote below the matrix's results tree (None: it wrote none)."""
    written = sorted((root / runner).glob("*/report.json"))
    return written[-1] if written else None


T = TypeVar("T")


def arm_name(runner: str, arm: str) -> str:
    return f"{runner}/{arm}"


def _prefixed(runner: str, values: Mapping[str, T] | None) -> dict[str, T]:
    return {arm_name(runner, k): v for k, v in (values or {}).items()}


def _figure(value: float | None) -> str:
    return "?" if value is None else f"{value:+.1f}"


def main_comparison(report: AgenticReport) -> Comparison | None:
    """with-skill against baseline (an --ablate run has further comparisons)."""
    return next(
        (c for c in report.comparisons if c.treatment == Arm.WITH_SKILL and c.control == Arm.BASELINE),
        None,
    )


#: A row whose agent left no report: nothing measured (each field set: the report's JSON names them).
NOTHING_MEASURED: dict[str, Any] = {
    **dict.fromkeys(("report", "paired", "verdict", "invoked_rate")),
    "sessions": 0,
    "errors": 0,
}


def agent_lift(runner: str, model: str, report: AgenticReport | None, failure: str | None) -> AgentLift:
    """One row of the matrix from the agent's own report (None: its run ended before one)."""
    if report is None:
        line = f"{runner}: no report ({failure or 'the run failed'})"
        return AgentLift(runner=runner, model=model, line=line, **NOTHING_MEASURED)
    comp = main_comparison(report)
    arms = [s for a, s in report.summary.items() if a in (Arm.WITH_SKILL, Arm.BASELINE)]
    behavior = (report.behavior or {}).get(Arm.WITH_SKILL)
    rate = behavior.skill_invoked / behavior.sessions if behavior and behavior.sessions else None
    if comp is None or comp.verdict.label == VerdictLabel.INSUFFICIENT_DATA:
        line = f"{runner}: insufficient data ({comp.cases if comp else 0} task(s) completed in both arms)"
    else:
        p = comp.paired
        label = comp.verdict.label
        figures = f"{_figure(p.mean)} points {spread(p)} over {comp.cases} task(s)"
        if label in EFFECT_WORDS:
            line = f"{EFFECT_WORDS[label]} {runner}: {figures} ({label})"
        else:  # no effect is claimed
            line = f"{runner}: {label}, {figures}"
    return AgentLift(
        runner=runner,
        model=report.meta.model,
        agent_cli_version=report.meta.agent_cli_version,
        report=report.id,
        paired=comp.paired if comp else None,
        verdict=comp.verdict if comp else None,
        invoked_rate=rate,
        sessions=sum(s.executions for s in arms),
        errors=sum(s.error_count for s in arms),
        line=line,
    )


def spread(p: Paired) -> str:
    """The interval of a mean difference as words can state it: none when every difference is equal."""
    if p.se:
        return f"[{_figure(p.ci_low)}, {_figure(p.ci_high)}]"
    test = "" if p.p_sign is None else f", exact sign test p={p.p_sign:.2g}"
    return f"(every task the same difference: no interval{test})"


def interaction(
    runner: str, reference: str, a: Comparison, b: Comparison, seed: int
) -> AgentInteraction | None:
    """``runner``'s lift minus ``reference``'s, over the tasks both scored; None under two tasks."""
    common = [t for t in b.per_case if t in a.per_case]
    if len(common) < 2:
        return None
    figures = paired([a.per_case[t] - b.per_case[t] for t in common], seed=seed)
    low, high, mean = figures.ci_low, figures.ci_high, figures.mean or 0.0
    if figures.se:  # the interval decides
        differs = low is not None and high is not None and (low > 0 or high < 0)
    else:  # every difference equal: the exact sign test decides, as it does for a verdict
        differs = mean != 0 and figures.p_sign is not None and figures.p_sign < ALPHA
    said = (
        f"lift on {runner} minus lift on {reference}: {_figure(figures.mean)} points {spread(figures)} "
        f"over {len(common)} tasks: "
    )
    if differs:
        said += f"the skill helps {runner} {'more' if mean > 0 else 'less'} than {reference}"
    else:
        said += "no evidence that the skill helps them differently"
    return AgentInteraction(runner=runner, reference=reference, paired=figures, differs=differs, line=said)


def build_matrix(
    runners: list[str],
    models: dict[str, str],
    reports: dict[str, AgenticReport],
    failures: dict[str, str],
    seed: int,
) -> AgentMatrix:
    reference = runners[0]
    lifts = [agent_lift(r, models[r], reports.get(r), failures.get(r)) for r in runners]
    base = main_comparison(reports[reference]) if reference in reports else None
    pairs = []
    for r in runners[1:]:
        comp = main_comparison(reports[r]) if r in reports else None
        if base is not None and comp is not None:
            pairs.append(interaction(r, reference, comp, base, seed))
    lifted = {
        r: c.per_case for r in runners if r in reports and (c := main_comparison(reports[r])) is not None
    }
    return AgentMatrix(
        reference=reference,
        agents=lifts,
        interactions=[p for p in pairs if p is not None],
        pooled=pooled_lift(lifted),
    )


def merged_cases(reports: dict[str, AgenticReport], negative: bool) -> list[CaseResult[AgentVariantResult]]:
    """Each task once, with every agent's arms as its variants, in the first report's order."""
    merged: dict[str, CaseResult[AgentVariantResult]] = {}
    for runner, report in reports.items():
        for case in (report.negative_controls or []) if negative else report.results:
            variants = _prefixed(runner, case.variants)
            if case.sample_id in merged:
                merged[case.sample_id].variants.update(variants)
            else:
                merged[case.sample_id] = case.model_copy(update={"variants": variants})
    return list(merged.values())


def merged_meta(
    runners: list[str], models: dict[str, str], reports: dict[str, AgenticReport], failures: dict[str, str]
) -> AgenticMeta:
    """The first agent's meta with every agent's arms, models, counts and costs, and why an agent
    wrote no report."""
    first = reports[next(r for r in runners if r in reports)]
    metas = [r.meta for r in reports.values()]
    return first.meta.model_copy(
        update={
            "variants": [arm_name(r, a) for r, rep in reports.items() for a in rep.meta.variants],
            "control": arm_name(runners[0], Arm.BASELINE),
            "model": ", ".join(f"{r}:{models[r]}" for r in runners),
            "executor": ",".join(runners),
            "sample_count": max(m.sample_count for m in metas),
            "task_count": sum(m.task_count for m in metas),
            "total_cost_usd": sum(m.total_cost_usd for m in metas),
            "judge_cost_usd": sum(m.judge_cost_usd or 0.0 for m in metas),
            "agent_cli_version": "; ".join(v for m in metas if (v := m.agent_cli_version)) or None,
            "contaminated": [c for m in metas for c in m.contaminated],
            "calls": sum(m.calls or 0 for m in metas),
            "not_run": [
                u.model_copy(update={"variant": arm_name(r, u.variant)})
                for r, rep in reports.items()
                for u in rep.meta.not_run
            ],
            "warnings": list(dict.fromkeys(w for m in metas for w in m.warnings)),
            "notices": [*first.meta.notices, *(f"{r}: {why}" for r, why in failures.items())],
        }
    )


def matrix_report(
    report_id: str,
    runners: list[str],
    models: dict[str, str],
    reports: dict[str, AgenticReport],
    failures: dict[str, str],
    matrix: AgentMatrix,
    *,
    results_dir: str,
    flow_run: str | None = None,
) -> AgenticReport:
    """The one report of a cross-agent run. Needs at least one agent's report (its meta is the base)."""
    first = reports[next(r for r in runners if r in reports)]
    meta = merged_meta(runners, models, reports, failures).model_copy(
        update={"results_dir": results_dir, "prefect_flow_run": flow_run}
    )
    negatives = merged_cases(reports, negative=True)
    return AgenticReport(
        id=report_id,
        mode="agentic",
        meta=meta,
        summary={k: v for r, rep in reports.items() for k, v in _prefixed(r, rep.summary).items()},
        comparisons=[
            c.model_copy(update={"control": arm_name(r, c.control), "treatment": arm_name(r, c.treatment)})
            for r, rep in reports.items()
            for c in rep.comparisons
        ],
        scale=first.scale,
        results=merged_cases(reports, negative=False),
        criteria={k: v for r, rep in reports.items() for k, v in _prefixed(r, rep.criteria).items()},
        deterministic_pass_rate={
            k: v for r, rep in reports.items() for k, v in _prefixed(r, rep.deterministic_pass_rate).items()
        },
        deterministic_checked={
            k: v for r, rep in reports.items() for k, v in _prefixed(r, rep.deterministic_checked).items()
        },
        negative_controls=negatives or None,
        behavior={k: v for r, rep in reports.items() for k, v in _prefixed(r, rep.behavior).items()},
        matrix=matrix,
        validity=combined({r: rep.validity for r, rep in reports.items()}),
    )


def _cell(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def matrix_markdown(report: AgenticReport, matrix: AgentMatrix) -> str:
    """report.md of a cross-agent run: the matrix first, each agent's own report.md for the rest."""
    meta = report.meta
    lines = [
        f"# Cross-Agent Skill Report: {meta.skill}",
        "",
        f"The suite ran on {len(matrix.agents)} agents with and without the skill "
        f"({meta.sample_count} tasks, {meta.runs or 1} run(s) per task and arm, judge {meta.judge_model}); "
        "scores are 0-100, a lift is with-skill minus baseline per task.",
        "",
        "| Agent | Model | With skill | Baseline | Lift [95% CI] | Verdict | Skill loaded | Errors |",
        "|-------|-------|-----------:|---------:|---------------|---------|-------------:|-------:|",
    ]
    for a in matrix.agents:
        with_skill = report.summary.get(arm_name(a.runner, Arm.WITH_SKILL))
        baseline = report.summary.get(arm_name(a.runner, Arm.BASELINE))
        p = a.paired
        lift = "—" if p is None else f"{_figure(p.mean)} {spread(p)}"
        loaded = "—" if a.invoked_rate is None else f"{a.invoked_rate:.0%}"
        lines.append(
            f"| {a.runner} | {a.model} | {_cell(with_skill.avg_composite_score if with_skill else None)} "
            f"| {_cell(baseline.avg_composite_score if baseline else None)} | {lift} "
            f"| {a.verdict.label if a.verdict else '—'} | {loaded} | {a.errors}/{a.sessions} |"
        )
    lines += ["", "## What it means", ""]
    for a in matrix.agents:  # a lint finding beside the cell it may explain
        lines += [f"- {a.line}", *(f"  - the lint: {md(f)}" for f in a.findings)]
    if matrix.interactions or matrix.pooled:
        lines += ["", f"## Between agents (against {matrix.reference}, paired by task)", ""]
        lines += [f"- {i.line}" for i in matrix.interactions]
        if matrix.pooled:
            lines += [f"- {matrix.pooled.line} ({matrix.pooled.model})"]
    lines += portability_markdown(report)
    lines += validity_markdown(report, "##")
    lines += ["", "## Each agent's report", ""]
    lines += [f"- {a.runner}: {a.report or 'none'} ({meta.results_dir}/{a.runner}/)" for a in matrix.agents]
    if meta.notices:
        lines += ["", "## Notices", "", *(f"- {n}" for n in meta.notices)]
    return "\n".join([*lines, ""])


def portability_markdown(report: AgenticReport) -> list[str]:
    """report.md's certificate of portability: a line per agent CLI, with the lint's findings."""
    if report.portability is None:
        return []
    lines = ["", "## Portability", "", "| Agent | Status | Listed | Why |", "|---|---|---|---|"]
    for a in report.portability.agents:
        why = a.line.split(": ", 1)[1] if ": " in a.line else a.line
        lines.append(f"| {a.agent} | {a.status} | {a.listed or '—'} | {md(why)} |")
    findings = [f for a in report.portability.agents for f in a.findings]
    if findings:
        lines += ["", "What the lint found (SKILL.md against each agent's recorded behaviour):", ""]
        lines += [f"- {f.severity}: {md(f.text)}" for f in findings]
    return lines
