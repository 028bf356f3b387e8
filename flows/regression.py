"""Regression tracking: each run of a named suite against the previous run of the same suite.

The previous run must have used the same model; cases are matched by sample_id (cases added or
removed since are counted, not compared). Per variant, the paired statistics of the case-level
differences (this run minus the previous one) give a verdict; WORSE is a regression.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tasks import statistics as st


def suite_reports(reports_dir: Path, suite: str) -> list[dict[str, Any]]:
    """Every readable report of the suite, oldest first."""
    out = []
    for path in reports_dir.glob("*.json"):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(report, dict) and (report.get("meta") or {}).get("suite") == suite:
            out.append(report)
    return sorted(out, key=lambda r: r["meta"].get("timestamp", ""))


def case_scores(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """variant -> sample_id -> the case's composite (mean over runs); blind labels resolved."""
    mapping = report.get("blindMapping") or {}
    out: dict[str, dict[str, float]] = {}
    for case in report.get("results", []):
        for label, entry in case.get("variants", {}).items():
            score = entry.get("compositeScore")
            if score is not None:
                out.setdefault(mapping.get(label, label), {})[case["sample_id"]] = float(score)
    return out


def compare_runs(previous: dict[str, Any], current: dict[str, Any], *, seed: int) -> dict[str, Any]:
    scale = current.get("scale") or {"margin": 0.1, "min_effect": 0.3, "minimum": 1.0, "maximum": 5.0}
    before, after = case_scores(previous), case_scores(current)
    per_variant: dict[str, Any] = {}
    for variant in sorted(set(before) & set(after)):
        shared = sorted(set(before[variant]) & set(after[variant]))
        diffs = [after[variant][s] - before[variant][s] for s in shared]
        paired = st.paired(diffs, seed=seed)
        verdict = st.verdict(
            st.VerdictInputs(
                comparison=paired,
                margin=scale["margin"],
                min_effect=scale["min_effect"],
                p_value=paired["p_ttest"],
                points_per_unit=100.0 / (scale["maximum"] - scale["minimum"]),
                error_rates=(0.0, 0.0),
                max_error_rate=1.0,
            )
        )
        per_variant[variant] = {
            "cases": len(shared),
            "casesAdded": len(set(after[variant]) - set(before[variant])),
            "casesRemoved": len(set(before[variant]) - set(after[variant])),
            "meanBefore": sum(before[variant][s] for s in shared) / len(shared) if shared else None,
            "meanAfter": sum(after[variant][s] for s in shared) / len(shared) if shared else None,
            "paired": paired,
            "verdict": verdict,
            "perCase": {s: d for s, d in zip(shared, diffs, strict=True) if d != 0},
        }
    regressed = sorted(v for v, r in per_variant.items() if r["verdict"]["label"] == "WORSE")
    return {
        "previous": previous["id"],
        "previousTimestamp": previous["meta"].get("timestamp"),
        "perVariant": per_variant,
        "regressed": regressed,
    }


def regression_against_previous(reports_dir: Path, report: dict[str, Any]) -> dict[str, Any] | None:
    """The comparison with the newest earlier run of the same suite and model, if any."""
    suite = report["meta"].get("suite")
    if not suite:
        return None
    earlier = [
        r
        for r in suite_reports(reports_dir, suite)
        if r["id"] != report["id"]
        and r["meta"].get("model") == report["meta"].get("model")
        and r["meta"].get("timestamp", "") < report["meta"].get("timestamp", "")
    ]
    if not earlier:
        return None
    return compare_runs(earlier[-1], report, seed=int(report["meta"].get("seed") or 0))


def history(reports_dir: Path, suite: str) -> list[dict[str, Any]]:
    """One row per run of the suite: when, which model, each variant's mean, verdicts, regressions."""
    rows = []
    for report in suite_reports(reports_dir, suite):
        mapping = report.get("blindMapping") or {}
        rows.append(
            {
                "id": report["id"],
                "timestamp": report["meta"].get("timestamp", ""),
                "model": report["meta"].get("model"),
                "means": {
                    mapping.get(k, k): v.get("avgCompositeScore")
                    for k, v in report.get("summary", {}).items()
                },
                "verdicts": [c["verdict"]["label"] for c in report.get("comparisons") or []],
                "regressed": (report.get("regression") or {}).get("regressed") or [],
            }
        )
    return rows
