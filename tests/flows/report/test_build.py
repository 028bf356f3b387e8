"""Building reports: the typed model, the file layout, blind labels, CI outputs, regression, migration."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from executors.redaction import MASK
from flows.report.build import DUMP, publish, report_path
from flows.report.ci import summary_markdown, write_junit
from flows.report.regression import compare_runs, history, regression_against_previous
from flows.report.schema import REPORT_VERSION, load_report, parse_report
from flows.report.store import read_reports
from flows.report.written import keeping_written
from tasks.schema import VerdictLabel
from tests.flows.report.synthetic import STARTED, make_report

BETTER = {"v1": [2.0, 2.5, 2.0, 3.0, 2.0, 2.5, 2.0, 2.5], "v2": [4.5, 5.0, 4.5, 5.0, 4.5, 5.0, 4.0, 5.0]}


def test_a_report_round_trips_through_its_file_layout(tmp_path: Path) -> None:
    report = make_report(tmp_path, BETTER)
    data = report.dump()
    assert data["version"] == REPORT_VERSION and data["mode"] == "sample"
    assert data["summary"]["v2"]["avgCompositeScore"] > data["summary"]["v1"]["avgCompositeScore"]
    assert "pass@k" in data["summary"]["v1"] and "compositeCI95" in data["summary"]["v1"]
    assert data["comparisons"][0]["verdict"]["label"] == "BETTER"
    assert data["results"][0]["variants"]["v1"]["caseStats"]["pass@k"] in {True, False}
    assert parse_report(json.loads(json.dumps(data))) == report


def test_the_command_reads_the_report_it_wrote_without_parsing_it_again(tmp_path: Path) -> None:
    """The file is the report's JSON; the next load of that file, while unchanged, is the report
    itself, once; a changed file is parsed, and a file with a key masked is never taken as written."""
    report = make_report(tmp_path, BETTER)
    publish(report, tmp_path / "reports")
    assert load_report(report_path(tmp_path / "reports", report.id)) is not report  # kept by a command only
    with keeping_written():
        path = publish(report, tmp_path / "reports")
        assert path.read_text().endswith("}\n") and parse_report(json.loads(path.read_text())) == report
        assert load_report(path) is report
        again = load_report(path)  # taken once: then the file
        assert again is not report and again == report
        publish(report, tmp_path / "reports")
        path.write_text(path.read_text().replace('"v1"', '"v1" ', 1))  # edited after the write
        assert load_report(path) is not report
        report.meta.model = "sk-ant-" + "x" * 30  # a key-shaped value, masked in the file
        masked = publish(report, tmp_path / "reports")
        assert load_report(masked).meta.model == MASK and "sk-ant-" not in masked.read_text()


def test_the_file_written_a_case_at_a_time_is_pydantics_own_json(tmp_path: Path) -> None:
    """The same bytes as the whole report dumped at once: with cases, without any, and with a key
    inside one case masked in that case alone."""
    report = make_report(tmp_path, BETTER, repeat=2)
    empty = report.model_copy(update={"results": []})
    leaky = make_report(tmp_path, BETTER, prompts={3: "use sk-ant-" + "y" * 30})
    for each in (report, empty, leaky):
        whole = each.model_dump_json(**DUMP) + "\n"
        written = publish(each, tmp_path / "out").read_text()
        assert written == (whole.replace("sk-ant-" + "y" * 30, MASK) if each is leaky else whole)
    assert MASK in written and written.count(MASK) == whole.count("sk-ant-")


def test_blind_relabels_labels_only(tmp_path: Path) -> None:
    scores = {"v1": [2.0, 2.0, 3.0], "v2": [4.0, 5.0, 4.0]}
    report = make_report(tmp_path, scores, blind=True)
    assert set(report.summary) == {"Variant A", "Variant B"}
    assert sorted(report.blind_mapping.values()) == ["v1", "v2"]  # type: ignore[union-attr]
    body = json.dumps({k: v for k, v in report.dump().items() if k not in {"blindMapping", "meta"}})
    assert '"v1"' not in body and '"v2"' not in body
    # a prompt that happens to equal a variant name is data, not a label: it is kept
    kept = make_report(tmp_path, scores, blind=True, prompts={0: "v1"})
    assert kept.results[0].prompt == "v1" and set(kept.summary) == {"Variant A", "Variant B"}


def test_junit_and_summary_from_the_typed_report(tmp_path: Path) -> None:
    report = make_report(tmp_path, BETTER)
    write_junit(report, tmp_path / "junit.xml", threshold=3.5)
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    assert suites.get("tests") == "16" and suites.get("failures") == "8"  # every v1 case is under 3.5
    failure = suites.find(".//testsuite[@name='skillab.v1']/testcase/failure")
    assert failure is not None and "score 2.00 < threshold 3.5" in (failure.text or "")
    text = summary_markdown(report, 3.5)
    assert "**v2 vs v1: BETTER (band: " in text and "CI threshold: 3.5" in text


def test_regression_against_the_previous_run_of_a_suite(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    first = make_report(tmp_path, {"v1": BETTER["v2"]}, suite="nightly")
    publish(first, reports)
    later = STARTED + dt.timedelta(days=1)
    second = make_report(tmp_path, {"v1": BETTER["v1"]}, suite="nightly", started=later)
    regression = regression_against_previous(reports, second)
    assert regression is not None and regression.previous == first.id and regression.regressed == ["v1"]
    assert regression.per_variant["v1"].verdict.label == VerdictLabel.WORSE
    assert compare_runs(first, first, seed=0).regressed == []
    second.regression = regression
    publish(second, reports)
    rows = history(reports, "nightly")
    assert [r.regressed for r in rows] == [[], ["v1"]]


def test_unreadable_files_in_the_reports_folder_are_skipped_with_a_warning(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    publish(make_report(tmp_path, BETTER), reports)
    (reports / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (reports / "truncated.json").write_text('{"version": 2, "id": "x"', encoding="utf-8")
    (reports / "foreign.json").write_text('{"name": "not a report"}', encoding="utf-8")
    warned: list[str] = []
    found = list(read_reports(reports, warn=lambda path, reason: warned.append(path.name)))
    assert len(found) == 1 and sorted(warned) == ["binary.json", "foreign.json", "truncated.json"]


def test_a_version_1_agentic_report_is_migrated() -> None:
    old = json.loads((Path(__file__).parents[2] / "data" / "reports_v1" / "agentic.json").read_text())
    assert old["version"] == 1
    report = parse_report(old)
    statuses = {
        run.grade.status
        for case in report.results
        for entry in case.variants.values()
        for run in [entry, *(entry.runs or [])]
        if run.grade is not None
    }
    assert report.version == REPORT_VERSION and statuses <= {"graded", "ungraded", "contaminated", "failed"}
