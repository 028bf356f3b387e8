"""No sandbox folder outlives its run: removed on SIGTERM, and after kill -9 by the next run's sweep.
The real `skill run` command, the real claude CLI in bubblewrap, a scripted model that hangs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import bench_process, subprocess_env
from tests.flows.modes.agentic.test_skill_bench import agent, judge, project, skill_run

pytestmark = pytest.mark.usefixtures("prefect_harness")
__all__ = ["project"]  # the fixture, used by name


def hang(call: Call) -> Fault | None:
    return Fault(delay=120) if call.protocol == "anthropic" and call.body.get("messages") else None


def roots(tmp: Path) -> list[Path]:
    base = tmp / "skillab-sandboxes"
    return [p for p in base.iterdir() if p.name != ".owners"] if base.is_dir() else []


def start(project: Path, tmp: Path, url: str) -> subprocess.Popen[str]:
    args = [*skill_run(project, url), "--timeout", "100"]
    env = subprocess_env() | {"TMPDIR": str(tmp), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-test"}
    return bench_process(args, project, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@contextmanager
def hung_sessions(project: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A run whose sessions hang on the model, once they have started (its temp folder given)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with FakeProvider(judge, agent=agent, fault_for=hang) as server:
        proc = start(project, tmp, server.url)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if roots(tmp) and server.count(lambda c: c.protocol == "anthropic") >= 2:
                yield proc, tmp
                return
            time.sleep(0.2)
        proc.kill()
        pytest.fail(f"the sessions never started: {proc.stderr.read()[-2000:] if proc.stderr else ''}")


def test_sigterm_leaves_no_sandbox(project: Path, tmp_path: Path) -> None:
    with hung_sessions(project, tmp_path) as (proc, tmp):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("SIGTERM did not end the run")
    assert roots(tmp) == []
    assert not list(Path("/tmp").glob(f"skillab-egress-{proc.pid}-*")) and not list(
        tmp.glob("skillab-egress-*")
    )


def test_kill_9_then_the_next_run_sweeps(project: Path, tmp_path: Path) -> None:
    with hung_sessions(project, tmp_path) as (proc, tmp):
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    left = roots(tmp)
    assert left, "kill -9 left nothing to sweep (the test proves nothing)"
    with FakeProvider(judge, agent=agent) as server:
        rerun = start(project, tmp, server.url)
        rerun.communicate(timeout=300)
    assert not any(p.exists() for p in left)
    assert roots(tmp) == []
