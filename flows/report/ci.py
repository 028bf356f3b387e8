"""CI outputs: a JUnit XML file (one test case per sample x variant) and a GitHub job summary."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from flows.report.console import economy_lines, fmt
from flows.report.entries import SampleVariantResult
from flows.report.explain import explain_markdown
from flows.report.logtext import (
    artifact_change_lines,
    change_figures,
    headline,
    md,
    regression_outcome,
)
from flows.report.schema import CheckStatus, Report, SampleReport
from tasks.store.files import atomic_write_text


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


def write_junit(report: SampleReport, path: Path, threshold: float, require_valid: bool = False) -> None:
    suites = ET.Element("testsuites", name=f"skillab {report.id}")
    total_failures = 0
    for variant in report.summary:
        suite = ET.SubElement(suites, "testsuite", name=f"skillab.{variant}")
        tests = failures = 0
        for case in report.results:
            entry = case.variants.get(variant)
            if entry is None:
                continue
            tests += 1
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=f"skillab.{variant}",
                name=case.sample_id,
                time=f"{(entry.duration_ms or 0) / 1000:.3f}",
            )
            reason = case_failure(entry, threshold)
            if reason:
                failures += 1
                failure = ET.SubElement(tc, "failure", message=reason[:500], type="skillab")
                failure.text = reason
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        total_failures += failures
    total_failures += junit_validity(suites, report, require_valid)
    suites.set("tests", str(sum(int(s.get("tests", 0)) for s in suites)))
    suites.set("failures", str(total_failures))
    ET.indent(suites)
    atomic_write_text(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def junit_validity(suites: ET.Element, report: Report, require_valid: bool) -> int:
    """The certificate as a test suite, one test per check: a FAIL is a failure under --require-valid,
    else a skipped test saying so (the gate was not asked for); returns the failures."""
    if report.validity is None:
        return 0
    suite = ET.SubElement(
        suites, "testsuite", name="skillab.validity", tests=str(len(report.validity.checks))
    )
    failures = 0
    for check in report.validity.checks:
        tc = ET.SubElement(suite, "testcase", classname="skillab.validity", name=check.check)
        ET.SubElement(tc, "system-out").text = f"{check.status}: {check.line}"
        if check.status == CheckStatus.FAIL and require_valid:
            failures += 1
            ET.SubElement(tc, "failure", message=check.line[:500], type="skillab.validity").text = check.line
        elif check.status == CheckStatus.FAIL:
            ET.SubElement(
                tc, "skipped", message=f"not certified (--require-valid not given): {check.line[:400]}"
            )
    suite.set("failures", str(failures))
    return failures


def validity_markdown(report: Report, heading: str = "###") -> list[str]:
    """The certificate as a table under a ``heading`` of its level: every check with its status and
    finding."""
    v = report.validity
    if v is None:
        return []
    lines = ["", f"{heading} Validity: {md(v.line)}", "", "| check | status | finding |", "|---|---|---|"]
    lines += [f"| {md(c.check)} | {c.status} | {md(c.line)} |" for c in v.checks]
    return lines


def regression_markdown(report: Report) -> list[str]:
    """The suite against its previous run: each variant's means, change and interval, the artifacts
    that changed, the outcome."""
    r = report.regression
    if r is None:
        return []
    lines = ["", f"### Against the previous run `{r.previous}`", ""]
    for name, v in r.per_variant.items():
        mark = "**REGRESSED**" if name in r.regressed else str(v.verdict.label)
        lines.append(f"- {md(name)}: {mark}, {md(change_figures(v))}")
    lines += [f"- {md(line)}" for line in artifact_change_lines(report)]
    lines += ["", md(regression_outcome(report))]
    return lines


def summary_markdown(report: Report, threshold: float | None = None) -> str:
    meta = report.meta
    lines = [
        f"## skillab: {md(', '.join(meta.variants))} on {md(meta.model)}",
        "",
        f"{meta.sample_count} samples × {meta.repeat} run(s) · executor {meta.executor} · "
        f"judge {meta.judge_model or 'none'} · cost ${meta.total_cost_usd:.4f} · report `{report.id}`",
        "",
        "| variant | score | 95% CI | pass | errors | ungraded |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in report.summary.items():
        low, high = [*s.composite_ci95, None, None][:2]
        rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
        lines.append(
            f"| {md(name)} | {fmt(s.avg_composite_score)} | [{fmt(low)}, {fmt(high)}] | {rate} | "
            f"{s.error_count}/{s.executions} | {s.ungraded_count} |"
        )
    economy = [f"- {md(line)}" for line in economy_lines(report)]
    lines += ["", *economy, *([""] if economy else [])]
    for c in report.comparisons:
        v = c.verdict
        lines.append(f"**{md(c.treatment)} vs {md(c.control)}: {headline(report, v)}** — {md(v.reason)}")
    lines += validity_markdown(report)
    lines += regression_markdown(report)
    lines += explain_markdown(report)
    if threshold is not None:
        lines += ["", f"CI threshold: {threshold:g}"]
    return "\n".join(lines) + "\n"


def append_github_summary(report: Report, path: Path, threshold: float | None) -> None:
    """Appends, as $GITHUB_STEP_SUMMARY expects (several steps may write to it)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(summary_markdown(report, threshold))
