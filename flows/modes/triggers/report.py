"""The trigger-mode report: every query with each variant's sessions (what fired, when, how the
session ended), and the figures of tasks.stats.trigger_stats, through the one ``assemble``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from flows.modes.triggers.model import TriggerFigures, TriggerMeta, TriggerReport
from flows.modes.triggers.plan import TriggerOutcome, TriggerPlan, TriggerVariant
from flows.report.build import agent_cli_meta, assemble, isolation_meta, run_meta, variant_entry
from flows.report.entries import CaseResult, TriggerRun, TriggerVariantResult
from flows.report.gates import unmeasured
from flows.report.regression import KNOWN_GOOD
from flows.report.validity import certify, require_valid_failures
from graders.triggers import TriggerStatus
from tasks.schema import TRIGGER_SCALE, RunStats
from tasks.stats.trigger_compare import (
    DescriptionDecision,
    MetricComparison,
    VariantComparison,
    compare_variants,
    description_decision,
)
from tasks.stats.trigger_stats import ListingStats, Trial, TriggerSummary, listing_shifts, summarize, trial

#: What a session's entry takes from its outcome as it is.
KEPT = (
    "output",
    "error",
    "duration_ms",
    "cost_usd",
    "fired",
    "first_turns",
    "listed",
    "transcript",
    "cached",
)


def session_entry(run: int, out: TriggerOutcome) -> TriggerRun:
    """One session's entry."""
    kept = {name: getattr(out, name) for name in KEPT}
    return TriggerRun(
        run=run, ok=out.status == TriggerStatus.OK, composite_score=None, status=str(out.status), **kept
    )


def query_results(
    plan: TriggerPlan, outcomes: dict[str, TriggerOutcome]
) -> list[CaseResult[TriggerVariantResult]]:
    runs: dict[tuple[str, str], list[TriggerRun]] = {}
    for s in plan.sessions:
        if s.key in outcomes:
            runs.setdefault((s.query.id, s.variant.label), []).append(session_entry(s.run, outcomes[s.key]))
    results = []
    for q in plan.queries.queries:
        entries = {
            v.label: variant_entry(TriggerVariantResult, runs[(q.id, v.label)], {}, None)
            for v in plan.variants
            if (q.id, v.label) in runs
        }
        results.append(
            CaseResult[TriggerVariantResult](
                sample_id=q.id, prompt=q.query, tags=list(q.tags), expect=q.expected, variants=entries
            )
        )
    return results


def comparison_pairs(variants: Sequence[TriggerVariant]) -> list[tuple[str, str]]:
    """(control, treatment) labels, each pair differing in one thing only: on each agent, every skill
    variant against that agent's first (in an environment: the first skill variant against the
    environment alone, and the others against the first skill variant); across agents, each agent's
    first variant against the first agent's; each variant with a filled window against itself with
    an empty one."""
    by_runner: dict[str, list[TriggerVariant]] = {}
    for v in variants:
        if v.filled_from is None:
            by_runner.setdefault(v.runner, []).append(v)
    within = []
    for group in by_runner.values():
        alone = group[0].environment is not None and not group[0].skills
        reference = group[1] if alone and len(group) > 2 else group[0]
        within += [(group[0].label, group[1].label)] if reference is not group[0] else []
        within += [(reference.label, v.label) for v in group if v is not group[0] and v is not reference]
    leads = [group[0] for group in by_runner.values()]
    across = [(leads[0].label, v.label) for v in leads[1:]]
    filled = [(v.filled_from, v.label) for v in variants if v.filled_from is not None]
    return within + across + filled


def neighbour_pairs(present: Sequence[TriggerVariant]) -> list[tuple[str, str]]:
    """(environment alone, environment with a skill variant), per agent and window: the pairs whose
    difference is what adding the skill did to the skills already installed."""
    alone = {(v.runner, v.fill): v for v in present if v.environment is not None and not v.skills}
    return [
        (alone[(v.runner, v.fill)].label, v.label)
        for v in present
        if v.skills and (v.runner, v.fill) in alone
    ]


def description_decisions(
    plan: TriggerPlan,
    present: Sequence[TriggerVariant],
    trials: Sequence[Trial],
    summaries: Sequence[TriggerSummary],
) -> list[DescriptionDecision]:
    """An A/B of one skill's descriptions: each variant against the first, on the keep rule of
    tasks.stats.trigger_compare.description_decision."""
    o = plan.options
    by_variant = {s.variant: s for s in summaries}
    groups: dict[tuple[str, float], list[TriggerVariant]] = {}
    for v in present:
        if len(v.own) == 1 and not any(s.plugin for s in v.skills):
            groups.setdefault((v.runner, v.fill), []).append(v)
    return [
        description_decision(
            trials,
            plan.candidates,
            group[0].label,
            v.label,
            group[0].own[0],
            listing_shifts(by_variant[group[0].label], by_variant[v.label]),
            v.skills[0].description,
            margin=o.margin,
            min_effect=o.min_effect,
            max_error_rate=o.max_error_rate,
            seed=o.seed,
        )
        for group in groups.values()
        if len({g.own for g in group}) == 1
        for v in group[1:]
    ]


