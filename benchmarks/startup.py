"""The short commands, as a user waits for them: `--help`, and a fully cached re-run of the demo.

    .venv/bin/python -m benchmarks.startup                 # 5 trials each
    .venv/bin/python -m benchmarks.startup --trials 9

Whole commands, wall clock, in fresh homes of the benchmark's own (its Prefect server on a free
port, stopped at the end):

- ``--help`` (`run --help`): the first time (the text built from the command line's modules) and
  then (printed from its kept text, flows/cli/help_cache.py);
- the demo (``init``'s project, the embedded model): its first run is untimed, every trial after it
  is a re-run that finds every answer in the cache, from launch to exit: served by the warm process
  the runs before it left (flows/cli/warm.py), as at a terminal (the first trial may still find it
  importing and run the long way), then as many in a process of their own (SKILLAB_WARM=0).

The cold first command to its first model call is `python -m benchmarks.peers`'s "cold" scenario.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.orchestration import ROOT, free_port


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-800:]}{done.stderr[-800:]}"
        )
    return took


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skillab-startup-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SKILLAB_"))} | {
        "SKILLAB_HOME": str(work / "skillab"),
        "PREFECT_HOME": str(work / "prefect"),
        "PREFECT_SERVER_API_PORT": str(free_port()),
        "PYTHONPATH": str(ROOT),
        # as at a terminal, where a command leaves a warm process for the next (flows/cli/warm.py)
        "SKILLAB_WARM": "1",
    }
    bench = [sys.executable, "-m", "flows.bench"]
    try:
        help_first = timed([*bench, "run", "--help"], work, env)
        help_kept = [timed([*bench, "run", "--help"], work, env) for _ in range(args.trials)]
        timed([*bench, "init", "demo"], work, env)
        first = timed([*bench, "run", "--variants", "v1,v2"], work / "demo", env)
        cached = [
            timed([*bench, "run", "--variants", "v1,v2"], work / "demo", env) for _ in range(args.trials)
        ]
        alone = [
            timed([*bench, "run", "--variants", "v1,v2"], work / "demo", env | {"SKILLAB_WARM": "0"})
            for _ in range(args.trials)
        ]
    finally:
        subprocess.run([*bench, "server", "stop"], cwd=work, env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print("| command | wall (s), median | trials |")
    print("|---|---|---|")
    print(f"| `run --help`, first time (text built) | {help_first:.2f} | 1 |")
    print(f"| `run --help`, then (kept text) | {statistics.median(help_kept):.3f} | {len(help_kept)} |")
    print(f"| the demo's first run (embedded model, for reference) | {first:.1f} | 1 |")
    for label, runs in (("served by the warm process", cached), ("in its own process", alone)):
        print(
            f"| the demo re-run, every answer cached, {label} | {statistics.median(runs):.2f} "
            f"({', '.join(f'{c:.2f}' for c in runs)}) | {len(runs)} |"
        )


if __name__ == "__main__":
    main()
