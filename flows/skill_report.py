"""report.md in the seed's format, with the paired verdict beside the seed's band."""

from __future__ import annotations

from typing import Any

from graders.criteria import WEIGHTS

EMOJI = {"USE": "✅", "LIKELY USE": "👍", "NEUTRAL": "➖", "LIKELY DON'T USE": "⚠️", "DON'T USE": "❌"}


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}%"


def _delta(a: float | None, b: float | None, unit: str = "%") -> str:
    if a is None or b is None:
        return "—"
    if unit == "$":
        return f"{'+' if a >= b else '-'}${abs(a - b):.4f}"
    return f"{a - b:+.1f}{unit}"


def report_markdown(report: dict[str, Any]) -> str:
    meta, summary = report["meta"], report.get("summary") or {}
    skill, base = summary.get("with-skill", {}), summary.get("baseline", {})
    comp = (report.get("comparisons") or [{}])[0]
    verdict = comp.get("verdict") or {}
    band = verdict.get("band") or "INSUFFICIENT DATA"
    mean_s, mean_b = skill.get("avgCompositeScore"), base.get("avgCompositeScore")
    delta = None if mean_s is None or mean_b is None else mean_s - mean_b
    lines = [
        f"# Skill Benchmark Report: {meta['skill']}",
        f"Date: {meta['timestamp'][:16].replace('T', ' ')}",
        f"Runner Model: {meta['model']} ({meta['executor']}) | Judge Model: {meta['judgeModel']} | "
        f"Tasks: {meta['sampleCount']} | Runs: {meta['runs']}",
        "",
        f"## Verdict: {EMOJI.get(band, '')} {band}",
        f"**Skill scores {abs(delta or 0):.1f}% {'higher' if (delta or 0) >= 0 else 'lower'} than baseline on average.**"
        if delta is not None
        else "**Not enough completed sessions to compare.**",
        "",
        f"Paired analysis over tasks: **{verdict.get('label', 'INSUFFICIENT DATA')}** — {verdict.get('reason', '')}",
        "",
        "## Summary",
        "| Metric | With Skill | Baseline | Delta |",
        "|--------|-----------|----------|-------|",
        f"| Avg Score | {_pct(mean_s)} | {_pct(mean_b)} | {_delta(mean_s, mean_b)} |",
    ]
    crit = report.get("criteria") or {}
    for name in WEIGHTS:
        a, b = (crit.get("with-skill") or {}).get(name), (crit.get("baseline") or {}).get(name)
        lines.append(f"| {name.title()} | {_pct(a)} | {_pct(b)} | {_delta(a, b)} |")
    rates = report.get("deterministicPassRate") or {}
    n = meta["sampleCount"] * meta["runs"]
    lines += [
        "",
        "## Deterministic Check Pass Rate",
        "| Condition | Pass Rate |",
        "|-----------|-----------|",
    ]
    for mode, label in (("with-skill", "With Skill"), ("baseline", "Baseline")):
        r = rates.get(mode)
        lines.append(
            f"| {label} | {round((r or 0) * n)}/{n} sessions ({_pct(None if r is None else r * 100)}) |"
        )
    lines += [
        "",
        "## Per-Task Breakdown",
        "| # | Task | Type | Difficulty | Skill | Baseline | Delta | Winner |",
        "|---|------|------|-----------|-------|----------|-------|--------|",
    ]
    helps, hurts = [], []
    for i, r in enumerate(report["results"], start=1):
        s = (r["variants"].get("with-skill") or {}).get("compositeScore")
        b = (r["variants"].get("baseline") or {}).get("compositeScore")
        winner = "—" if s is None or b is None else "Skill" if s > b else "Baseline" if b > s else "Tie"
        if winner == "Skill":
            helps.append(r)
        elif winner == "Baseline":
            hurts.append(r)
        kind = "negative" if r["type"] == "negative-control" else "positive"
        lines.append(
            f"| {i} | {r['name']} | {kind} | {r['difficulty'] if kind == 'positive' else '-'} | "
            f"{_pct(s)} | {_pct(b)} | {_delta(s, b)} | {winner} |"
        )
    lines += ["", "## Negative Control Results"]
    negatives = report.get("negativeControls") or []
    if not negatives:
        lines.append(
            "No negative-control task in this suite: add one to catch a skill that hurts unrelated work."
        )
    for r in negatives:
        s = (r["variants"].get("with-skill") or {}).get("compositeScore")
        b = (r["variants"].get("baseline") or {}).get("compositeScore")
        flag = (
            " **The skill hurt an out-of-domain task: a red flag.**"
            if s is not None and b is not None and s < b - 3
            else ""
        )
        lines.append(f"- {r['name']}: with skill {_pct(s)}, baseline {_pct(b)}.{flag}")
    lines += ["", "## Where Skill Helps"] + (
        [f"- {r['name']} ({r['difficulty']}, {r['category']})" for r in helps]
        or ["- No task where the skill scored higher."]
    )
    lines += ["", "## Where Skill Hurts"] + (
        [f"- {r['name']} ({r['difficulty']}, {r['category']})" for r in hurts]
        or ["- No task where the baseline scored higher."]
    )
    beh = report.get("behavior") or {}
    s_b, b_b = beh.get("with-skill") or {}, beh.get("baseline") or {}
    lines += [
        "",
        "## Behavioral Analysis",
        "| Metric | With Skill | Baseline | Delta |",
        "|--------|-----------|----------|-------|",
    ]
    for key, label, unit in (
        ("avgToolCalls", "Avg Tool Calls", ""),
        ("avgTurns", "Avg Turns", ""),
        ("avgDurationS", "Avg Duration (s)", ""),
        ("avgCostUSD", "Avg Cost", "$"),
        ("totalCostUSD", "Total Cost", "$"),
    ):
        a, b = s_b.get(key), b_b.get(key)
        fmt = (
            (lambda v: "—" if v is None else f"${v:.4f}")
            if unit == "$"
            else (lambda v: "—" if v is None else f"{v:.1f}")
        )
        lines.append(f"| {label} | {fmt(a)} | {fmt(b)} | {_delta(a, b, unit or '')} |")
    lines.append(
        f"| Thrashing Detected | {s_b.get('thrashing', 0)}/{s_b.get('sessions', 0)} | "
        f"{b_b.get('thrashing', 0)}/{b_b.get('sessions', 0)} | |"
    )
    lines.append(
        f"| Skill Invoked | {s_b.get('skillInvoked', 0)}/{s_b.get('sessions', 0)} | "
        f"{b_b.get('skillInvoked', 0)}/{b_b.get('sessions', 0)} | |"
    )
    lines += ["", "## Recommendations"]
    recs = list((report.get("analysis") or {}).get("suggestions") or [])
    if verdict.get("label") == "UNDERPOWERED":
        recs.append(
            f"Add tasks: about {verdict.get('cases_needed')} are needed to detect {verdict.get('min_effect')} points."
        )
    if hurts:
        recs.append("Review the tasks where the baseline won: " + ", ".join(r["name"] for r in hurts))
    if meta.get("contaminated"):
        recs.append(
            f"{len(meta['contaminated'])} session(s) were contaminated and excluded: "
            + "; ".join(f"{c['task']} {c['mode']}: {c['reason']}" for c in meta["contaminated"])
        )
    if s_b.get("sessions") and s_b.get("skillInvoked", 0) < s_b["sessions"]:
        recs.append("The skill was not invoked in every with-skill session: check its trigger description.")
    lines += [f"- {r}" for r in recs] or ["- None."]
    lines += ["", f"Full results: {meta['resultsDir']} (suite sha256 {meta['suiteSha256'][:12]})", ""]
    return "\n".join(lines)
