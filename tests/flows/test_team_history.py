"""One history for a team: nights run on two machines keep their reports in one shared storage (a
folder, or s3:// on a real S3 protocol server), so the second machine's night is compared with the
first's, and `history --suite` on a third machine reads both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.engine.team_history import MAX_REPORT_BYTES, pull, suite_folder
from tests.fakes.provider import FakeProvider
from tests.fakes.s3 import s3_bucket
from tests.flows.helpers import answer, make_project, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")


def machine(root: Path, shared: str) -> list[str]:
    """A machine's own project, reports folder and cache; the team's one history URL."""
    make_project(root / "project", n=6)
    return [
        "run",
        "--executor",
        "openai",
        "--suite",
        "team caps",
        "--history-url",
        shared,
        "--output-dir",
        str(root / "reports"),
        "--cache-dir",
        str(root / "cache"),
        "--quiet",
    ]


def two_nights(
    tmp_path: Path, shared: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = machine(tmp_path / "a", shared), machine(tmp_path / "b", shared)
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        monkeypatch.chdir(tmp_path / "a" / "project")
        assert main(first) == 0
        monkeypatch.chdir(tmp_path / "b" / "project")
        (tmp_path / "b" / "project" / "skills" / "v2.md").write_text("Answer the question in full sentences.")
        assert main(second) == 1  # machine b's night regressed against machine a's
    (night_a,) = (tmp_path / "a" / "reports").glob("*.json")
    night_b = next(p for p in (tmp_path / "b" / "reports").glob("*.json") if p.name != night_a.name)
    regression = json.loads(night_b.read_text())["regression"]
    assert regression["previous"] == night_a.stem and regression["regressed"] == ["v2"]
    capsys.readouterr()
    third = tmp_path / "c" / "reports"
    assert (
        main(["history", "--suite", "team caps", "--reports-dir", str(third), "--history-url", shared]) == 0
    )
    out = capsys.readouterr()
    assert "suite team caps: 2 run(s)" in out.out and "2 report(s) of suite team caps" in out.err
    assert {p.name for p in third.glob("*.json")} == {night_a.name, night_b.name}


def test_a_shared_folder_is_one_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    two_nights(tmp_path, str(tmp_path / "shared"), monkeypatch, capsys)


def test_an_s3_bucket_is_one_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with s3_bucket(monkeypatch, "team-history") as bucket:
        two_nights(tmp_path, f"s3://{bucket}/skillab", monkeypatch, capsys)


def test_what_a_shared_storage_holds_is_bounded(tmp_path: Path) -> None:
    shared, dest = tmp_path / "shared", tmp_path / "mine"
    folder = shared / suite_folder("s")
    folder.mkdir(parents=True)
    (folder / "2026-12-01-ok.json").write_text("{}")
    (folder / "..hidden.json").write_text("{}")
    (folder / "notes.txt").write_text("x")
    with (folder / "2026-12-01-huge.json").open("wb") as huge:
        huge.truncate(MAX_REPORT_BYTES + 1)  # sparse: the bytes it would write count
    outside = tmp_path / "host-secret.json"
    outside.write_text('{"secret": true}')
    (folder / "2026-12-01-link.json").symlink_to(outside)  # a link that leaves the shared folder
    (folder / "2026-12-01-hard.json").hardlink_to(outside)
    (folder / "2026-12-01-dir.json").mkdir()
    dest.mkdir()
    (dest / "2026-12-01-ok.json").write_text('{"mine": true}')
    copied, refused = pull(str(shared), "s", dest)
    assert copied == 0 and json.loads((dest / "2026-12-01-ok.json").read_text()) == {"mine": True}
    assert sorted(r.split(":")[0] for r in refused) == [
        "..hidden.json",
        "2026-12-01-dir.json",
        "2026-12-01-hard.json",
        "2026-12-01-huge.json",
        "2026-12-01-link.json",
        "notes.txt",
    ]
    assert not any("secret" in p.read_text() for p in dest.glob("*.json"))
    assert not (dest / "2026-12-01-huge.json").exists()
