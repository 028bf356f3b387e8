"""report.md's headline: the arms' averages when every task ran the same way in both arms, else the
paired mean with each task counted once (plugin eval cases with their own runs, replay cases)."""

from __future__ import annotations

from pathlib import Path

from flows.modes.agentic.markdown import report_markdown
from flows.modes.agentic.model import AgenticReport
from flows.report.schema import load_report

AGENTIC = Path(__file__).parents[2] / "data" / "reports_v1" / "agentic.json"


def headline(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("**Skill scores"))


def test_even_runs_keep_the_arms_averages() -> None:
    report = load_report(AGENTIC, AgenticReport)
    md = report_markdown(report)
    assert md.startswith("# Skill Benchmark Report: ")
    assert headline(md).endswith("than baseline on average.**")
    assert f"| Runs: {report.meta.runs}" in md


def test_uneven_runs_give_the_paired_mean_and_say_so() -> None:
    report = load_report(AGENTIC, AgenticReport)
    (comp,) = report.comparisons
    first = report.results[0]
    for entry in first.variants.values():  # this task ran twice, the others once
        entry.runs = [entry, entry.model_copy(update={"run": 2})]
    md = report_markdown(report)
    assert comp.paired.mean is not None
    sign = "higher" if comp.paired.mean >= 0 else "lower"
    assert headline(md) == (
        f"**Skill scores {abs(comp.paired.mean):.1f} points {sign} (0-100) than baseline on average over the "
        f"{comp.cases} tasks scored in both arms, each task counted once.**"
    )
    assert "| Runs: 1-2 per task" in md
