"""report.md says only what is true: triggering advice only for tasks that expect the skill, no band
word beside an unsettled verdict, a diagnosis label that names no judge where none was asked."""

from __future__ import annotations

from pathlib import Path

from flows.modes.agentic.markdown import report_markdown
from flows.modes.agentic.model import AgenticReport
from flows.report.diagnosis import run_failure
from flows.report.schema import load_report
from graders.grades import CheckResults

AGENTIC = Path(__file__).parents[2] / "data" / "reports_v1" / "agentic.json"


def not_invoked(report: AgenticReport, expect: str | None) -> AgenticReport:
    first = report.results[0]
    entry = first.variants["with-skill"]
    assert entry.behavior is not None
    entry.behavior = entry.behavior.model_copy(update={"skill_invoked": False})
    first.expect = expect
    return report


def test_triggering_advice_only_where_the_task_expects_the_skill() -> None:
    silent = report_markdown(not_invoked(load_report(AGENTIC, AgenticReport), None))
    assert "was not invoked" not in silent
    negative = report_markdown(not_invoked(load_report(AGENTIC, AgenticReport), "none"))
    assert "was not invoked" not in negative
    expects = report_markdown(not_invoked(load_report(AGENTIC, AgenticReport), "calc-skill"))
    assert "The skill was not invoked in 1 with-skill session(s) of tasks that expect it" in expects


def test_a_plugin_cases_grader_list_is_no_judges_words() -> None:
    report = load_report(AGENTIC, AgenticReport)
    case = report.results[0]
    entry = case.variants["with-skill"]
    assert entry.grade is not None
    grade = entry.grade.model_copy(
        update={
            "summary": "def-greet: FAIL; file-exists: pass",
            "weighted_total": 50.0,
            "plugin_eval_score": 0.5,
        }
    )
    failing = entry.model_copy(
        update={"grade": grade, "composite_score": 50.0, "checks": CheckResults(all_passed=False)}
    )
    found = run_failure(report, case.sample_id, failing)
    assert found is not None and found.reason is None


def test_no_band_word_beside_an_unsettled_verdict() -> None:
    report = load_report(AGENTIC, AgenticReport)
    (comp,) = report.comparisons
    comp.verdict = comp.verdict.model_copy(
        update={"label": "UNDERPOWERED", "band": None, "band_note": "no band: the verdict is UNDERPOWERED"}
    )
    md = report_markdown(report)
    assert "LIKELY" not in md and "DON'T USE" not in md


def test_the_summary_artifact_renders_a_pattern_as_written(tmp_path: Path) -> None:
    """A regex in a failure group keeps its asterisks when the Markdown is rendered (the Prefect UI
    ate them as italics), and the cache line is there."""
    from markdown_it import MarkdownIt

    from flows.report.ci import summary_markdown
    from flows.report.diagnosis_parts import Diagnosis, FailureGroup, VariantDiagnosis
    from tests.flows.report.synthetic import make_report

    report = make_report(tmp_path, {"v1": [3.0] * 6, "v2": [2.0] * 6})
    key = r"assertion regex: ^\W*cold\W*$ and _snake_case_"
    group = FailureGroup(key=key, kind="assertion", cases=["s0"], runs=1, share=1 / 6)
    report.diagnosis = Diagnosis(
        variants=[
            VariantDiagnosis.model_validate(
                {"variant": "v2", "cases": 6, "failingCases": 1, "groups": [group]}
            )
        ],
        suggestions=False,
        note="",
    )
    html = MarkdownIt().render(summary_markdown(report))
    assert r"^\W*cold\W*$ and _snake_case_" in html and "<em>" not in html
