"""Reports written by earlier versions (1 and 2), captured from real runs, still open everywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from flows.cli.main import main
from flows.modes.agentic.model import AgenticReport
from flows.modes.sample.model import SampleReport
from flows.modes.triggers.model import TriggerReport
from flows.report.regression import history
from flows.report.schema import REPORT_VERSION, Report, load_report, parse_report
from flows.report.server import create_app, export_html
from flows.report.store import read_reports

V1 = Path(__file__).resolve().parents[2] / "data" / "reports_v1"


def v1_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    for path in V1.glob("*.json"):
        report = load_report(path)  # named by id, as the report server expects
        shutil.copyfile(path, folder / f"{report.id}.json")
    return folder


def test_version_1_reports_render_in_the_report_server(tmp_path: Path) -> None:
    folder = v1_folder(tmp_path)
    reports = list(read_reports(folder, warn=lambda p, r: (_ for _ in ()).throw(AssertionError(f"{p}: {r}"))))
    assert {r.mode for r in reports} == {"sample", "agentic"} and len(reports) == 3
    client = TestClient(create_app(folder), base_url="http://127.0.0.1:7799")
    index = client.get("/")
    assert index.status_code == 200
    for report in reports:
        assert report.id in index.text
        page = client.get(f"/run/{report.id}")
        assert page.status_code == 200 and report.meta.model in page.text
        assert client.get(f"/api/run/{report.id}").json()["version"] == REPORT_VERSION
        assert "<svg" in export_html(report)


def test_version_1_reports_feed_history(tmp_path: Path) -> None:
    folder = v1_folder(tmp_path)
    for report in read_reports(folder):
        report.meta.suite = "old-suite"
        (folder / f"{report.id}.json").write_text(report.model_dump_json(by_alias=True), encoding="utf-8")
    rows = history(folder, "old-suite")
    assert len(rows) == 3 and all(row.means for row in rows)


V2 = V1.with_name("reports_v2")


def test_version_2_reports_read_as_their_mode_and_write_the_same_json() -> None:
    """Reports of the version before the per-mode models (captured from real runs of each mode) are
    read as their mode's class, and written back they are the same JSON, bar the version."""
    kinds: dict[str, type[Report]] = {
        "sample": SampleReport,
        "agentic": AgenticReport,
        "trigger": TriggerReport,
    }
    for mode, kind in kinds.items():
        path = V2 / f"{mode}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["version"] == 2 and data["mode"] == mode
        report = load_report(path, kind)
        assert report.dump() == {**data, "version": REPORT_VERSION}
        other_mode, other = next((m, k) for m, k in kinds.items() if m != mode)
        article = {"sample": "a", "agentic": "an", "trigger": "a"}
        wrong = f"{article[mode]} {mode} report, not {article[other_mode]} {other_mode} one"
        with pytest.raises(ValueError, match=wrong):
            load_report(path, other)


def test_a_field_of_another_mode_is_refused() -> None:
    data = json.loads((V2 / "trigger.json").read_text(encoding="utf-8"))
    first = next(iter(data["results"][0]["variants"].values()))
    first["llmScore"] = 4.0  # a sample-mode judge field in a trigger session
    with pytest.raises(ValueError, match="llmScore: Extra inputs are not permitted"):
        parse_report(data)


BAD_REPORTS = {
    "results-null": ({"mode": "agentic", "id": "a", "meta": {}, "results": None}, "not a valid report"),
    "controls-int": ({"version": 1, "mode": "agentic", "id": "b", "meta": {}, "negativeControls": 5}, "meta"),
    "case-int": ({"version": 1, "mode": "agentic", "id": "c", "meta": {}, "results": [1]}, "meta"),
    "variants-list": (
        {"version": 1, "mode": "agentic", "id": "d", "meta": {}, "results": [{"variants": [1]}]},
        "meta",
    ),
    "runs-int": (
        {
            "version": 1,
            "mode": "agentic",
            "id": "e",
            "meta": {},
            "results": [{"variants": {"x": {"runs": 7}}}],
        },
        "meta",
    ),
    "newer": ({"version": 99, "mode": "sample", "id": "f", "meta": {}}, "version 99"),
    "version-text": ({"version": "2", "mode": "sample", "id": "g", "meta": {}}, "version '2'"),
    "bogus-mode": ({"version": 2, "mode": "bogus", "id": "h", "meta": {}}, "bogus"),
}


def test_a_malformed_or_newer_report_is_refused_with_its_reason_never_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, (data, reason) in BAD_REPORTS.items():
        with pytest.raises(ValueError, match=reason):
            parse_report(data)
        (tmp_path / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    shutil.copyfile(V2 / "sample.json", tmp_path / "good.json")
    warned: list[tuple[Path, str]] = []
    (good,) = read_reports(tmp_path, warn=lambda path, why: warned.append((path, why)))
    assert good.mode == "sample" and len(warned) == len(BAD_REPORTS)
    for path, why in warned:  # one line with the reason, the path given apart
        assert str(path) not in why and "\n" not in why and why
    # asked for by its id, a bad file is a usage error that says why
    (tmp_path / "h.json").write_text(json.dumps(BAD_REPORTS["bogus-mode"][0]), encoding="utf-8")
    code = main(
        ["report", "--reports-dir", str(tmp_path), "--export", str(tmp_path / "x.html"), "--run", "h"]
    )
    assert code == 2 and "bogus" in capsys.readouterr().err


def test_a_report_copied_in_under_its_own_name_opens_by_its_id(tmp_path: Path) -> None:
    shutil.copyfile(V2 / "trigger.json", tmp_path / "from-a-colleague.json")
    report_id = json.loads((V2 / "trigger.json").read_text(encoding="utf-8"))["id"]
    out = tmp_path / "out.html"
    assert main(["report", "--reports-dir", str(tmp_path), "--export", str(out)]) == 0  # the newest
    assert main(["report", "--reports-dir", str(tmp_path), "--export", str(out), "--run", report_id]) == 0
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1:7799")
    assert client.get(f"/run/{report_id}").status_code == 200
