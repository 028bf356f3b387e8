"""Building the report: one assembly path (``assemble``) for every mode, fed by each mode's parts.

Sample mode gives its meta and per-case results from the prepared inputs, the records and the
runner's ``RunStats``; agentic mode (``flows.report.agentic``) gives its own. Figures come from
``tasks.stats.aggregate``. Blind runs are aggregated on their labels ("Variant A", ...), so no name can
leak through a figure or a message, and nothing but labels is relabelled.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
import random
import re
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from executors import sandbox
from executors.agent import find_binary
from executors.base import Executor
from executors.pricing import PriceTable, caching_savings
from executors.schema import RunResult
from executors.versions import installed_version
from flows.inputs.prepare import Prepared
from flows.report.schema import (
    REPORT_VERSION,
    AssertionDetail,
    AssertionSummary,
    CaseResult,
    Meta,
    Mode,
    PromptCaching,
    Report,
    RunEntry,
    VariantResult,
)
from graders.schema import JudgeStatus
from tasks.schema import Record, RunStats, Scale
from tasks.stats.figures import Aggregate, Analysis, CaseStats
from tasks.store.files import atomic_write_text

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
    "failures": "An errored call scores the scale minimum and is counted (errorRate); an UNGRADED judgement "
    "is excluded from means and counted (ungradedRate). Nothing is silently dropped.",
}
PREVIEW_CHARS = 200
#: Variant names in a file name are cut here: file systems refuse names over 255 bytes.
ID_NAMES_CHARS = 80


def cli_version() -> str:
    try:
        return metadata.version("skillab")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def timestamp(at: dt.datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def new_report_id(started_at: dt.datetime, names: list[str]) -> str:
    """The run id (and file name): start time, the variant names (cut to fit), a random suffix."""
    stamp = started_at.strftime("%Y-%m-%dT%H-%M-%S")
    suffix = hashlib.sha256(f"{started_at.isoformat()}{random.random()}".encode()).hexdigest()[:6]
    joined = "-".join(re.sub(r"[^A-Za-z0-9_.]", "_", n) for n in names)[:ID_NAMES_CHARS]
    return f"{stamp}-{joined}-{suffix}"


def blind_labels(names: list[str], seed: int, report_id: str) -> dict[str, str]:
    """name -> "Variant A/B/...", in an order seeded by the run so labels say nothing of the names."""
    shuffled = list(names)
    random.Random(f"blind-{seed}-{report_id}").shuffle(shuffled)
    return {name: f"Variant {chr(ord('A') + i)}" for i, name in enumerate(shuffled)}


def relabel(records: list[Record], labels: dict[str, str]) -> list[Record]:
    return [r.model_copy(update={"variant": labels[r.variant]}) for r in records]


# ---------------------------------------------------------------- the one assembly path


def assemble(
    mode: Mode,
    report_id: str,
    meta: Meta,
    scale: Scale,
    aggregate: Aggregate | None,
    results: list[CaseResult],
    **parts: Any,
) -> Report:
    """Every mode's report is made here: the figures of ``aggregate`` plus the mode's own parts
    (by their Python names), validated into the typed model (a missing or misnamed field fails here,
    not in a reader)."""
    return Report(
        version=REPORT_VERSION,
        id=report_id,
        mode=mode,
        meta=meta,
        summary=aggregate.summary if aggregate else {},
        comparisons=aggregate.comparisons if aggregate else [],
        scale=Scale.model_validate(scale.model_dump()),  # every field written, defaults included
        results=results,
        analysis=aggregate.analysis if aggregate else Analysis(insights=[], suggestions=[]),
        **parts,
    )


# ---------------------------------------------------------------- sample mode


def run_entry(record: Record) -> RunEntry:
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
    return RunEntry(**fields)  # the keys given are the report's: a field never set is left out


def variant_entry(
    runs: list[RunEntry], stats: CaseStats | dict[str, Any], mean: float | None
) -> VariantResult:
    """A case's entry for one variant: the first run's fields, the case mean, and every run."""
    # the first run's fields as given (their values are validated already: no dump and re-parse)
    fields = {name: getattr(runs[0], name) for name in runs[0].model_fields_set}
    if len(runs) > 1:
        fields |= {"composite_score": mean, "ok": all(r.ok for r in runs), "runs": runs}
    return VariantResult(**fields, case_stats=stats)


def sample_results(
    prepared: Prepared,
    records: list[Record],
    variants: list[str],
    case_stats: dict[str, dict[str, CaseStats]],
) -> list[CaseResult]:
    by_case: dict[str, dict[str, list[Record]]] = {}
    for rec in sorted(records, key=lambda r: r.run):
        by_case.setdefault(rec.sample_id, {}).setdefault(rec.variant, []).append(rec)
    results = []
    for sample in prepared.samples:
        entries: dict[str, VariantResult] = {}
        for name in variants:
            recs = by_case.get(sample.sample_id, {}).get(name, [])
            if recs:
                stats = case_stats.get(sample.sample_id, {}).get(name)
                entries[name] = variant_entry(
                    [run_entry(r) for r in recs], stats or {}, stats.avg if stats else None
                )
        results.append(
            CaseResult(
                sample_id=sample.sample_id,
                prompt=sample.full_prompt,
                rubric=sample.rubric,
                dimensions=sample.dimensions,
                tags=list(sample.tags),
                cluster=sample.cluster,
                variants=entries,
            )
        )
    return results


def sample_meta(
    prepared: Prepared,
    records: list[Record],
    stats: RunStats,
    started_at: dt.datetime,
    duration_s: float,
    labels: dict[str, str],
) -> Meta:
    o = prepared.options
    return Meta(
        variants=(sorted if o.blind else list)(labels[v.name] for v in prepared.variants),
        control=labels[prepared.control],
        model=prepared.target.model,
        judge_model=", ".join(f"{j.executor.name}:{j.model}" for j in prepared.judges) or None,
        executor=prepared.target.executor.name,
        sample_count=len(prepared.samples),
        task_count=len(records),
        total_cost_usd=round(sum(r.result.cost_usd for r in records), 6),
        judge_cost_usd=round(stats.spent_by_kind.get("judge", 0.0), 6),
        timestamp=timestamp(started_at),
        cli_version=cli_version(),
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
        **run_stats_meta(stats),
        prompt_caching=prompt_caching([r.result for r in records], prepared.target.executor.prices),
        duration_s=round(duration_s, 2),
        notices=prepared.notices + cache_notices(stats),
        blind=o.blind,
    )


def run_stats_meta(stats: RunStats) -> dict[str, Any]:
    """What a runner did (model calls or agent sessions), as every mode's report meta records it."""
    return {
        "calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "warm_up_calls": stats.warm_up_calls,
        "batched_calls": stats.batched_calls,
        "not_run": list(stats.not_run),
    }


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
) -> Report:
    """The sample-mode report. ``records`` and ``aggregate`` already carry the labels (blind runs)."""
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
        "sample",
        report_id,
        sample_meta(prepared, records, stats, started_at, duration_s, labels),
        aggregate.scale,
        aggregate,
        sample_results(prepared, records, variants, aggregate.case_stats),
        **parts,
    )


