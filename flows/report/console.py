"""The terminal summary of a report: the per-variant table, each verdict, insights and notices."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from executors.schema import terminal
from flows.report.explain import explain_lines
from flows.report.logtext import headline, regression_lines, validity_lines
from flows.report.schema import Report

COLUMNS = (
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
)


def fmt(value: float | int | str | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def summary_table(report: Report) -> Table:
    meta = report.meta
    table = Table(
        title=f"skillab · {meta.model} · {meta.sample_count} samples × {meta.repeat} run(s) · {report.scale.name}"
    )
    for column in COLUMNS:
        table.add_column(column, justify="left" if column == "variant" else "right")
    for name, s in report.summary.items():
        low, high = s.interval
        table.add_row(
            name,
            fmt(s.avg_composite_score),
            f"[{fmt(low)}, {fmt(high)}]",
            fmt(s.avg_assertion_score),
            fmt(s.avg_llm_score),
            fmt(s.pass_rate * 100 if s.pass_rate is not None else None, 0) + "%",
            f"{s.error_count}/{s.executions}",
            str(s.ungraded_count),
            fmt(s.avg_total_tokens, 0),
            fmt(s.avg_duration_ms, 0),
            f"{s.total_cost_usd:.4f}",
        )
    return table


def shown(text: str) -> str:
    """A line of the report as the console prints it: control characters escaped, and brackets
    that rich would read as markup kept as text (a diagnosis or a case name can hold either)."""
    return escape(terminal(text))


def print_summary(report: Report, path: Path | None, console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    console.print(summary_table(report))
    for comp in report.comparisons:
        v, p = comp.verdict, comp.paired
        console.print(
            f"[bold]{comp.treatment} vs {comp.control}[/bold]: [bold]{headline(report, v)}[/bold] — "
            f"{v.reason}  "
            f"improved {p.improved} / regressed {p.regressed} / unchanged {p.unchanged} cases",
            highlight=False,
        )
    for pw in report.pairwise or []:
        console.print(
            f"pairwise {pw.treatment} vs {pw.control}: wins {pw.wins} / ties {pw.ties} / "
            f"losses {pw.losses} (sign test p={pw.p_sign:.3g})",
            highlight=False,
        )
    agreement = report.judge.agreement if report.judge else None
    for pair in agreement.pairs if agreement else []:
        console.print(
            f"judges {' & '.join(pair.judges)}: mean |diff| {fmt(pair.mean_abs_diff)}, "
            f"Pearson {fmt(pair.pearson)}, Krippendorff alpha (ordinal, all judges) "
            f"{fmt(agreement.krippendorff_alpha_ordinal if agreement else None)}",
            highlight=False,
        )
    for insight in report.analysis.insights:
        console.print(f"  · {shown(insight.message)}", highlight=False)
    for line in explain_lines(report):
        console.print(f"  ? {shown(line)}", highlight=False)
    for line in economy_lines(report):
        console.print(f"  {shown(line)}", highlight=False)
    for line in regression_lines(report):
        console.print(f"  {shown(line)}", highlight=False)
    for notice in report.meta.notices:
        console.print(f"  note: {shown(notice)}", highlight=False)
    for line in validity_lines(report):
        console.print(shown(line), highlight=False)
    if path:
        console.print(f"report: {path}", highlight=False)


def economy_lines(report: Report) -> list[str]:
    """What caching and batching saved, and what this run left undone (budgets, pending batches)."""
    meta, lines, kind = report.meta, [], type(report)  # the mode's report class says its units
    if meta.cache_hits:
        made = f"{kind.unit}(s) {kind.unit_verb}"
        lines.append(f"cache: {meta.cache_hits:,} result(s) taken from the cache, {meta.calls or 0:,} {made}")
    if reused := meta.reused_line():
        lines.append(
            f"reused: {reused} (nothing that decides them changed; --no-reuse-baseline runs them again)"
        )
    if caching := meta.caching_line():
        lines.append(caching)
    if meta.batched_calls:
        lines.append(f"batch: {meta.batched_calls} call(s) answered through the batch API at its discount")
    pending = sum(1 for u in meta.not_run if u.reason == "batch pending")
    if pending:
        lines.append(
            f"batch: {pending} call(s) still in a batch; re-run to collect them (nothing is resubmitted)"
        )
    if len(meta.not_run) > pending:
        units = f"{kind.unit}(s)"
        again = (
            f"re-run with a larger budget to complete them (finished {kind.unit}s are cached)"
            if kind.caches
            else "re-run with a larger budget to run the suite in full"
        )
        lines.append(
            f"not run: {len(meta.not_run) - pending} {units}: --max-calls or --budget-usd was reached; {again}"
        )
    return lines
