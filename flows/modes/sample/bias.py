"""Judge bias probes read from a sample-mode report, each worded as one line with its figure:
position bias (--pairwise), length bias, and self-preference (a judge of the model's own vendor
beside one of another vendor)."""

from __future__ import annotations

from flows.modes.sample.model import SampleReport
from flows.report.diagnosis_parts import JudgeBias, LengthBias, PositionBias, SelfPreference
from flows.report.entries import SampleRun
from graders.judge import vendor_of
from tasks.stats.judge_bias import ALPHA, length_bias, self_preference

#: A flip share above this is worth a warning: the pairwise verdict leans on the order shown.
FLIP_WARNING = 0.2


def runs(report: SampleReport) -> list[tuple[str, SampleRun]]:
    return [
        (case.sample_id, run)
        for case in report.results
        for e in case.variants.values()
        for run in e.runs or [e]
    ]


def position_part(report: SampleReport) -> PositionBias | None:
    if not report.pairwise:
        return None
    pairs = sum(p.pairs for p in report.pairwise)
    flips = sum(p.flips for p in report.pairwise)
    share = flips / pairs if pairs else None
    if share is None:
        line = "position bias: no pair was judged in both orders"
    else:
        line = (
            f"position bias: the same position won in both orders in {flips} of {pairs} pairs ({share:.0%})"
            + (": the pairwise results lean on the order shown" if share > FLIP_WARNING else "")
        )
    return PositionBias(pairs=pairs, flips=flips, share=share, line=line)


def length_part(report: SampleReport) -> LengthBias | None:
    rows = [
        (run.llm_score, float(len(run.output)), run.assertions.score if run.assertions else None)
        for _, run in runs(report)
        if run.ok and run.judge_status == "graded" and run.llm_score is not None
    ]
    if len(rows) < 4:
        return None
    held = [a for _, _, a in rows]
    fig = length_bias([j for j, _, _ in rows], [n for _, n, _ in rows], None if None in held else held)  # type: ignore[arg-type]
    r, p = fig.partial_r, fig.p
    detected = r is not None and p is not None and r > 0 and p < ALPHA
    if r is None:
        line = f"length bias: none measurable (the judge score does not vary apart from the {fig.controlled_for})"
    else:
        line = (
            f"length bias: partial r = {r:+.2f} between judge score and output length, {fig.controlled_for} "
            f"held fixed (p = {p:.2g}, n = {fig.n}; {fig.points_per_1000_chars or 0:+.2f} points per 1,000 "
            "characters)"
            + (": the judge favours longer answers" if detected else ": no length bias detected")
        )
    return LengthBias(**dict(fig), detected=detected, line=line)


def self_preference_part(report: SampleReport) -> SelfPreference | None:
    meta = report.meta
    vendor = vendor_of(meta.executor, meta.model)
    judges = sorted(report.judge.judges) if report.judge else []
    same = [j for j in judges if vendor_of(*j.split(":", 1)) == vendor]
    other = [j for j in judges if j not in same]
    if not same or not other:
        return None
    per_case: dict[str, list[float]] = {}
    for sample_id, run in runs(report):
        scores = run.judge_scores or {}
        s = [scores[j] for j in same if j in scores]
        o = [scores[j] for j in other if j in scores]
        if s and o:
            per_case.setdefault(sample_id, []).append(sum(s) / len(s) - sum(o) / len(o))
    fig = self_preference([sum(d) / len(d) for d in per_case.values()], meta.seed)
    mean, low, high = fig.mean_diff, fig.ci_low, fig.ci_high
    shown = "no case scored by both" if mean is None else f"{mean:+.2f}"
    interval = f" [95% CI {low:+.2f}, {high:+.2f}]" if low is not None and high is not None else ""
    line = (
        f"self-preference: {', '.join(same)} ({vendor}, the model's vendor) minus {', '.join(other)}: "
        f"{shown}{interval} per case over {fig.n} cases"
        + (f" (p = {fig.p:.2g})" if fig.p is not None else "")
    )
    return SelfPreference(**dict(fig), vendor=vendor, same_vendor=same, other_vendor=other, line=line)


def judge_bias(report: SampleReport) -> JudgeBias | None:
    """Every probe that can be measured on this run (None when none can)."""
    position, length, preference = position_part(report), length_part(report), self_preference_part(report)
    found = [p for p in (position, length, preference) if p is not None]
    if not found:
        return None
    out = JudgeBias(lines=[p.line for p in found])
    # each probe set only where it was measured: the report leaves the others out
    if position is not None:
        out.position = position
    if length is not None:
        out.length = length
    if preference is not None:
        out.self_preference = preference
    return out
