"""``--help`` printed from its kept text: the same text as built, and never a stale one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli import help_cache
from tests.flows.helpers import ROOT


def skillab(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"SKILLAB_HOME": str(home), "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "flows.bench", *argv], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_help_is_kept_and_printed_again_unchanged(tmp_path: Path) -> None:
    first = skillab(tmp_path, "run", "--help")
    assert first.returncode == 0 and "--variants" in first.stdout
    (kept,) = (tmp_path / "cache" / "help").glob("*.txt")
    assert kept.read_text() == first.stdout
    kept.write_text(first.stdout + "(from the cache)\n")  # proves the next one reads it
    again = skillab(tmp_path, "run", "--help")
    assert again.returncode == 0 and again.stdout == first.stdout + "(from the cache)\n"
    other = skillab(tmp_path, "skill", "run", "-h")  # another request: its own text
    assert "skill run" in other.stdout and "(from the cache)" not in other.stdout


def test_a_usage_error_is_not_kept(tmp_path: Path) -> None:
    bad = skillab(tmp_path, "run", "--retries", "many", "--help")
    assert bad.returncode == 2 and "--retries" in bad.stderr
    assert not list(tmp_path.glob("cache/help/*.txt"))


def test_a_changed_file_width_or_setting_asks_for_a_new_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = tmp_path / "code"
    for package in help_cache.PACKAGES:
        (code / package).mkdir(parents=True)
        (code / package / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(help_cache, "ROOT", code)
    monkeypatch.setenv("SKILLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "100")
    argv = ["run", "--help"]
    help_cache.keep(argv, "the text\n")
    assert help_cache.kept(argv) == "the text\n"
    assert help_cache.kept(["run", "-h"]) is None
    monkeypatch.setenv("SKILLAB_REPORT_PORT", "7800")
    assert help_cache.kept(argv) is None
    monkeypatch.delenv("SKILLAB_REPORT_PORT")
    monkeypatch.setenv("COLUMNS", "80")
    assert help_cache.kept(argv) is None
    monkeypatch.setenv("COLUMNS", "100")
    assert help_cache.kept(argv) == "the text\n"
    (code / "graders" / "a.py").write_text("x = 22\n")  # another size: the code changed
    assert help_cache.kept(argv) is None


def test_old_texts_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLAB_HOME", str(tmp_path))
    monkeypatch.setattr(help_cache, "KEPT", 3)
    for n in range(5):
        help_cache.keep(["run", f"-h{n}"], "t")
    assert len(list((tmp_path / "cache" / "help").glob("*.txt"))) == 3
    assert help_cache.kept(["run", "-h4"]) == "t" and help_cache.kept(["run", "-h0"]) is None
