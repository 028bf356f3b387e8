"""Ctrl-C and SIGTERM end a run within seconds, and what finished stays in the cache."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import make_project, subprocess_env, warm_process

pytestmark = pytest.mark.usefixtures("prefect_harness")


def default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_signal_ends_the_run_and_keeps_finished_calls(
    tmp_path: Path, sig: signal.Signals, code: int, word: str, warm: bool
) -> None:
    """Also when the command line hands the run to a warm process (flows/cli/warm.py): the signal it
    receives is passed on, the exit status comes back."""
    project = make_project(tmp_path / "p", n=8)
    served: list[Call] = []

    def four_then_hang(call: Call) -> Fault | None:
        served.append(call)
        return None if len(served) <= 4 else Fault(delay=120)

    with FakeProvider(fault_for=four_then_hang) as server, contextlib.ExitStack() as stack:
        args = [
            "run",
            "--executor",
            "openai",
            "--concurrency",
            "2",
            "--quiet",
            "--cache-dir",
            str(tmp_path / "c"),
        ]
        env = subprocess_env(server.url) | {"SKILLAB_HOME": str(tmp_path / "home")}
        if warm:
            env["SKILLAB_WARM"] = "1"
            log = stack.enter_context(warm_process(project, env, [*args, "--dry-run"]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "flows.bench", *args, "--output-dir", str(tmp_path / "r")],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # as a terminal starts it: a signal disposition the test process inherited or was left
            # with (an ignored SIGINT survives exec) is not the command's
            preexec_fn=default_signals,
        )
        deadline = time.monotonic() + 120
        while len(served) < 6 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(served) >= 6, "the run never reached the hanging calls"
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=60)  # a hang fails here, not a timing
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"{sig.name} did not end the run; its stderr ends:\n{err[-3000:]}")
        if warm:
            assert "serving a command" in log.read_text()
    assert proc.returncode == code, err[-2000:]
    assert f"skillab: {word}; finished calls are cached" in err
    assert len(list((tmp_path / "c").rglob("*.json"))) == 4  # the four answered calls
