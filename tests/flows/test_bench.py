"""The command's exit: no interpreter teardown, but everything a normal exit does before it."""

from __future__ import annotations

import subprocess
import sys

from tests.flows.helpers import ROOT

#: An idle thread-pool worker (as the embedded model keeps one), another thread still working, and
#: an exit handler: the exit waits for the work, runs the handler, and does not wait for the worker.
EXIT = """
import atexit, threading, time
from concurrent.futures import ThreadPoolExecutor
from flows.cli.command import Command

pool = ThreadPoolExecutor(max_workers=1)
pool.submit(lambda: None).result()
threading.Thread(target=lambda: (time.sleep(0.5), print("worker done", flush=True))).start()
atexit.register(lambda: print("exit handler ran", flush=True))
Command(ends_process=True).exit(3)
"""


def test_exit_joins_the_work_runs_the_handlers_and_leaves_idle_pool_workers() -> None:
    done = subprocess.run([sys.executable, "-c", EXIT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["worker done", "exit handler ran"]
