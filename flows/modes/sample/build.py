"""Sample mode's report: its meta and per-case results from the prepared inputs, the records and
the runner's ``RunStats``, assembled with the figures by the one assembly path every mode shares
(``flows.report.build.assemble``). Blind runs are aggregated on their labels ("Variant A", ...), so
no name can leak through a figure or a message, and nothing but labels is relabelled."""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
import random
from typing import Any

from executors.agent import find_binary
from executors.base import Executor
from executors.pricing import PriceTable, caching_savings
from executors.schema import RunResult
from executors.versions import installed_version
from flows.modes.sample.model import PromptCaching, SampleMeta, SampleReport
from flows.modes.sample.prepare import Prepared
from flows.report.build import agent_cli_meta, assemble, run_meta, variant_entry
from flows.report.entries import AssertionDetail, AssertionSummary, CaseResult, SampleRun, SampleVariantResult
from graders.schema import JudgeStatus
from tasks.schema import Record, RunStats
from tasks.stats.figures import Aggregate, CaseStats
from tasks.stats.models import FieldsSets

#: Plain-language notes for readers who are not statisticians; written into every report.
GUIDE = {
    "unit": "The case (sample) is the unit: each case's runs are averaged before variants are compared, "
    "because repeats of one case are not independent evidence.",
    "primary": "comparisons[].paired is the primary comparison: per-case differences (treatment minus "
    "control), their mean, a 95% interval (the range the true average difference plausibly lies in), "
    "the paired t-test and Wilcoxon p-values (how surprising the difference would be if the variants were "
    "equal), a seeded bootstrap interval, the effect size d_z, and cases improved/regressed/unchanged.",
    "verdict": "BETTER / WORSE: significant, and the whole interval lies beyond the practical margin (with "
    "no spread, the exact sign test decides). EQUIVALENT: it lies within the margin. UNDERPOWERED: fewer "
    "than 6 cases, or not significant with too few cases for the effect you care about (min_effect) to read "
    "BETTER; mde is the smallest effect that could, cases_needed how many cases a BETTER verdict needs. "
    "INCONCLUSIVE: none of these (significant but reaching into the margin, or not significant). "
    "INSUFFICIENT DATA: under 2 cases. If errored or ungraded runs pass max_error_rate, no improvement is "
    "claimed.",
    "seed": "Also computed as the original tools did, and labelled so: per-variant mean, std and 95% "
    "interval (summary), Welch's t-test over run means with --repeat (comparisons[].welchRuns), pass@k "
    "and pass^k (unbiased estimators, summary and caseStats), and the band USE .. DON'T USE from the mean "
    "delta in points of the scale's range (verdict.band).",
    "failures": "An errored call scores the scale minimum and is counted (errorRate). A grading error (a "
    "judgement the judge did not give, a check that raised, hung or ran over its budget) is neither a pass "
    "nor the model's failure: the run is excluded from means and counted apart (ungradedRate), and both "
    "rates together cap the verdict. Nothing is silently dropped.",
}


PREVIEW_CHARS = 200


def blind_labels(names: list[str], seed: int, report_id: str) -> dict[str, str]:
    """name -> "Variant A/B/...", in an order seeded by the run so labels say nothing of the names."""
    shuffled = list(names)
    random.Random(f"blind-{seed}-{report_id}").shuffle(shuffled)
    return {name: f"Variant {chr(ord('A') + i)}" for i, name in enumerate(shuffled)}


def relabel(records: list[Record], labels: dict[str, str]) -> list[Record]:
    """A new list of the records under their labels (the same records where each label is its name)."""
    if all(name == label for name, label in labels.items()):
        return list(records)
    return [r.model_copy(update={"variant": labels[r.variant]}) for r in records]


def run_entry(record: Record) -> SampleRun:
    """One execution in the seed's result shape, with the full output and any error."""
    r, g = record.result, record.grade
    fields: dict[str, Any] = {
        "run": record.run,
        "ok": r.ok,
        "composite_score": g.composite if g else None,
        "assertions": None,
        "llm_score": g.judge.score if g else None,
        "llm_reason": g.judge.reason if g else None,
        "judge_status": g.judge.status if g else None,
        "duration_ms": round(r.latency_ms, 1),
        "input_tokens": r.usage.input_tokens,
        "output_tokens": r.usage.output_tokens,
        "total_tokens": r.usage.total_tokens,
        "cache_write_tokens": r.usage.cache_write_tokens,
        "cache_read_tokens": r.usage.cache_read_tokens,
        "batched": r.price_multiplier < 1 or None,
        "cost_usd": r.cost_usd,
        "output_preview": r.output[:PREVIEW_CHARS],
        "output": r.output,
        "error": r.error,
        "error_kind": r.error_kind,
        "attempts": r.attempts,
        "cached": r.cached,
    }
    if g is not None:
        fields["assertions"] = AssertionSummary(
            passed=sum(1 for a in g.assertions if a.passed),
            total=len(g.assertions),
            score=g.assertion_score,
            details=[AssertionDetail.model_validate(a.detail()) for a in g.assertions],
        )
        if g.judge.dimension_scores:
            fields["dimension_scores"] = g.judge.dimension_scores
        if g.judge.judges:
            fields["judge_scores"] = g.judge.judges
        if g.judge.status == JudgeStatus.UNGRADED:
            fields["judge_raw"] = g.judge.raw
        if g.grading_error:
            fields["grading_error"] = g.grading_error
    return SampleRun(**fields)  # the keys given are the report's: a field never set is left out


