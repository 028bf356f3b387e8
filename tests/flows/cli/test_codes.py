"""A run's signals (flows/cli/codes.py): a Ctrl-C or SIGTERM that Python could only report is raised
again."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.flows.helpers import ROOT

# In a process of its own: a stray KeyboardInterrupt in the test process would end the whole session.
SCRIPT = textwrap.dedent(
    """
    import signal, sys, time
    from flows.cli import codes

    sig = signal.Signals[sys.argv[1]]
    wanted = KeyboardInterrupt if sig == signal.SIGINT else codes.Terminated
    codes.INTERRUPT_AGAIN_S = 0.2
    before = signal.getsignal(sig)
    raised = 0
    try:
        with codes.run_signals():
            try:
                signal.raise_signal(sig)
            except wanted:
                raised += 1  # swallowed, as where Python can only report it
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                time.sleep(0.01)
    except wanted:
        raised += 1
    time.sleep(1)  # no signal of this block's after it ended
    print(raised, signal.getsignal(sig) is before)
    """
)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_lost_signal_is_raised_again_until_it_ends_the_block(sig: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, sig], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "True"]
