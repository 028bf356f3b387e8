"""Sample mode's part of the report: its meta and its report class (the run entries are shared,
flows/report/entries.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flows.report.entries import CaseResult, SampleVariantResult
from flows.report.schema import JunitCase, Meta, Report
from tasks.schema import ShardRun
from tasks.stats.models import Model


class PromptCaching(Model):
    """What prompt caching saved over the run's successful executions, priced from one table."""

    uncached_usd: float
    """the same calls with every prompt token at the input price"""
    actual_usd: float
    """with cache writes and reads at their prices"""
    saved_usd: float
    """uncached minus actual (negative when cache writes cost more than reads saved)"""
    cache_write_tokens: int
    """prompt tokens written to the provider's cache"""
    cache_read_tokens: int
    """prompt tokens read from it"""
    unpriced: int = 0
    """results with cache tokens whose model has no price (left out of both sums)"""


class SampleMeta(Meta):
    """Sample mode's run: the samples file, the call settings, caching and shards."""

    python_version: str | None = None
    """Python's version"""
    skill_bytes: dict[str, int | None] | None = None
    """variant -> its artifact's size in bytes of UTF-8"""
    concurrency: int | None = None
    """calls in flight at once"""
    temperature: float | None = None
    """sampling temperature passed through"""
    max_tokens: int | None = None
    """output token limit passed through"""
    samples_file: str | None = None
    """the samples file"""
    samples_sha256: str | None = None
    """its SHA-256"""
    prompt_caching: PromptCaching | None = None
    """what prompt caching saved (None when no call read or wrote the cache)"""
    duration_s: float | None = None
    """wall time of the run"""
    shards: list[ShardRun] | None = None
    """the shard flow runs, when sharded"""

    def artifact_sizes(self) -> dict[str, int | None] | None:
        return self.skill_bytes

    def caching_line(self) -> str | None:
        caching = self.prompt_caching
        if not caching:
            return None
        share = f" ({caching.saved_usd / caching.uncached_usd:.0%})" if caching.uncached_usd else ""
        return (
            f"prompt caching: {caching.cache_read_tokens:,} tokens read from the cache, "
            f"{caching.cache_write_tokens:,} written ({self.warm_up_calls or 0} warm-up call(s)); "
            f"saved ${caching.saved_usd:.4f} of ${caching.uncached_usd:.4f}{share}"
        )


class SampleReport(Report):
    """A sample-mode run."""

    mode: Literal["sample"]
    meta: SampleMeta
    results: list[CaseResult[SampleVariantResult]] = Field(default_factory=list)

    unit = "call"
    unit_verb = "made"
    plannable = True

    def junit(self, threshold: float) -> list[tuple[str, list[JunitCase]]]:
        from flows.report.ci import per_case_suites

        return per_case_suites(self, threshold, case_failure)


def case_failure(entry: SampleVariantResult, threshold: float) -> str | None:
    """Why a sample x variant fails the gate, or None when it passes."""
    if not entry.ok:
        runs = entry.runs or [entry]
        errors = sorted({f"{r.error_kind}: {r.error}" for r in runs if not r.ok})
        return "execution failed: " + "; ".join(errors)
    score = entry.composite_score
    if score is None:
        runs = entry.runs or [entry]
        why = sorted({r.grading_error for r in runs if r.grading_error}) or ["the judge gave no usable score"]
        return "grading error: " + "; ".join(why)
    if score < threshold:
        failed = [
            a.type + (f" ({a.message})" if a.message else "")
            for a in (entry.assertions.details if entry.assertions else [])
            if not a.passed
        ]
        reason = f"score {score:.2f} < threshold {threshold:g}"
        if failed:
            reason += "; failed assertions: " + ", ".join(failed)
        if entry.llm_score is not None:
            reason += f"; judge {entry.llm_score:.2f}: {entry.llm_reason or ''}"
        return reason
    return None
