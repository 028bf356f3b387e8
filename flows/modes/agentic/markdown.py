"""report.md in the seed's format, with the paired verdict beside the seed's band."""

from __future__ import annotations

from collections.abc import Callable

from flows.modes.agentic.matrix_report import matrix_markdown, portability_markdown
from flows.modes.agentic.model import AgenticReport, BehaviorSummary
from flows.report.ci import validity_markdown
from flows.report.entries import AgentVariantResult, CaseResult
from flows.report.explain import explain_markdown
from flows.report.logtext import md, uncertified
from graders.grades import WEIGHTS
from tasks.schema import Arm, VerdictLabel
from tasks.stats.figures import Comparison

EMOJI = {"USE": "✅", "LIKELY USE": "👍", "NEUTRAL": "➖", "LIKELY DON'T USE": "⚠️", "DON'T USE": "❌"}
BEHAVIOR_ROWS = (
    ("avg_tool_calls", "Avg Tool Calls", ""),
    ("avg_turns", "Avg Turns", ""),
    ("avg_duration_s", "Avg Duration (s)", ""),
    ("avg_cost_usd", "Avg Cost", "$"),
    ("total_cost_usd", "Total Cost", "$"),
)


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}%"


def _delta(a: float | None, b: float | None, unit: str = "%") -> str:
    if a is None or b is None:
        return "—"
    if unit == "$":
        return f"{'+' if a >= b else '-'}${abs(a - b):.4f}"
    return f"{a - b:+.1f}{unit}"


def _score(case: CaseResult[AgentVariantResult], arm: Arm) -> float | None:
    entry = case.variants.get(arm)
    return entry.composite_score if entry else None


def _header(report: AgenticReport, comp: Comparison | None) -> list[str]:
    meta = report.meta
    skill, base = report.summary.get(Arm.WITH_SKILL), report.summary.get(Arm.BASELINE)
    verdict = comp.verdict if comp else None
    # the headline is the band only where the verdict settles it, else the verdict itself
    band = (verdict.band or str(verdict.label)) if verdict else "INSUFFICIENT DATA"
    mark = uncertified(report, verdict) if verdict else ""
    band = str(verdict.label) if verdict and mark else band  # no USE beside "not certified"
    mean_s = skill.avg_composite_score if skill else None
    mean_b = base.avg_composite_score if base else None
    delta = None if mean_s is None or mean_b is None else mean_s - mean_b
    scope = "on average"
    runs = sorted({len(v.runs or [v]) for r in report.results for v in r.variants.values()})
    if comp is not None and comp.paired.mean is not None and (comp.cases_dropped or len(runs) > 1):
        # The arms' session averages would weigh tasks unequally (a replay case runs one arm, plugin
        # eval cases their own runs): the headline is then the paired mean, each task counted once.
        delta = comp.paired.mean
        scope = f"on average over the {comp.cases} tasks scored in both arms, each task counted once"
        if comp.cases_dropped:
            scope += f" ({comp.cases_dropped} with a score in one arm only left out)"
    lines = [
        f"# Skill Benchmark Report: {md(meta.skill)}",
        f"Date: {meta.timestamp[:16].replace('T', ' ')}",
        f"Runner Model: {meta.model} ({meta.executor}"
        + ("; cases may set their own: see Case Settings" if meta.case_settings else "")
        + f") | Judge Model: {meta.judge_model} | "
        f"Tasks: {meta.sample_count} | Runs: {_runs(runs, meta.runs)}",
        *([f"Agent CLI: {meta.agent_cli_version}"] if meta.agent_cli_version else []),
        *([f"Plugin: {md(meta.plugin)}"] if meta.plugin else []),
        *(
            [
                f"Sandbox: {meta.sandbox_version or meta.isolation}; network: {meta.network}"
                + (f"; in containers of the work pool {meta.fleet_pool}" if meta.fleet_pool else "")
            ]
            if meta.network
            else []
        ),
        *([f"Reused: {reused}"] if (reused := report.meta.reused_line()) else []),
        "",
        f"## Verdict: {EMOJI.get(band, '')} {band}{mark}",
        f"**Skill scores {abs(delta or 0):.1f} points {'higher' if (delta or 0) >= 0 else 'lower'} (0-100) than baseline {scope}.**"
        if delta is not None
        else "**Not enough completed sessions to compare.**",
        "",
        f"Paired analysis over tasks: **{verdict.label if verdict else 'INSUFFICIENT DATA'}{mark}** — "
        f"{verdict.reason if verdict else ''}",
        "",
        "## Summary",
        "| Metric | With Skill | Baseline | Delta |",
        "|--------|-----------|----------|-------|",
        f"| Avg Score | {_pct(mean_s)} | {_pct(mean_b)} | {_delta(mean_s, mean_b)} |",
    ]
    crit = report.criteria or {}
    for name in WEIGHTS:
        a, b = crit.get(Arm.WITH_SKILL, {}).get(name), crit.get(Arm.BASELINE, {}).get(name)
        if a is not None or b is not None:  # a plugin suite's graders decide it: no criteria rows
            lines.append(f"| {name.title()} | {_pct(a)} | {_pct(b)} | {_delta(a, b)} |")
    return lines


