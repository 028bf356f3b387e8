"""Reports written by the previous version (1), captured from real runs, still open everywhere."""

from __future__ import annotations

import shutil
from pathlib import Path

from starlette.testclient import TestClient

from flows.report.regression import history
from flows.report.schema import load_report
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
        assert client.get(f"/api/run/{report.id}").json()["version"] == 2
        assert "<svg" in export_html(report)


def test_version_1_reports_feed_history(tmp_path: Path) -> None:
    folder = v1_folder(tmp_path)
    for report in read_reports(folder):
        report.meta.suite = "old-suite"
        (folder / f"{report.id}.json").write_text(report.model_dump_json(by_alias=True), encoding="utf-8")
    rows = history(folder, "old-suite")
    assert len(rows) == 3 and all(row["means"] for row in rows)