def sample_results(
    prepared: Prepared,
    records: list[Record],
    variants: list[str],
    case_stats: dict[str, dict[str, CaseStats]],
) -> list[CaseResult[SampleVariantResult]]:
    by_case: dict[str, dict[str, list[Record]]] = {}
    for rec in sorted(records, key=lambda r: r.run):
        by_case.setdefault(rec.sample_id, {}).setdefault(rec.variant, []).append(rec)
    # consumed: each case's records go once its entries hold what they said, so the records and the
    # entries are not both whole at the run's peak of memory (at 10,000 units, ~30 MB)
    records.clear()
    results = []
    sets = FieldsSets()  # ~4 KB a case fewer
    case_result = CaseResult[SampleVariantResult]  # looked up once, not for each case
    for sample in prepared.samples:
        entries: dict[str, SampleVariantResult] = {}
        case = by_case.pop(sample.sample_id, {})
        for name in variants:
            recs = case.get(name, [])
            if recs:
                stats = case_stats.get(sample.sample_id, {}).get(name)
                entries[name] = variant_entry(
                    SampleVariantResult,
                    [run_entry(r) for r in recs],
                    stats or {},
                    stats.avg if stats else None,
                )
        result = case_result(
            sample_id=sample.sample_id,
            prompt=sample.full_prompt,
            rubric=sample.rubric,
            dimensions=sample.dimensions,
            tags=list(sample.tags),
            cluster=sample.cluster,
            variants=entries,
        )
        sets.share(result)
        results.append(result)
    return results


def sample_meta(
    prepared: Prepared,
    records: list[Record],
    stats: RunStats,
    started_at: dt.datetime,
    duration_s: float,
    labels: dict[str, str],
) -> SampleMeta:
    o = prepared.options
    return SampleMeta(
        variants=(sorted if o.blind else list)(labels[v.name] for v in prepared.variants),
        control=labels[prepared.control],
        model=prepared.target.model,
        judge_model=", ".join(f"{j.executor.name}:{j.model}" for j in prepared.judges) or None,
        executor=prepared.target.executor.name,
        sample_count=len(prepared.samples),
        task_count=len(records),
        total_cost_usd=round(sum(r.result.cost_usd for r in records), 6),
        judge_cost_usd=round(stats.spent_by_kind.get("judge", 0.0), 6),
        **executor_cli_meta(prepared.target.executor),
        python_version=platform.python_version(),
        skill_hashes={labels[v.name]: v.sha256 for v in prepared.variants},
        skill_bytes={labels[v.name]: v.size for v in prepared.variants},
        seed=o.seed,
        repeat=o.repeat,
        concurrency=o.concurrency,
        temperature=o.temperature,
        max_tokens=o.max_tokens,
        samples_file=str(prepared.samples_path),
        samples_sha256=hashlib.sha256(prepared.samples_path.read_bytes()).hexdigest(),
        suite=o.suite,
        **run_meta(started_at, stats),
        prompt_caching=prompt_caching([r.result for r in records], prepared.target.executor.prices),
        duration_s=round(duration_s, 2),
        notices=prepared.notices + cache_notices(stats),
        blind=o.blind,
    )


def cache_notices(stats: RunStats) -> list[str]:
    if not stats.cache_errors:
        return []
    return [
        f"Warning: {stats.cache_errors} result(s) could not be cached ({stats.cache_error}); they are in "
        "this report, but a re-run would call them again."
    ]


def build_report(
    prepared: Prepared,
    report_id: str,
    records: list[Record],
    aggregate: Aggregate,
    stats: RunStats,
    started_at: dt.datetime,
    duration_s: float,
    labels: dict[str, str],
) -> SampleReport:
    """The sample-mode report. ``records`` and ``aggregate`` already carry the labels (blind runs);
    ``records`` is consumed (emptied) as the cases are built."""
    variants = [labels[v.name] for v in prepared.variants]
    parts: dict[str, Any] = {
        "multiple_comparisons": aggregate.multiple_comparisons,
        "judge": aggregate.judge,
        "pairwise": aggregate.pairwise,
        "guide": GUIDE,
    }
    if prepared.options.blind:
        parts["blind_mapping"] = {label: name for name, label in labels.items()}
    return assemble(
        SampleReport,
        report_id,
        sample_meta(prepared, records, stats, started_at, duration_s, labels),
        aggregate.scale,
        aggregate,
        sample_results(prepared, records, variants, aggregate.case_stats),
        stats,
        **parts,
    )


def executor_cli_meta(executor: Executor) -> dict[str, str | None]:
    """Sample mode through an agent CLI: its ``--version`` (nothing for an API executor)."""
    binary = getattr(executor, "binary", None) if executor.agentic else None
    if not isinstance(binary, str):
        return {}
    path = find_binary(binary)
    return agent_cli_meta(executor.name, [], installed_version(path) if path else None)


def prompt_caching(results: list[RunResult], prices: PriceTable) -> PromptCaching | None:
    """The report's caching figures, or None when no call touched a prompt cache."""
    saved = caching_savings(results, prices)
    if not saved.cache_write_tokens and not saved.cache_read_tokens:
        return None
    return PromptCaching(
        uncached_usd=round(saved.uncached_usd, 6),
        actual_usd=round(saved.actual_usd, 6),
        saved_usd=round(saved.saved_usd, 6),
        cache_write_tokens=saved.cache_write_tokens,
        cache_read_tokens=saved.cache_read_tokens,
        unpriced=saved.unpriced,
    )
