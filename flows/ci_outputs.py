"""CI outputs: a JUnit XML file (one test case per sample x variant) and a GitHub job summary."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tasks.files import atomic_write_text


def case_failure(entry: dict[str, Any], threshold: float) -> str | None:
    """Why a sample x variant fails the gate, or None when it passes."""
    if not entry.get("ok", True):
        runs = entry.get("runs") or [entry]
        errors = sorted({f"{r.get('errorKind')}: {r.get('error')}" for r in runs if not r.get("ok", True)})
        return "execution failed: " + "; ".join(errors)
    score = entry.get("compositeScore")
    if score is None:
        return "UNGRADED: the judge gave no usable score"
    if score < threshold:
        failed = [
            f"{a['type']}" + (f" ({a['message']})" if a.get("message") else "")
            for a in (entry.get("assertions") or {}).get("details", [])
            if not a.get("passed")
        ]
        reason = f"score {score:.2f} < threshold {threshold:g}"
        if failed:
            reason += "; failed assertions: " + ", ".join(failed)
        if entry.get("llmScore") is not None:
            reason += f"; judge {entry['llmScore']:.2f}: {entry.get('llmReason', '')}"
        return reason
    return None


def write_junit(report: dict[str, Any], path: Path, threshold: float) -> None:
    suites = ET.Element("testsuites", name=f"skillab {report['id']}")
    total_failures = 0
    for variant in report["summary"]:
        suite = ET.SubElement(suites, "testsuite", name=f"skillab.{variant}")
        tests = failures = 0
        for case in report["results"]:
            entry = case["variants"].get(variant)
            if entry is None:
                continue
            tests += 1
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=f"skillab.{variant}",
                name=case["sample_id"],
                time=f"{(entry.get('durationMs') or 0) / 1000:.3f}",
            )
            reason = case_failure(entry, threshold)
            if reason:
                failures += 1
                failure = ET.SubElement(tc, "failure", message=reason[:500], type="skillab")
                failure.text = reason
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        total_failures += failures
    suites.set("tests", str(sum(int(s.get("tests", 0)) for s in suites)))
    suites.set("failures", str(total_failures))
    ET.indent(suites)
    atomic_write_text(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def summary_markdown(report: dict[str, Any], threshold: float | None = None) -> str:
    meta = report["meta"]
    lines = [
        f"## skillab: {', '.join(meta['variants'])} on {meta['model']}",
        "",
        f"{meta['sampleCount']} samples × {meta.get('repeat', 1)} run(s) · executor {meta['executor']} · "
        f"judge {meta.get('judgeModel') or 'none'} · cost ${meta.get('totalCostUSD', 0):.4f} · report `{report['id']}`",
        "",
        "| variant | score | 95% CI | pass | errors | ungraded |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in report["summary"].items():
        ci = s.get("compositeCI95") or [None, None]
        fmt = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
        rate = "—" if s.get("passRate") is None else f"{s['passRate']:.0%}"
        lines.append(
            f"| {name} | {fmt(s['avgCompositeScore'])} | [{fmt(ci[0])}, {fmt(ci[1])}] | {rate} | "
            f"{s['errorCount']}/{s['executions']} | {s['ungradedCount']} |"
        )
    lines.append("")
    for c in report.get("comparisons") or []:
        v = c["verdict"]
        lines.append(
            f"**{c['treatment']} vs {c['control']}: {v['label']}** (band {v['band']}) — {v['reason']}"
        )
    regression = report.get("regression")
    if regression:
        lines += [
            "",
            f"Against the previous run `{regression['previous']}`: "
            + (
                "**REGRESSION in " + ", ".join(regression["regressed"]) + "**"
                if regression["regressed"]
                else "no significant regression."
            ),
        ]
    if threshold is not None:
        lines += ["", f"CI threshold: {threshold:g}"]
    return "\n".join(lines) + "\n"


def append_github_summary(report: dict[str, Any], path: Path, threshold: float | None) -> None:
    """Appends, as $GITHUB_STEP_SUMMARY expects (several steps may write to it)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(summary_markdown(report, threshold))
