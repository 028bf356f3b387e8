"""Orchestration overhead of the sample-mode flow: N units against a local server with fixed latency.

    .venv/bin/python -m benchmarks.orchestration                # 1,000 units, 200 ms and 2 s, concurrency 32
    .venv/bin/python -m benchmarks.orchestration --units 200 --latency 0.2

For each latency it prints, measured in one run (machines here are noisy, so ratios, not seconds):
wall time over the ideal (units x latency / concurrency), client CPU per unit, peak memory of the
benchmark process, and a fully cached re-run's wall time over the first run's, with its server calls.
A Prefect server runs in its own process, as in production with PREFECT_API_URL set, on a fresh
database for every trial; `--trials N` repeats each scenario and adds the median of the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks import units_parser

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a process this benchmark started; killed if it has not ended within 15 s."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait_http(url: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not come up")


def make_samples(root: Path, units: int, variants: int = 2) -> None:
    samples = [
        {
            "sample_id": f"s{i:05d}",
            "prompt": f"question {i}",
            "assertions": [{"type": "contains", "value": f"{i}"}, {"type": "max_length", "value": 100}],
        }
        for i in range(units // variants)
    ]
    (root / "eval-samples.json").write_text(json.dumps(samples))
    (root / "skills").mkdir(exist_ok=True)
    for v in range(1, variants + 1):
        (root / "skills" / f"v{v}.md").write_text(f"artifact {v}")


def scenario(args: argparse.Namespace) -> dict[str, float]:
    """One measured scenario, run in this (fresh) process."""
    from flows.cli.prefect_env import configure_prefect

    configure_prefect()
    from flows.inputs.options import BenchOptions
    from flows.modes.sample.flow import sample_bench
    from flows.modes.sample.prepare import prepare

    work = Path(args.workdir)
    options = BenchOptions(
        executor="openai",
        model="gpt-4o-mini",
        concurrency=args.concurrency,
        output_dir=str(work / "reports"),
        cache_dir=str(work / "cache"),
        judge=False,
        timeout=60,
    )
    prepare(options, work)  # import and validate outside the timed region
    stats_url = os.environ["OPENAI_BASE_URL"].removesuffix("/v1") + "/stats"
    out: dict[str, float] = {}
    for label in ("first", "cached"):
        calls0 = httpx.get(stats_url).json()["calls"]
        cpu0, t0 = time.process_time(), time.perf_counter()
        asyncio.run(sample_bench(options, str(work), False))
        out[f"{label}_wall"] = time.perf_counter() - t0
        out[f"{label}_cpu"] = time.process_time() - cpu0
        out[f"{label}_calls"] = httpx.get(stats_url).json()["calls"] - calls0
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = units_parser(__doc__, 1000)
    parser.add_argument("--latency", type=float, action="append", help="seconds per reply (repeatable)")
    parser.add_argument("--trials", type=int, default=1, help="runs per latency, each on fresh servers")
    parser.add_argument("--scenario", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scenario:
        print(json.dumps(scenario(args)))
        return
    latencies = args.latency or [0.2, 2.0]
    print(f"{args.units} units, concurrency {args.concurrency}")
    for latency in latencies:
        ratios = [trial(args, latency) for _ in range(args.trials)]
        if args.trials > 1:
            print(
                f"latency {latency * 1000:.0f} ms: median wall/ideal over {args.trials} trials "
                f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
            )


def trial(args: argparse.Namespace, latency: float) -> float:
    """One measured first run and cached re-run, against a fresh Prefect server and provider."""
    home = Path(tempfile.mkdtemp(prefix="skillab-bench-"))
    from flows.cli.prefect_env import PREFECT_DEFAULTS

    # The server-side settings matter most here: the task-run recorder's batch sizes.
    env = os.environ | PREFECT_DEFAULTS | {"PREFECT_HOME": str(home / "prefect"), "PYTHONPATH": str(ROOT)}
    port, fake_port = free_port(), free_port()
    procs = [
        start(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env,
        ),
        start(
            [sys.executable, "-m", "tests.fakes.provider", "--delay", str(latency), "--port", str(fake_port)],
            env,
        ),
    ]
    try:
        wait_http(f"http://127.0.0.1:{port}/api/health")
        wait_http(f"http://127.0.0.1:{fake_port}/stats")
        work = home / "run"
        work.mkdir()
        make_samples(work, args.units)
        run_env = env | {
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{fake_port}/v1",
            "OPENAI_API_KEY": "sk-bench",
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.orchestration",
                "--scenario",
                "--workdir",
                str(work),
                "--concurrency",
                str(args.concurrency),
            ],
            cwd=ROOT,
            env=run_env,
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(home, ignore_errors=True)
    r = json.loads(done.stdout.strip().splitlines()[-1])
    ideal = args.units * latency / args.concurrency
    ratio = float(r["first_wall"] / ideal)
    print(
        f"latency {latency * 1000:.0f} ms: wall/ideal {ratio:.2f} "
        f"(wall {r['first_wall']:.1f} s, ideal {ideal:.1f} s); "
        f"client CPU/unit {r['first_cpu'] / args.units * 1000:.1f} ms; peak RSS {r['peak_rss_mb']:.0f} MB; "
        f"cached re-run/first {r['cached_wall'] / r['first_wall']:.3f} with {r['cached_calls']:.0f} server calls "
        f"(first run {r['first_calls']:.0f} calls)",
        flush=True,
    )
    return ratio


if __name__ == "__main__":
    main()