def _checks(report: AgenticReport) -> list[str]:
    rates = report.deterministic_pass_rate or {}
    checked = report.deterministic_checked or {}
    # a plugin suite's checks are its scored graders, judged (llm, baseline) ones included
    title = (
        "Grader Pass Rate (every scored grader)"
        if report.meta.case_settings
        else "Deterministic Check Pass Rate"
    )
    if all(rates.get(mode) is None for mode in (Arm.WITH_SKILL, Arm.BASELINE)):
        return ["", f"## {title}", "No task of this suite has deterministic checks."]
    lines = ["", f"## {title}", "| Condition | Pass Rate |", "|-----------|-----------|"]
    for mode, label in ((Arm.WITH_SKILL, "With Skill"), (Arm.BASELINE, "Baseline")):
        r = rates.get(mode)
        n = checked.get(
            mode, report.meta.sample_count * (report.meta.runs or 1)
        )  # older reports: every session
        lines.append(
            f"| {label} | {round((r or 0) * n)}/{n} sessions ({_pct(None if r is None else r * 100)}) |"
        )
    return lines


def _tasks(
    report: AgenticReport,
) -> tuple[list[str], list[CaseResult[AgentVariantResult]], list[CaseResult[AgentVariantResult]]]:
    lines = [
        "",
        "## Per-Task Breakdown",
        "| # | Task | Type | Difficulty | Skill | Baseline | Delta | Winner |",
        "|---|------|------|-----------|-------|----------|-------|--------|",
    ]
    helps, hurts = [], []
    for i, r in enumerate(report.results, start=1):
        s, b = _score(r, Arm.WITH_SKILL), _score(r, Arm.BASELINE)
        winner = "—" if s is None or b is None else "Skill" if s > b else "Baseline" if b > s else "Tie"
        if winner == "Skill":
            helps.append(r)
        elif winner == "Baseline":
            hurts.append(r)
        kind = "negative" if r.type == "negative-control" else "positive"
        lines.append(
            f"| {i} | {md(r.name)} | {kind} | {md(r.difficulty) if kind == 'positive' else '-'} | "
            f"{_pct(s)} | {_pct(b)} | {_delta(s, b)} | {winner} |"
        )
    one_arm = [
        md(r.name or r.sample_id)
        for r in report.results
        if (_score(r, Arm.WITH_SKILL) is None) != (_score(r, Arm.BASELINE) is None)
    ]
    if one_arm:
        lines += [
            "",
            f"Scored in one arm only, so not in the comparison: {', '.join(one_arm)} (a replay case "
            "of a plugin eval suite runs with the plugin only; otherwise every session of the other "
            "arm failed).",
        ]
    lines += ["", "## Negative Control Results"]
    negatives = report.negative_controls or []
    if not negatives:
        lines.append(
            "No negative-control task in this suite: add one to catch a skill that hurts unrelated work."
        )
    for r in negatives:
        s, b = _score(r, Arm.WITH_SKILL), _score(r, Arm.BASELINE)
        hurt = s is not None and b is not None and s < b - 3
        flag = " **The skill hurt an out-of-domain task: a red flag.**" if hurt else ""
        lines.append(f"- {md(r.name)}: with skill {_pct(s)}, baseline {_pct(b)}.{flag}")
    lines += ["", "## Where Skill Helps"] + (
        [f"- {md(r.name)} ({md(r.difficulty)}, {md(r.category)})" for r in helps]
        or ["- No task where the skill scored higher."]
    )
    lines += ["", "## Where Skill Hurts"] + (
        [f"- {md(r.name)} ({md(r.difficulty)}, {md(r.category)})" for r in hurts]
        or ["- No task where the baseline scored higher."]
    )
    return lines, helps, hurts


def _runs(counts: list[int], configured: int | None) -> str:
    """The runs each task had (plugin eval cases may run their own number), else the configured."""
    if not counts:
        return str(configured)
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]} per task"


def _expectations(report: AgenticReport) -> list[str]:
    """skill-creator evals: how often each expectation held in each arm, over the sessions judged."""
    rows: list[tuple[str, str, dict[str, list[int]]]] = []
    for r in report.results:
        tally: dict[str, dict[str, list[int]]] = {}
        for arm in (Arm.WITH_SKILL, Arm.BASELINE):
            entry = r.variants.get(arm)
            for run in (entry.runs or [entry]) if entry is not None else []:
                for e in (run.grade.expectations or []) if run.grade is not None else []:
                    count = tally.setdefault(e.text, {}).setdefault(arm, [0, 0])
                    count[0] += int(e.passed)
                    count[1] += 1
        rows += [(r.name or r.sample_id, text, arms) for text, arms in tally.items()]
    if not rows:
        return []

    def held(count: list[int] | None) -> str:
        return f"{count[0]}/{count[1]}" if count else "—"

    lines = [
        "",
        "## Expectations",
        "| Task | Expectation | With Skill | Baseline |",
        "|------|-------------|-----------|----------|",
    ]
    for task, text, arms in rows:
        lines.append(
            f"| {md(task)} | {md(text)} | {held(arms.get(Arm.WITH_SKILL))} | {held(arms.get(Arm.BASELINE))} |"
        )
    return lines