# ---------------------------------------------------------------- writing


def report_path(output_dir: Path, report_id: str) -> Path:
    return output_dir / f"{report_id}.json"


def publish(report: Report, output_dir: Path) -> Path:
    path = report_path(output_dir, report.id)
    # pydantic-core's encoder, strict JSON as atomic_write_json writes it (NaN and infinity as null,
    # UTF-8 kept): the standard library's indenting encoder took 2.6 s for a report of 10,000 results.
    text = to_json(report.dump(), indent=2, inf_nan_mode="null").decode()
    atomic_write_text(path, text + "\n")
    return path


def agent_cli_meta(runner: str, reported: list[Any], probed: str | None) -> dict[str, str | None]:
    """The agent CLI's version for the report's meta: what its sessions reported (Claude Code's init
    event), else what ``--version`` said before the run."""
    version = next((str(v) for v in reported if v), None) or probed
    return {"agent_cli_version": f"{runner} {version}" if version else None}


def executor_cli_meta(executor: Executor) -> dict[str, str | None]:
    """Sample mode through an agent CLI: its ``--version`` (nothing for an API executor)."""
    binary = getattr(executor, "binary", None) if executor.agentic else None
    if not isinstance(binary, str):
        return {}
    path = find_binary(binary)
    return agent_cli_meta(executor.name, [], installed_version(path) if path else None)


def isolation_meta(isolation: sandbox.Isolation, allow_network: bool = False) -> dict[str, str | None]:
    """The report's record of the OS sandbox agents and checks ran in, with its version, and what
    of the network the sessions could reach."""
    if isolation == "none":
        network = "host network (no OS sandbox: the sessions could reach anything this machine can)"
    elif allow_network:
        network = "host network (--allow-network)"
    else:
        network = "the model endpoint only (through skillab's forwarder); task checks: none"
    return {
        "isolation": isolation,
        "sandbox_version": sandbox.version() if isolation != "none" else None,
        "network": network,
    }


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
