"""The report: the seed's JSON (meta, summary, results, analysis) plus the statistics, written
atomically, and the terminal summary."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
import random
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from tasks.files import atomic_write_json
from tasks.schema import Record

if TYPE_CHECKING:
    from flows.prepare import Prepared
    from flows.sample_bench import UnitRunner

REPORT_VERSION = 1

#: Plain-language notes for readers who are not statisticians; written into every report.
GUIDE = {
    "unit": "The case (sample) is the unit: each case's runs are averaged before variants are compared, "
    "because repeats of one case are not independent evidence.",
    "primary": "comparisons[].paired is the primary comparison: per-case differences (treatment minus "
    "control), their mean, a 95% interval (the range the true average difference plausibly lies in), "
    "the paired t-test and Wilcoxon p-values (how surprising the difference would be if the variants were "
    "equal), a seeded bootstrap interval, the effect size d_z, and cases improved/regressed/unchanged.",
    "verdict": "BETTER / WORSE: the whole interval lies beyond the practical margin. EQUIVALENT: it lies "
    "within the margin. UNDERPOWERED: too few cases to detect the effect you care about (min_effect); "
    "cases_needed says how many would. INCONCLUSIVE: none of these. INSUFFICIENT DATA: under 2 cases. "
    "If errored or ungraded runs pass max_error_rate, no improvement is claimed.",
    "seed": "Also computed as the original tools did, and labelled so: per-variant mean, std and 95% "
    "interval (summary), Welch's t-test over run means with --repeat (comparisons[].welchRuns), pass@k "
    "and pass^k (unbiased estimators, summary and caseStats), and the band USE .. DON'T USE from the mean "
    "delta in points of the scale's range (verdict.band).",
    "failures": "An errored call scores the scale minimum and is counted (errorRate); an UNGRADED judgement "
    "is excluded from means and counted (ungradedRate). Nothing is silently dropped.",
}
PREVIEW_CHARS = 200


def cli_version() -> str:
    try:
        return metadata.version("skillab")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def run_entry(record: Record) -> dict[str, Any]:
    """One execution in the seed's result shape, with the full output and any error."""
    r, g = record.result, record.grade
    entry: dict[str, Any] = {
        "run": record.run,
        "ok": r.ok,
        "compositeScore": g.composite if g else None,
        "assertions": None,
        "llmScore": g.judge.score if g else None,
        "llmReason": g.judge.reason if g else None,
        "judgeStatus": g.judge.status if g else None,
        "durationMs": round(r.latency_ms, 1),
        "inputTokens": r.usage.input_tokens,
        "outputTokens": r.usage.output_tokens,
        "totalTokens": r.usage.total_tokens,
        "costUSD": r.cost_usd,
        "outputPreview": r.output[:PREVIEW_CHARS],
        "output": r.output,
        "error": r.error,
        "errorKind": r.error_kind,
        "attempts": r.attempts,
        "cached": r.cached,
    }
    if g is not None:
        passed = [a for a in g.assertions if a.passed]
        entry["assertions"] = {
            "passed": len(passed),
            "total": len(g.assertions),
            "score": g.assertion_score,
            "details": [a.detail() for a in g.assertions],
        }
        if g.judge.dimension_scores:
            entry["dimensionScores"] = g.judge.dimension_scores
        if g.judge.judges:
            entry["judgeScores"] = g.judge.judges
        if g.judge.status == "ungraded":
            entry["judgeRaw"] = g.judge.raw
    return entry


