"""report.md says only what is true: triggering advice only for tasks that expect the skill, no band
word beside an unsettled verdict, a diagnosis label that names no judge where none was asked."""

from __future__ import annotations

from pathlib import Path

from flows.report.diagnosis import run_failure
from flows.report.markdown import report_markdown
from flows.report.schema import Report, load_report

AGENTIC = Path(__file__).parents[2] / "data" / "reports_v1" / "agentic.json"


def not_invoked(report: Report, expect: str | None) -> Report:
    first = report.results[0]
    entry = first.variants["with-skill"]
    entry.behavior = (entry.behavior or {}) | {"skill_invoked": False}
    first.expect = expect
    return report


def test_triggering_advice_only_where_the_task_expects_the_skill() -> None:
    silent = report_markdown(not_invoked(load_report(AGENTIC), None))
    assert "was not invoked" not in silent
    negative = report_markdown(not_invoked(load_report(AGENTIC), "none"))
    assert "was not invoked" not in negative
    expects = report_markdown(not_invoked(load_report(AGENTIC), "calc-skill"))
    assert "The skill was not invoked in 1 with-skill session(s) of tasks that expect it" in expects


def test_a_plugin_cases_grader_list_is_no_judges_words() -> None:
    report = load_report(AGENTIC)
    case = report.results[0]
    entry = case.variants["with-skill"]
    assert entry.grade is not None
    grade = entry.grade.model_copy(
        update={"summary": "def-greet: FAIL; file-exists: pass", "weighted_total": 50.0}
    )
    grade.__pydantic_extra__ = {"plugin_eval_score": 0.5}
    failing = entry.model_copy(
        update={"grade": grade, "composite_score": 50.0, "checks": {"all_passed": False}}
    )
    found = run_failure(report, case.sample_id, failing)
    assert found is not None and found.reason is None


def test_no_band_word_beside_an_unsettled_verdict() -> None:
    report = load_report(AGENTIC)
    (comp,) = report.comparisons
    comp.verdict = comp.verdict.model_copy(
        update={"label": "UNDERPOWERED", "band": None, "band_note": "no band: the verdict is UNDERPOWERED"}
    )
    md = report_markdown(report)
    assert "LIKELY" not in md and "DON'T USE" not in md
