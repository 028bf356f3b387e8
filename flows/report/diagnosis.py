"""Failure diagnosis read from a report: each variant's failing runs, what failed in each (assertion
and its value, sandbox check, judge criterion, error) and the judge's reason, grouped by
``tasks.stats.diagnosis``. Works on any mode's report, so sample and agentic runs share it."""

from __future__ import annotations

from typing import Any

from flows.report.diagnosis_parts import Diagnosis, VariantDiagnosis
from flows.report.entries import AgentRun, AssertionDetail, RunEntry, SampleRun, SessionRun
from flows.report.schema import Report
from tasks.stats.diagnosis import Failure, FailureKind, group_failures

NOTE = (
    "Groups are computed from the results. Each suggestion is an LLM's reading of the failing cases "
    "and the artifact: a hypothesis to test with a re-run, not a finding."
)


def assertion_key(a: AssertionDetail) -> str:
    shown: Any = a.value
    if a.values:
        shown = ", ".join(a.values)
    for alternative in (a.pattern, a.reference, a.fn):
        if shown is None and alternative is not None:
            shown = alternative
    text = a.type if shown is None else f"{a.type}: {str(shown)[:60]}"
    return f"not {text}" if a.negate else text


def sample_what(run: SampleRun, threshold: float) -> list[tuple[FailureKind, str, str]]:
    what: list[tuple[FailureKind, str, str]] = [
        ("assertion", assertion_key(a), a.message or "")
        for a in (run.assertions.details if run.assertions else [])
        if not a.passed
    ]
    reason = run.llm_reason or ""
    if run.judge_status == "ungraded":
        what.append(("judge", "judge: UNGRADED", reason))
    elif run.dimension_scores:
        what += [
            ("judge", f"judge dimension: {name}", reason)
            for name, s in run.dimension_scores.items()
            if s < threshold
        ]
    elif run.llm_score is not None and run.llm_score < threshold:
        what.append(("judge", "judge: rubric", reason))
    return what


def agentic_what(run: AgentRun, threshold: float) -> list[tuple[FailureKind, str, str]]:
    what: list[tuple[FailureKind, str, str]] = [
        ("check", f"check {d.check}", d.reason)
        for d in run.check_details or []
        if d.passed is False and not d.indicator  # a plugin-fired indicator is no failure
    ]
    for name, score in (run.criteria or {}).items():
        if score < threshold:
            criterion = getattr(run.grade, name, None) if run.grade is not None else None
            what.append(("judge", f"judge criterion: {name}", criterion.justification if criterion else ""))
    for e in (run.grade.expectations or []) if run.grade is not None else []:
        if not e.passed:  # a skill-creator eval's expectation
            what.append(("judge", f"expectation: {e.text}", e.evidence))
    return what


def run_failure(report: Report, sample_id: str, run: RunEntry) -> Failure | None:
    """The run as a failure, or None when it passed (or was excluded as contaminated)."""
    threshold = report.scale.pass_threshold
    if isinstance(run, AgentRun) and run.contaminated:
        return None
    if not run.ok:
        kind = (
            run.error_kind
            if isinstance(run, SampleRun)
            else run.status
            if isinstance(run, SessionRun)
            else None
        ) or "error"
        return Failure(sample_id, run.run, (("error", f"error: {kind}", run.error or ""),))
    low = run.composite_score is not None and run.composite_score < threshold
    if isinstance(run, AgentRun):
        checks_failed = run.checks is not None and not run.checks.all_passed
        if not (checks_failed or low or (run.grade is not None and run.grade.status == "ungraded")):
            return None
        reason = run.grade.summary if run.grade is not None else None
        if run.grade is not None and run.grade.plugin_eval_score is not None:
            reason = None  # a plugin case's summary lists its graders (already in `what`), no judge's words
        return Failure(sample_id, run.run, tuple(agentic_what(run, 70.0)), reason or None)
    if isinstance(run, SampleRun) and (low or run.judge_status == "ungraded"):
        return Failure(sample_id, run.run, tuple(sample_what(run, threshold)), run.llm_reason or None)
    return None


def diagnosis(report: Report) -> Diagnosis:
    """The Diagnosis part, without suggestions (``flows.engine.diagnose`` adds them)."""
    variants = []
    for name in report.summary or report.meta.variants:
        failures: list[Failure] = []
        cases = 0
        for case in report.results:
            entry = case.variants.get(name)
            if entry is None:
                continue
            cases += 1
            for run in entry.runs or [entry]:
                failure = run_failure(report, case.sample_id, run)
                if failure is not None:
                    failures.append(failure)
        variants.append(
            VariantDiagnosis(
                variant=name,
                cases=cases,
                failing_cases=len({f.sample_id for f in failures}),
                groups=group_failures(failures, cases),
            )
        )
    return Diagnosis(variants=variants, suggestions=False, note=NOTE)