def build_report(
    prepared: Prepared,
    records: list[Record],
    aggregate: dict[str, Any],
    runner: UnitRunner,
    started_at: dt.datetime,
    duration_s: float,
) -> dict[str, Any]:
    o = prepared.options
    names = [v.name for v in prepared.variants]
    stamp = started_at.strftime("%Y-%m-%dT%H-%M-%S")
    suffix = hashlib.sha256(f"{started_at.isoformat()}{random.random()}".encode()).hexdigest()[:6]
    report_id = f"{stamp}-{'-'.join(re.sub(r'[^A-Za-z0-9_.]', '_', n) for n in names)}-{suffix}"
    by_case: dict[str, dict[str, list[Record]]] = {}
    for rec in sorted(records, key=lambda r: r.run):
        by_case.setdefault(rec.sample_id, {}).setdefault(rec.variant, []).append(rec)
    results = []
    for sample in prepared.samples:
        variants: dict[str, Any] = {}
        for name in names:
            recs = by_case.get(sample.sample_id, {}).get(name, [])
            if not recs:
                continue
            runs = [run_entry(r) for r in recs]
            entry = dict(runs[0])
            stats = aggregate["caseStats"].get(sample.sample_id, {}).get(name, {})
            if len(runs) > 1:
                entry["compositeScore"] = stats.get("avg")
                entry["ok"] = all(r["ok"] for r in runs)
                entry["runs"] = runs
            entry["caseStats"] = stats
            variants[name] = entry
        results.append(
            {
                "sample_id": sample.sample_id,
                "prompt": sample.full_prompt,
                "rubric": sample.rubric,
                "dimensions": sample.dimensions,
                "tags": list(sample.tags),
                "cluster": sample.cluster,
                "variants": variants,
            }
        )
    total_cost = sum(r.result.cost_usd for r in records)
    meta = {
        "variants": names,
        "control": prepared.control,
        "model": prepared.target.model,
        "judgeModel": ", ".join(f"{j.executor.name}:{j.model}" for j in prepared.judges) or None,
        "executor": prepared.target.executor.name,
        "sampleCount": len(prepared.samples),
        "taskCount": len(records),
        "totalCostUSD": round(total_cost, 6),
        "judgeCostUSD": round(runner.spent_by_kind.get("judge", 0.0), 6),
        "timestamp": started_at.isoformat().replace("+00:00", "Z"),
        "cliVersion": cli_version(),
        "pythonVersion": platform.python_version(),
        "skillHashes": {v.name: v.sha256 for v in prepared.variants},
        "seed": o.seed,
        "repeat": o.repeat,
        "concurrency": o.concurrency,
        "temperature": o.temperature,
        "maxTokens": o.max_tokens,
        "samplesFile": str(prepared.samples_path),
        "samplesSha256": hashlib.sha256(prepared.samples_path.read_bytes()).hexdigest(),
        "suite": o.suite,
        "calls": runner.calls,
        "cacheHits": runner.cache_hits,
        "notRun": [
            {"sample_id": u.sample_id, "variant": u.variant, "run": u.run, "kind": u.kind}
            for u in runner.not_run
        ],
        "durationS": round(duration_s, 2),
        "notices": prepared.notices,
    }
    report: dict[str, Any] = {
        "version": REPORT_VERSION,
        "id": report_id,
        "mode": "sample",
        "meta": meta,
        "summary": aggregate["summary"],
        "comparisons": aggregate["comparisons"],
        "multipleComparisons": aggregate["multipleComparisons"],
        "judge": aggregate.get("judge"),
        "pairwise": aggregate.get("pairwise"),
        "scale": aggregate["scale"],
        "guide": GUIDE,
        "results": results,
        "analysis": aggregate["analysis"],
    }
    if o.blind:
        report = blind(report, names, o.seed)
    return report