def figures(plan: TriggerPlan, outcomes: dict[str, TriggerOutcome]) -> TriggerFigures:
    o = plan.options
    trials = [
        trial(s.query, outcomes[s.key].triggers, variant=s.variant.label, part=s.part)
        for s in plan.sessions
        if s.key in outcomes
    ]
    ran = {t.variant for t in trials}
    present = [v for v in plan.variants if v.label in ran]
    summaries = [summarize(trials, plan.candidates, variant=v.label, seed=o.seed) for v in present]
    alone = {v.label for v in present if v.environment is not None and not v.skills}
    # against the environment alone the skill is added, not reworded: "overfit" does not apply
    comparisons = [
        c.model_copy(
            update={"overfit": False, "warnings": tuple(w for w in c.warnings if not w.startswith("overfit"))}
        )
        if c.control in alone
        else c
        for c in (
            compared(plan, trials, control, treatment) for control, treatment in comparison_pairs(present)
        )
    ]
    installed = [s for s in plan.candidates if any(q.expect == s for q in plan.queries.queries)]
    installed = [s for s in installed if not any(s in v.own for v in present)]
    pairs = neighbour_pairs(present)
    by_variant = {s.variant: s for s in summaries}
    return TriggerFigures(
        warnings=fill_warnings(plan, outcomes),
        decisions=description_decisions(plan, present, trials, summaries) if plan.split else [],
        neighbours=[compared(plan, trials, c, t, skill) for c, t in pairs for skill in installed],
        listing_shifts=[x for c, t in pairs for x in listing_shifts(by_variant[c], by_variant[t])],
        candidates=list(plan.candidates),
        queries_file=plan.queries.path,
        queries_sha256=plan.queries.sha256,
        split=plan.split.record() if plan.split else None,
        summaries=summaries,
        comparisons=comparisons,
    )


def compared(
    plan: TriggerPlan, trials: Sequence[Trial], control: str, treatment: str, skill: str | None = None
) -> VariantComparison:
    """One paired comparison of the run's trials (of one skill, or pooled), at the run's settings."""
    o = plan.options
    return compare_variants(
        trials,
        plan.candidates,
        control,
        treatment,
        skill=skill,
        margin=o.margin,
        min_effect=o.min_effect,
        max_error_rate=o.max_error_rate,
        seed=o.seed,
    )


def fill_warnings(plan: TriggerPlan, outcomes: dict[str, TriggerOutcome]) -> list[str]:
    """--context-fill is a share of --context-window: a model whose sessions report another window
    was filled by another share."""
    o = plan.options
    windows = {
        listing.window
        for s in plan.sessions
        if s.variant.fill and s.key in outcomes
        if (listing := outcomes[s.key].triggers.listing) is not None and listing.window
    }
    return [
        f"--context-fill: the sessions reported a {w:,}-token window, not --context-window "
        f"{o.context_window:,}: the filled variants took {o.context_fill * o.context_window / w:.0%} of it, "
        f"not {o.context_fill:.0%}"
        for w in sorted(windows)
        if o.context_fill and w != o.context_window
    ]


def trigger_cli_meta(plan: TriggerPlan, outcomes: dict[str, TriggerOutcome]) -> dict[str, str | None]:
    """Each agent CLI and its version: as its sessions reported it, else its --version before the run."""
    parts = []
    for runner, probed in plan.cli_versions.items():
        keys = {s.key for s in plan.sessions if s.variant.runner == runner}
        reported = [out.cli_version for key, out in outcomes.items() if key in keys]
        parts += [v for v in agent_cli_meta(runner, reported, probed).values() if v]
    return {"agent_cli_version": "; ".join(parts) or None}