def _behavior(s_b: BehaviorSummary | None, b_b: BehaviorSummary | None) -> list[str]:
    lines = [
        "",
        "## Behavioral Analysis",
        "| Metric | With Skill | Baseline | Delta |",
        "|--------|-----------|----------|-------|",
    ]
    for key, label, unit in BEHAVIOR_ROWS:
        a = getattr(s_b, key) if s_b else None
        b = getattr(b_b, key) if b_b else None
        fmt: Callable[[float | None], str] = (
            (lambda v: "—" if v is None else f"${v:.4f}")
            if unit == "$"
            else (lambda v: "—" if v is None else f"{v:.1f}")
        )
        lines.append(f"| {label} | {fmt(a)} | {fmt(b)} | {_delta(a, b, unit)} |")

    def ratio(summary: BehaviorSummary | None, field: str) -> str:
        return f"{getattr(summary, field) if summary else 0}/{summary.sessions if summary else 0}"

    lines.append(f"| Thrashing Detected | {ratio(s_b, 'thrashing')} | {ratio(b_b, 'thrashing')} | |")
    lines.append(f"| Skill Invoked | {ratio(s_b, 'skill_invoked')} | {ratio(b_b, 'skill_invoked')} | |")
    called = (s_b.skills_called if s_b else None) or {}
    if len(called) > 1 or (called and s_b and sum(called.values()) != s_b.skill_invoked):
        lines += [
            "",
            "Skills the with-skill sessions called: "
            + ", ".join(
                f"{md(name)} ({n}/{s_b.sessions if s_b else 0})" for name, n in sorted(called.items())
            ),
        ]
    return lines


def _not_invoked_where_expected(report: AgenticReport) -> int:
    """With-skill sessions of tasks that expect the skill in which it was never invoked (a task that
    expects it not to fire, or says nothing, gives no such advice)."""
    missed = 0
    for case in report.results:
        entry = case.variants.get(Arm.WITH_SKILL)
        if case.expect in (None, "none") or entry is None:
            continue
        for run in entry.runs or [entry]:
            if run.behavior is not None and not run.behavior.skill_invoked and run.ok:
                missed += 1
    return missed


def _recommendations(
    report: AgenticReport, comp: Comparison | None, hurts: list[CaseResult[AgentVariantResult]]
) -> list[str]:
    recs = list(report.analysis.suggestions)
    verdict = comp.verdict if comp else None
    if verdict and verdict.label == VerdictLabel.UNDERPOWERED:
        recs.append(
            f"Add tasks: about {verdict.cases_needed} are needed for a BETTER verdict at an effect of "
            f"{verdict.min_effect:g} points (margin {verdict.margin:g})."
        )
    if hurts:
        recs.append(
            "Review the tasks where the baseline won: " + ", ".join(md(r.name or r.sample_id) for r in hurts)
        )
    contaminated = report.meta.contaminated
    if contaminated:
        recs.append(
            f"{len(contaminated)} session(s) were contaminated and excluded: "
            + "; ".join(f"{c.task} {c.mode}: {c.reason}" for c in contaminated)
        )
    missed = _not_invoked_where_expected(report)
    if missed:
        recs.append(
            f"The skill was not invoked in {missed} with-skill session(s) of tasks that expect it: "
            "check its trigger description."
        )
    return ["", "## Recommendations"] + ([f"- {r}" for r in recs] or ["- None."])


def report_markdown(report: AgenticReport) -> str:
    if report.matrix is not None:
        return matrix_markdown(report, report.matrix)
    comp = report.comparisons[0] if report.comparisons else None
    behavior = report.behavior or {}
    s_b, b_b = behavior.get(Arm.WITH_SKILL), behavior.get(Arm.BASELINE)
    tasks, _, hurts = _tasks(report)
    lines = [
        *_header(report, comp),
        *_checks(report),
        *tasks,
        *_expectations(report),
        *_behavior(s_b, b_b),
        *_recommendations(report, comp, hurts),
        *(["", "## Warnings", *(f"- {md(w)}" for w in report.meta.warnings)] if report.meta.warnings else []),
        *(
            ["", "## Case Settings", *(f"- {md(k)}: {md(v)}" for k, v in report.meta.case_settings.items())]
            if report.meta.case_settings
            else []
        ),
        *portability_markdown(report),
        *validity_markdown(report, "##"),
        *explain_markdown(report),
        "",
        f"Full results: {report.meta.results_dir} (suite sha256 {(report.meta.suite_sha256 or '')[:12]})",
        "",
    ]
    return "\n".join(lines)