def blind(report: dict[str, Any], names: list[str], seed: int) -> dict[str, Any]:
    """Relabel variants "Variant A/B/..." everywhere; the mapping is kept apart for the reveal button."""
    shuffled = list(names)
    random.Random(f"blind-{seed}-{report['id']}").shuffle(shuffled)
    labels = {name: f"Variant {chr(ord('A') + i)}" for i, name in enumerate(shuffled)}
    text = json.dumps({k: v for k, v in report.items() if k != "meta"})
    body = json.loads(text)

    def relabel(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {labels.get(k, k): relabel(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [relabel(v) for v in obj]
        if isinstance(obj, str) and obj in labels:
            return labels[obj]
        return obj

    out = relabel(body)
    meta = dict(report["meta"])
    meta["variants"] = sorted(labels[n] for n in names)
    meta["control"] = labels[meta["control"]]
    meta["skillHashes"] = {labels[k]: v for k, v in meta["skillHashes"].items()}
    meta["blind"] = True
    return {
        "version": report["version"],
        "id": report["id"],
        "mode": report["mode"],
        "meta": meta,
        **{k: v for k, v in out.items() if k not in {"version", "id", "mode"}},
        "blindMapping": {label: name for name, label in labels.items()},
    }


def report_path(output_dir: Path, report_id: str) -> Path:
    return output_dir / f"{report_id}.json"


def publish(report: dict[str, Any], prepared: Prepared) -> Path:
    path = report_path(prepared.output_dir, report["id"])
    atomic_write_json(path, report)
    return path


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_summary(report: dict[str, Any], path: Path | None, console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    scale = report["scale"]
    table = Table(
        title=f"skillab · {report['meta']['model']} · {report['meta']['sampleCount']} samples "
        f"× {report['meta'].get('repeat', 1)} run(s) · {scale['name']}"
    )
    for column in (
        "variant",
        "score",
        "95% CI",
        "assertions",
        "judge",
        "pass",
        "errors",
        "ungraded",
        "tokens",
        "latency ms",
        "cost $",
    ):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for name, s in report["summary"].items():
        ci = s.get("compositeCI95") or [None, None]
        table.add_row(
            name,
            _fmt(s["avgCompositeScore"]),
            f"[{_fmt(ci[0])}, {_fmt(ci[1])}]",
            _fmt(s["avgAssertionScore"]),
            _fmt(s["avgLlmScore"]),
            _fmt(s["passRate"] * 100 if s["passRate"] is not None else None, 0) + "%",
            f"{s['errorCount']}/{s['executions']}",
            str(s["ungradedCount"]),
            _fmt(s["avgTotalTokens"], 0),
            _fmt(s["avgDurationMs"], 0),
            f"{s['totalCostUSD']:.4f}",
        )
    console.print(table)
    for comp in report["comparisons"]:
        v, p = comp["verdict"], comp["paired"]
        console.print(
            f"[bold]{comp['treatment']} vs {comp['control']}[/bold]: [bold]{v['label']}[/bold] "
            f"(band: {v['band']}) — {v['reason']}  "
            f"improved {p['improved']} / regressed {p['regressed']} / unchanged {p['unchanged']} cases",
            highlight=False,
        )
    for pw in report.get("pairwise") or []:
        console.print(
            f"pairwise {pw['treatment']} vs {pw['control']}: wins {pw['wins']} / ties {pw['ties']} / "
            f"losses {pw['losses']} (sign test p={pw['p_sign']:.3g})",
            highlight=False,
        )
    judge = report.get("judge") or {}
    for pair in (judge.get("agreement") or {}).get("pairs", []):
        console.print(
            f"judges {' & '.join(pair['judges'])}: mean |diff| {_fmt(pair['meanAbsDiff'])}, "
            f"Pearson {_fmt(pair['pearson'])}, Krippendorff alpha (ordinal, all judges) "
            f"{_fmt(judge['agreement']['krippendorffAlphaOrdinal'])}",
            highlight=False,
        )
    for insight in report["analysis"]["insights"]:
        console.print(f"  · {insight['message']}", highlight=False)
    not_run = report["meta"].get("notRun") or []
    if not_run:
        console.print(
            f"  not run: {len(not_run)} call(s): --max-calls or --budget-usd was reached; "
            "re-run with a larger budget to complete them (finished calls are cached)",
            highlight=False,
        )
    for notice in report["meta"].get("notices", []):
        console.print(f"  note: {notice}", highlight=False)
    if path:
        console.print(f"report: {path}", highlight=False)