def build_trigger_report(
    plan: TriggerPlan,
    report_id: str,
    outcomes: dict[str, TriggerOutcome],
    started: dt.datetime,
    stats: RunStats,
) -> TriggerReport:
    o = plan.options
    meta = TriggerMeta(
        variants=[v.label for v in plan.variants],
        control=plan.variants[0].label,
        model=", ".join(dict.fromkeys(v.model for v in plan.variants)),
        executor=o.runner,
        judge_model=None,
        sample_count=len(plan.queries.queries),
        task_count=len(plan.sessions),
        total_cost_usd=round(sum(out.cost_usd for out in outcomes.values()), 6),
        seed=o.seed,
        repeat=o.runs,
        suite=o.suite,
        skill_hashes={v.label: v.sha256 for v in plan.variants},
        max_turns=o.max_turns,
        **isolation_meta(plan.isolation, o.allow_network, o.fleet_pool),
        **trigger_cli_meta(plan, outcomes),
        plugin="; ".join(p.summary(o.plugin_mcp) for v in plan.variants for s in v.skills if (p := s.plugin))
        or None,
        environment=next((v.environment.record() for v in plan.variants if v.environment), None),
        context_fill=o.context_fill,
        context_window=o.context_window if o.context_fill else None,
        **run_meta(started, stats),
        **({"notices": list(plan.notices)} if plan.notices else {}),  # absent when none, as before
    )
    report = assemble(
        TriggerReport,
        report_id,
        meta,
        TRIGGER_SCALE.model_copy(update={"margin": o.margin, "min_effect": o.min_effect}),
        None,
        query_results(plan, outcomes),
        stats,
        triggers=figures(plan, outcomes),
    )
    report.validity = certify(report, o.max_error_rate, leaks=plan.notices)
    return report


def listing_words(stats: ListingStats) -> str | None:
    """What the listing did to a skill, when it did anything: a dropped description is a skill the
    model could not choose, not one it passes over."""
    if not stats.sessions or stats.full == stats.sessions:
        return None
    parts = [
        f"{n} {state}"
        for state, n in (("cut", stats.truncated), ("dropped", stats.dropped), ("absent", stats.absent))
        if n
    ]
    words = f"listed in full in {stats.full}/{stats.sessions} sessions ({', '.join(parts)})"
    if stats.state == "dropped":
        words += "; its description was dropped to fit the listing budget: the model could not choose it"
    rates = [f"{state} {r.k}/{r.n}" for state, r in stats.recall_when.items()]
    return words + (f"; fired on its own queries when {', '.join(rates)}" if rates else "")


def neighbour_sentence(comp: VariantComparison, metric: MetricComparison) -> str:
    """'adding +x lowered y's recall from 82% to 41% (-41 points [-60, -22]): WORSE'."""
    name = "recall" if metric.metric == "recall" else "false-fire rate"
    if metric.control is None or metric.treatment is None or metric.difference is None:
        return f"adding {comp.treatment}: {comp.skill}'s {name}: no query measured in both"
    verb = "raised" if metric.difference > 0 else "lowered" if metric.difference < 0 else "left"
    c = metric.comparison
    sign = 1 if metric.higher_is_better else -1  # the comparison is on the improvement
    # a difference of two rates lies within +-100 points, whatever a t-interval on few queries says
    ends = sorted(
        min(100.0, max(-100.0, v * sign * 100)) + 0.0 for v in (c.ci_low, c.ci_high) if v is not None
    )
    interval = f" [{ends[0]:+.0f}, {ends[1]:+.0f}]" if len(ends) == 2 else ""
    moved = (
        f"at {metric.control:.0%}"
        if verb == "left"
        else f"from {metric.control:.0%} to {metric.treatment:.0%}"
    )
    return (
        f"adding {comp.treatment} {verb} {comp.skill}'s {name} {moved} "
        f"({metric.difference * 100 + 0.0:+.0f} points{interval}, {metric.queries} "
        f"quer{'y' if metric.queries == 1 else 'ies'}): {metric.verdict.label}"
    )


def gate_failures(
    report: TriggerReport, min_recall: float | None, max_false_fire: float | None, require_valid: bool = False
) -> list[str]:
    """Every variant's every skill against the CI gates (a missing figure fails: nothing was measured),
    and the certificate under --require-valid."""
    failures = unmeasured(report) + (require_valid_failures(report) if require_valid else [])
    for summary in report.triggers.summaries if report.triggers else []:
        if summary.variant.endswith(KNOWN_GOOD):  # a same-night control: the reference, not gated
            continue
        for stats in summary.per_skill:
            where = f"{summary.variant}: {stats.skill}"
            recall, false_fire = stats.recall.value, stats.false_fire.value
            if min_recall is not None and stats.should_fire and (recall is None or recall < min_recall):
                failures.append(f"{where}: recall {_pct(recall)} < {min_recall:.0%}")
            if (
                max_false_fire is not None
                and stats.should_not
                and (false_fire is None or false_fire > max_false_fire)
            ):
                failures.append(f"{where}: false-fire rate {_pct(false_fire)} > {max_false_fire:.0%}")
    return failures


def _pct(value: float | None) -> str:
    return "none" if value is None else f"{value:.0%}"
