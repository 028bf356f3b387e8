"""The run's judge against the humans: the report server's star ratings compared with the judge's
scores on the same case and variant. Recomputed (and stored in the report) on every rating."""

from __future__ import annotations

import datetime as dt

from flows.report.diagnosis_parts import HumanAgreement
from flows.report.entries import AgentRun, RunEntry, SampleRun, VariantResult
from flows.report.schema import Report
from tasks.stats.agreement import rater_agreement


def judge_score(entry: VariantResult) -> float | None:
    """The judge's score of one case and variant on 1-5, averaged over its runs: the judge layer in
    sample mode, the four-criterion weighted total (0-100, mapped onto 1-5) in agentic mode."""
    scores: list[float] = []
    runs: list[RunEntry] = list(entry.runs or [entry])
    for run in runs:
        if isinstance(run, AgentRun):
            total = run.grade.weighted_total if run.grade is not None else None
            if total is not None and run.contaminated is None:
                scores.append(1 + 4 * total / 100)
        elif isinstance(run, SampleRun) and run.llm_score is not None and run.judge_status == "graded":
            scores.append(run.llm_score)
    return sum(scores) / len(scores) if scores else None


def rated_items(report: Report) -> tuple[int, list[tuple[str, float, float]]]:
    """(items with a rating, [(item, latest rating, judge score)] for those the judge also scored)."""
    rated, items = 0, []
    for case in report.all_cases():
        for variant, entry in case.variants.items():
            if not entry.feedback:
                continue
            rated += 1
            score = judge_score(entry)
            if score is not None:
                items.append((f"{case.sample_id} · {variant}", float(entry.feedback[-1].rating), score))
    return rated, items


def human_agreement(report: Report) -> HumanAgreement | None:
    """The agreement figures, or None while no rated item has a judge score."""
    rated, items = rated_items(report)
    if not items:
        return None
    judged = report.judged
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    figures = rater_agreement(items, seed=report.meta.seed)
    return HumanAgreement(**dict(figures), rated=rated, judged=judged, updated_at=now)
