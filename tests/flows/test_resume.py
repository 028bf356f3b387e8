"""kill -9 in the middle of a run, then re-run: finished units are never called again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, bench_process, make_project, subprocess_env, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")


def run_args(project: Path, *, concurrency: int | None = None) -> list[str]:
    args = ["run", "--executor", "openai", "--output-dir", str(project / "reports")]
    args += ["--cache-dir", str(project / "cache"), "--quiet"]
    return args + (["--concurrency", str(concurrency)] if concurrency else [])


@pytest.mark.parametrize("kill_after", [3, 9, 14])
def test_kill_9_then_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_after: int) -> None:
    project = make_project(tmp_path / "p", n=8)
    args = run_args(project, concurrency=2)
    with FakeProvider(answer, delay=0.4) as server:
        env = subprocess_env(server.url)
        proc = bench_process(
            args, project, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 120

            def running() -> bool:  # killed once kill_after calls went out and an answer is on disk
                written = any((project / "cache").rglob("*.json"))  # written by a thread of its own
                return (server.count() < kill_after or not written) and proc.poll() is None

            while running() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert proc.poll() is None, "the run ended before the kill"
            os.killpg(proc.pid, signal.SIGKILL)
            killed_at = time.time()
        finally:
            proc.wait(timeout=30)
        finished = len(list((project / "cache").rglob("*.json")))
        first = server.count()
        assert 0 < finished < 16 and not list((project / "reports").glob("*.json"))
        use_provider(monkeypatch, server.url)
        monkeypatch.chdir(project)
        assert main(args) == 0
        assert server.count() - first == 16 - finished  # only unfinished units are called again
    reports = list((project / "reports").glob("*.json"))
    assert len(reports) == 1
    # The resumed run's writes all completed. A kill -9 that lands inside an atomic write leaves its
    # temporary file behind: never read, never renamed into place, so it loses nothing.
    leftovers = [p for p in (project / "cache").rglob("*") if p.name.endswith(".tmp")]
    assert not [p for p in leftovers if p.stat().st_mtime > killed_at] and len(leftovers) <= 2


def test_corrupted_cache_entry_is_recomputed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "p", n=2)
    args = run_args(project)
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        monkeypatch.chdir(project)
        assert main(args) == 0 and server.count() == 4
        entries = sorted((project / "cache").rglob("*.json"))
        entries[0].write_text(entries[0].read_text().replace("Paris", "Pxris").replace("Tokyo", "Txkyo"))
        entries[1].write_text('{"truncated')
        assert main(args) == 0 and server.count() == 6


def test_two_runs_into_one_reports_directory_at_once(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", n=6)
    args = run_args(project, concurrency=4)
    with FakeProvider(answer, delay=0.1) as server:
        env = subprocess_env(server.url)
        procs = [
            bench_process([*args, *extra], project, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for extra in ([], ["--blind"])
        ]
        codes = [p.wait(timeout=240) for p in procs]
    assert codes == [0, 0], [p.stderr.read() for p in procs if p.stderr]
    import json

    reports = [json.loads(p.read_text()) for p in (project / "reports").glob("*.json")]
    assert len(reports) == 2 and {bool(r.get("blindMapping")) for r in reports} == {True, False}
    assert all(r["meta"]["sampleCount"] == 6 and len(r["results"]) == 6 for r in reports)
