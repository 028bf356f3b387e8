"""CI outputs: a JUnit XML file (one test case per sample x variant) and a GitHub job summary."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from executors.errors import warn
from flows.report.console import economy_lines, fmt
from flows.report.entries import RunEntry
from flows.report.explain import explain_markdown
from flows.report.logtext import (
    artifact_change_lines,
    change_figures,
    control_lines,
    headline,
    md,
    regression_outcome,
    world_change_lines,
)
from flows.report.schema import CheckStatus, JunitCase, Report
from tasks.store.files import atomic_write_text


def write_junit(report: Report, path: Path, threshold: float, require_valid: bool = False) -> None:
    """JUnit XML: the mode's test suites (by default one per variant, a test case per case that fails
    when the case's score is under ``threshold``), then the validity certificate's checks."""
    suites = ET.Element("testsuites", name=f"skillab {report.id}")
    total_failures = 0
    for name, cases in junit_suites(report, threshold):
        suite = ET.SubElement(suites, "testsuite", name=f"skillab.{name}")
        for case in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"skillab.{name}", name=case.name)
            if case.seconds is not None:
                tc.set("time", f"{case.seconds:.3f}")
            if case.failure:
                failure = ET.SubElement(tc, "failure", message=case.failure[:500], type="skillab")
                failure.text = case.failure
            elif case.skipped:
                ET.SubElement(tc, "skipped", message=case.skipped[:500])
        failures = sum(1 for c in cases if c.failure)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failures))
        total_failures += failures
    total_failures += junit_validity(suites, report, require_valid)
    suites.set("tests", str(sum(int(s.get("tests", 0)) for s in suites)))
    suites.set("failures", str(total_failures))
    ET.indent(suites)
    atomic_write_text(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def junit_suites(report: Report, threshold: float) -> list[tuple[str, list[JunitCase]]]:
    """The mode's suites, or one per variant with a case per case of the report."""
    own = report.junit(threshold)
    return own if own is not None else per_case_suites(report, threshold, score_failure)


def score_failure(entry: RunEntry, threshold: float) -> str | None:
    """A case fails when it failed to run, has no score, or scores under ``threshold``."""
    if not entry.ok:
        return f"execution failed: {entry.error or 'no error recorded'}"
    if entry.composite_score is None:
        return "no score"
    if entry.composite_score < threshold:
        return f"score {entry.composite_score:.2f} < threshold {threshold:g}"
    return None


def per_case_suites(
    report: Report, threshold: float, failure: Callable[[Any, float], str | None]
) -> list[tuple[str, list[JunitCase]]]:
    """One suite per variant, a test case per case of the report, failing with ``failure``."""
    return [
        (
            variant,
            [
                JunitCase(case.sample_id, (entry.duration_ms or 0) / 1000, failure(entry, threshold))
                for case in report.results
                if (entry := case.variants.get(variant)) is not None
            ],
        )
        for variant in report.summary
    ]


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
    lines += [
        f"- {md(line)}"
        for line in (*artifact_change_lines(report), *world_change_lines(report), *control_lines(report))
    ]
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
        low, high = s.interval
        lines.append(
            f"| {md(name)} | {fmt(s.avg_composite_score)} | [{fmt(low)}, {fmt(high)}] | {s.pass_shown} | "
            f"{s.error_count}/{s.executions} | {s.ungraded_count} |"
        )
    economy = [f"- {md(line)}" for line in economy_lines(report)]
    lines += ["", *economy, *([""] if economy else [])]
    for c in report.comparisons:
        v = c.verdict
        lines.append(f"**{md(c.treatment)} vs {md(c.control)}: {headline(report, v)}** — {md(v.reason)}")
    lines += report.summary_parts()
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


def write_ci_outputs(
    report: Report, junit: str | None, github_summary: str | None, threshold: float, require_valid: bool
) -> None:
    """--junit and --github-summary, each where it was asked for; a file that cannot be written is a
    warning naming the report's own place (the run stands)."""
    for flag, target, write in (
        ("--junit", junit, lambda r, p, t: write_junit(r, p, t, require_valid)),
        ("--github-summary", github_summary, append_github_summary),
    ):
        if target:
            try:
                write(report, Path(target), threshold)
            except OSError as exc:
                warn(f"{flag}: could not write {target} ({exc.strerror or exc}); the report is {report.id}")
