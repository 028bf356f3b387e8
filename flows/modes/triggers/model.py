"""Trigger mode's part of the report: its meta, its figures and its report class."""

from __future__ import annotations

from typing import Any, Literal

from markupsafe import Markup
from pydantic import Field

from flows.report.entries import CaseResult, TriggerVariantResult
from flows.report.schema import CheckStatus, JunitCase, Named, Report, SessionMeta, ValidityCheck
from graders.queries import NONE
from tasks.stats.models import Model
from tasks.stats.trigger_compare import DescriptionDecision, VariantComparison
from tasks.stats.trigger_stats import ListingShift, TriggerSummary

UNCOUNTED = (
    "every session counted",
    "{share} of {variant}'s sessions did not count (an error, or a skill missing from the listing)",
)


class TriggerMeta(SessionMeta):
    """Trigger mode's run (the variants' skills are hashed in ``skill_hashes``)."""

    environment: dict[str, Any] | None = None
    """the user's setup every session ran in (--environment): its source, hash and what it holds"""
    context_fill: float | None = None
    """share of the context window a neutral earlier turn took in the filled variants"""
    context_window: int | None = None
    """the window (tokens) that share is of"""

    def environment_digest(self) -> str | None:
        digest = (self.environment or {}).get("sha256")
        return str(digest) if digest else None


class TriggerFigures(Model):
    """Trigger mode: per variant, rates per query and per skill with intervals, routing; A/B comparisons."""

    candidates: list[str]
    """the skills installed and detected"""
    queries_file: str
    """the fixed queries file"""
    queries_sha256: str
    """its SHA-256"""
    split: dict[str, Any] | None = None
    """the holdout split (fraction, seed, which query in which part)"""
    summaries: list[TriggerSummary]
    """one per variant"""
    comparisons: list[VariantComparison] = Field(default_factory=list)
    """each variant against the first, paired by query"""
    neighbours: list[VariantComparison] = Field(default_factory=list)
    """in an environment: each installed skill's recall and false-fire rate without and with the
    skill under test, paired by query (who steals from whom)"""
    warnings: list[str] = Field(default_factory=list)
    """what makes a figure mean less than its label says (a filled window of another size than asked)"""
    decisions: list[DescriptionDecision] = Field(default_factory=list)
    """an A/B of one skill's descriptions with a holdout: each variant kept over the first or not, and why"""
    listing_shifts: list[ListingShift] = Field(default_factory=list)
    """installed skills whose description the listing kept without the skill under test and cut or
    dropped with it"""


class TriggerReport(Report):
    """A trigger-mode run."""

    mode: Literal["trigger"]
    meta: TriggerMeta
    results: list[CaseResult[TriggerVariantResult]] = Field(default_factory=list)
    triggers: TriggerFigures | None = None
    """trigger mode's figures"""

    graded = False  # a session fires a skill or not: no grader, no judge's score

    def verdicts(self) -> list[Named]:
        out = super().verdicts()
        for comp in self.triggers.comparisons if self.triggers else []:
            for part, parts in comp.parts.items():
                for metric in (parts.recall, parts.false_fire):
                    scope = comp.skill or "all skills"
                    name = f"{comp.treatment} vs {comp.control}: {scope} {metric.metric} ({part})"
                    out.append(Named(name, metric.verdict, metric.comparison.mean, metric.comparison.n))
        return out

    def case_score(self, case: CaseResult[Any], label: str) -> float | None:
        """The share of the query's counted sessions that did what it expects (fired its skill, or
        fired none): what nights compare, on the rate scale."""
        entry = case.variants[label]
        counted = [r for r in entry.runs or [entry] if r.ok]
        if not counted:
            return None
        if case.expect in (None, NONE):
            return sum(1 for r in counted if not r.fired) / len(counted)
        return sum(1 for r in counted if case.expect in (r.fired or [])) / len(counted)

    def error_checks(self, limit: float) -> list[ValidityCheck]:
        """A session that did not count, per variant."""
        from flows.report.validity import rate_line

        summaries = self.triggers.summaries if self.triggers else []
        rates = {s.variant: (s.sessions - s.counted) / s.sessions for s in summaries if s.sessions}
        return [rate_line("errors", UNCOUNTED, rates, limit)]

    def own_checks(self, limit: float) -> list[ValidityCheck]:
        line = listing_line(self.triggers) if self.triggers else None
        return [line] if line else []

    def idle(self) -> dict[str, str] | None:
        if self.triggers is None:
            return None
        return {
            s.variant: f"no session counted ({s.errors} errors, {s.not_listed} not listed, of {s.sessions})"
            for s in self.triggers.summaries
            if s.sessions and s.counted == 0
        }

    def charts(self) -> dict[str, Markup]:
        from flows.report import charts

        out = {}
        for s in self.triggers.summaries if self.triggers else []:
            rows = [
                (q.query_id, q.trigger.rate, q.trigger.low, q.trigger.high, q.expect != "none")
                for q in s.queries
            ]
            out[f"rates:{s.variant}"] = charts.rates(rows, f"How often each query triggered ({s.variant})")
        return out

    def junit(self, threshold: float) -> list[tuple[str, list[JunitCase]]]:
        """One test case per query and variant: it fails when most of its counted sessions did the
        wrong thing (the expected skill did not fire first, or a skill fired where none should), or
        when none counted."""
        suites = []
        for summary in self.triggers.summaries if self.triggers else []:
            cases = []
            for q in summary.queries:
                rate, reason = q.correct.rate, None
                if rate is None:
                    reason = f"no session counted ({q.errors} errors, {q.not_listed} not listed)"
                elif rate < 0.5:
                    reason = (
                        f"expected {q.expect}: right in {q.correct.k}/{q.correct.n} sessions; fired {q.fired}"
                    )
                cases.append(JunitCase(q.query_id, None, reason))
            suites.append((f"triggers.{summary.variant}", cases))
        return suites


def listing_line(found: TriggerFigures) -> ValidityCheck | None:
    """Skills with queries of their own whose description the listing cut or dropped in most of a
    variant's sessions (where it listed them): their rates measure the listing's budget, not the
    description. None when no session's listing could be read."""
    summaries = [s for s in found.summaries if s.listing is not None]
    if not summaries:
        return None
    queried = {(s.variant, k.skill) for s in summaries for k in s.per_skill if k.should_fire}
    hidden = [
        (s.variant, x)
        for s in summaries
        for x in s.listing.skills  # type: ignore[union-attr]
        if (s.variant, x.skill) in queried and x.truncated + x.dropped > (x.sessions - x.absent) / 2
    ]
    if not hidden:
        return ValidityCheck(
            check="listing",
            status=CheckStatus.PASS,
            line="every skill with queries was listed with its description",
        )
    skills = {x.skill for _, x in hidden}
    return ValidityCheck(
        check="listing",
        status=CheckStatus.WARN,
        value=float(len(skills)),
        line=f"{len(skills)} skill(s) with queries listed without their whole description in most sessions "
        f"(of {len({v for v, _ in hidden})} variant(s)): their rates measure the listing's budget, not the "
        "description",
        items=[
            f"{v}: {x.skill} (cut {x.truncated}, dropped {x.dropped} of {x.sessions - x.absent})"
            for v, x in hidden
        ],
    )
