"""The user's clock: whole commands of skillab, promptfoo and inspect-ai, side by side.

    .venv/bin/python -m benchmarks.peers                       # every scenario (15-40 minutes here)
    .venv/bin/python -m benchmarks.peers --scenarios 100:16 --trials 3 --no-first-run
    .venv/bin/python -m benchmarks.peers --install             # first install + first run, no caches

Each tool runs the same N samples x 1 variant (a system prompt) with one `contains` assertion per
sample, through its own command line, against one local stub (tests/fakes/provider.py, replying
after --latency seconds, 200 ms by default). Measured from outside, per command: the wall clock from
launch to exit (process start, imports, loading, orchestration, grading, report, exit), the time to
the stub's first request, the time from the last request to exit, and the command's peak RSS.

The tool "floor" (benchmarks/floor.py) is the same calls from a bare client and nothing else:
skillab/floor is skillab's own overhead, the interpreter's start and the transport counted on both
sides (the ideal counts neither).

The tools alternate within each trial (the order rotates between trials), so a noisy neighbour on
the machine hits all of them; each trial gives the ratios skillab/promptfoo, skillab/inspect and
skillab/floor, and the summary their medians. Scenarios: `N:C` (N units at concurrency C), plus
"first": the first run after `init`, every trial in fresh homes (skillab starts its local Prefect
server there, stopped after the trial; promptfoo creates its database; inspect its log folder), and
"cold": the same without `init`, so skillab's run starts the server itself (its time to the first
request is the cold start). The other scenarios share one skillab server, as a user's runs do;
`N:C:warm` runs skillab's commands from one project folder as at a terminal (SKILLAB_WARM=1), after
an untimed run there, so each is served by the warm process the one before left (flows/cli/warm.py;
its peak RSS is not the command line's, so none is shown). Every scenario states its ideal, units x
latency / concurrency, and skillab's wall clock over it.

promptfoo (npm) and inspect-ai (pip, in a virtualenv of its own) are installed once into the cache
folder (--cache, default ~/.cache/skillab/peers); nothing goes into skillab's environment. skillab's
own source is compiled to bytecode first, as its set-up does (scripts/setup.sh): where
PYTHONDONTWRITEBYTECODE is set, a checkout nobody compiled would compile every module in every
command (~0.1 s before the first call here).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.cli import help_cache

ROOT = Path(__file__).resolve().parents[1]
PROMPTFOO_VERSION = "0.121.20"  # the newest on Node 20 (0.122 and later need Node >= 22.22)
INSPECT_VERSION = "0.3.285"
PROMPTFOO = f"promptfoo@{PROMPTFOO_VERSION}"
#: promptfoo twice: its default mode (it writes its database and prints its table) and as fast as it
#: goes ("promptfoo-lean": --no-write --no-table, its cache off); "floor": the same calls from a bare
#: client and nothing else (benchmarks/floor.py), what any Python tool pays on this machine.
TOOLS = ("skillab", "promptfoo", "promptfoo-lean", "inspect", "floor")
PEERS = TOOLS[1:]
ARTIFACT = "Answer in one short sentence."
MODEL = "gpt-4o-mini"
RUN_TIMEOUT_S = 3600


# ------------------------------------------------------------------ installing the peers


@dataclass(frozen=True)
class Peers:
    promptfoo: Path
    inspect: Path


def install(cache: Path) -> Peers:
    """promptfoo and inspect-ai in the cache folder, once (pinned versions)."""
    cache.mkdir(parents=True, exist_ok=True)
    promptfoo = cache / "promptfoo" / "node_modules" / ".bin" / "promptfoo"
    package = cache / "promptfoo" / "node_modules" / "promptfoo" / "package.json"
    if not package.is_file() or json.loads(package.read_text())["version"] != PROMPTFOO_VERSION:
        print(f"installing promptfoo {PROMPTFOO_VERSION} into {cache / 'promptfoo'} ...", flush=True)
        shutil.rmtree(cache / "promptfoo", ignore_errors=True)  # npm over another version breaks its modules
        subprocess.run(
            ["npm", "install", "--prefix", str(cache / "promptfoo"), "--no-audit", "--no-fund", PROMPTFOO],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    venv = cache / "inspect-venv"
    inspect = venv / "bin" / "inspect"
    version = (
        subprocess.run(
            [str(inspect), "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if inspect.exists()
        else ""
    )
    if version != INSPECT_VERSION:
        print(f"installing inspect-ai {INSPECT_VERSION} into {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", f"inspect-ai=={INSPECT_VERSION}", "openai"],
            check=True,
        )
    return Peers(promptfoo=promptfoo, inspect=inspect)


# ------------------------------------------------------------------ one suite, three formats


INSPECT_TASK = '''"""The benchmark's samples as an inspect-ai task (written by benchmarks/peers.py)."""
import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message


@task
def bench() -> Task:
    rows = json.loads((Path(__file__).parent / "samples.json").read_text())
    return Task(
        dataset=[Sample(id=r["id"], input=r["prompt"], target=r["target"]) for r in rows],
        solver=[system_message(ARTIFACT), generate()],
        scorer=includes(),
    )
'''


def write_suite(folder: Path, units: int, concurrency: int, stub: str) -> Path:
    """The same N samples for the three tools: prompt "question i", the answer must contain "i"."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"s{i:05d}", "prompt": f"question {i}", "target": str(i)} for i in range(units)]
    samples = [
        {
            "sample_id": r["id"],
            "prompt": r["prompt"],
            "assertions": [{"type": "contains", "value": r["target"]}],
        }
        for r in rows
    ]
    (folder / "eval-samples.json").write_text(json.dumps(samples))
    (folder / "skills").mkdir(exist_ok=True)
    (folder / "skills" / "v1.md").write_text(ARTIFACT)
    (folder / "prompt.json").write_text(
        json.dumps([{"role": "system", "content": ARTIFACT}, {"role": "user", "content": "{{prompt}}"}])
    )
    tests = [
        {"vars": {"prompt": r["prompt"]}, "assert": [{"type": "contains", "value": r["target"]}]}
        for r in rows
    ]
    (folder / "tests.json").write_text(json.dumps(tests))
    config = {
        "description": f"{units} units",
        "prompts": ["file://prompt.json"],
        "providers": [
            {"id": f"openai:chat:{MODEL}", "config": {"apiBaseUrl": f"{stub}/v1", "apiKey": "sk-bench"}}
        ],
        "tests": "file://tests.json",
        "evaluateOptions": {"maxConcurrency": concurrency},
    }
    (folder / "promptfooconfig.json").write_text(json.dumps(config, indent=1))
    (folder / "samples.json").write_text(json.dumps(rows))
    (folder / "task.py").write_text(INSPECT_TASK.replace("ARTIFACT", repr(ARTIFACT)))
    return folder


# ------------------------------------------------------------------ running one command


@dataclass
class Homes:
    """Where each tool keeps its state: fresh for the first-run scenario, then reused."""

    root: Path
    prefect_port: int

    def env(self, tool: str, run_dir: Path) -> dict[str, str]:
        base = {
            k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SKILLAB_", "PROMPTFOO_"))
        }
        base |= {
            "OPENAI_API_KEY": "sk-bench",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        if tool == "skillab":
            return base | {
                "SKILLAB_HOME": str(self.root / "skillab"),
                "PREFECT_HOME": str(self.root / "prefect"),
                # A server of the benchmark's own, not one a user may run at 4200.
                "PREFECT_SERVER_API_PORT": str(self.prefect_port),
                "PYTHONPATH": str(ROOT),
            }
        if tool.startswith("promptfoo"):
            return base | {
                "PROMPTFOO_CONFIG_DIR": str(self.root / "promptfoo"),
                "PROMPTFOO_CACHE_PATH": str(run_dir / "promptfoo-cache"),
                "PROMPTFOO_DISABLE_TELEMETRY": "1",
                "PROMPTFOO_DISABLE_UPDATE": "1",
            }
        if tool == "floor":
            return base | {"PYTHONPATH": str(ROOT)}
        return base | {"INSPECT_LOG_DIR": str(self.root / "inspect-logs")}


def command(tool: str, peers: Peers, suite: Path, run_dir: Path, stub: str, concurrency: int) -> list[str]:
    if tool == "skillab":
        return [
            sys.executable, "-m", "flows.bench", "run", "--samples", str(suite / "eval-samples.json"),
            "--skill-dir", str(suite / "skills"), "--variants", "v1", "--executor", "openai",
            "--model", MODEL, "--base-url", f"{stub}/v1", "--no-judge", "--concurrency", str(concurrency),
            "--cache-dir", str(run_dir / "cache"), "--output-dir", str(run_dir / "reports"), "--quiet",
        ]  # fmt: skip
    if tool == "floor":
        return [
            sys.executable, "-m", "benchmarks.floor", "--samples", str(suite / "eval-samples.json"),
            "--base-url", f"{stub}/v1", "--model", MODEL, "--system", ARTIFACT, "--concurrency", str(concurrency),
        ]  # fmt: skip
    if tool.startswith("promptfoo"):
        lean = ["--no-write", "--no-table", "--no-cache"] if tool == "promptfoo-lean" else []
        return [
            str(peers.promptfoo), "eval", "-c", str(suite / "promptfooconfig.json"),
            "--no-progress-bar", "-j", str(concurrency), *lean,
        ]  # fmt: skip
    return [
        str(peers.inspect), "eval", "task.py", "--model", f"openai/{MODEL}",  # run from the suite folder
        "--model-base-url", f"{stub}/v1", "--max-connections", str(concurrency), "--display", "none",
    ]  # fmt: skip


@dataclass
class Run:
    tool: str
    wall: float
    to_first: float
    tail: float
    rss_mb: float
    calls: int
    code: int
    note: str = ""
    init: float = 0.0  # the first-run scenario: skillab's `init` just before, timed on its own


def stub_stats(stub: str, reset: bool = False) -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(
        f"{stub}/stats/reset" if reset else f"{stub}/stats", method="POST" if reset else "GET"
    )
    with opener.open(request, timeout=10) as response:
        return dict(json.loads(response.read()))


def run_one(
    tool: str, cmd: list[str], env: dict[str, str], cwd: Path, stub: str, units: int, log: Path
) -> Run:
    """One whole command, timed from outside; its peak RSS from the kernel's accounting of it."""
    cwd.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    stub_stats(stub, reset=True)
    with open(log, "wb") as out:
        start = time.time()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = start + RUN_TIMEOUT_S
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                proc.kill()
            time.sleep(0.005)
        end = time.time()
    proc.returncode = os.waitstatus_to_exitcode(status)
    stats = stub_stats(stub)
    first, last = stats["first"] or end, stats["last"] or end
    note = "" if proc.returncode == 0 and stats["calls"] == units else log.read_text(errors="replace")[-600:]
    return Run(
        tool,
        end - start,
        first - start,
        end - last,
        usage.ru_maxrss / 1024,
        stats["calls"],
        proc.returncode,
        note,
    )


# ------------------------------------------------------------------ scenarios


@dataclass
class Scenario:
    name: str
    units: int
    concurrency: int
    trials: int
    fresh: bool = False
    init: bool = True  # with fresh homes: skillab's `init` first (it starts the server); else the run does
    #: skillab's commands from one project folder, as at a terminal (SKILLAB_WARM=1), after one untimed
    #: run there: each is served by the warm process the one before left (flows/cli/warm.py)
    warm: bool = False
    latency: float = 0.2
    runs: list[list[Run]] = field(default_factory=list)

    @property
    def ideal(self) -> float:
        """The physical limit: every unit's latency, C at a time, and nothing else."""
        return self.units * self.latency / self.concurrency


def run_scenario(
    sc: Scenario, peers: Peers, homes: Homes, work: Path, stub: str, tools: list[str], latency: float
) -> None:
    suite = write_suite(work / f"suite-{sc.units}-{sc.concurrency}", sc.units, sc.concurrency, stub)
    sc.latency = latency
    print(
        f"\n== {sc.name}: {sc.units} units at concurrency {sc.concurrency} (ideal {sc.ideal:.2f} s)",
        flush=True,
    )
    if sc.warm and "skillab" in tools:  # untimed: it leaves the warm process the trials find
        warm_up = work / f"{sc.name}-warm-up"
        cmd = command("skillab", peers, suite, warm_up, stub, sc.concurrency)
        env = homes.env("skillab", warm_up) | {"SKILLAB_WARM": "1"}
        folder = Path(env["SKILLAB_HOME"]) / "warm"
        before = set(folder.glob("*.sock"))  # an earlier scenario's, from another project folder
        subprocess.run(cmd, cwd=warm_project(work, sc), env=env, capture_output=True, check=True)
        wait_for_warm(folder, before)
    for trial in range(sc.trials):
        order = tools[trial % len(tools) :] + tools[: trial % len(tools)]
        if sc.fresh:  # every tool starts from nothing in every trial
            with fresh_homes(homes, work / f"homes-first-t{trial}") as trial_homes:
                sc.runs.append(run_trial(sc, peers, trial_homes, work, suite, stub, order, trial))
        else:
            sc.runs.append(run_trial(sc, peers, homes, work, suite, stub, order, trial))


def warm_project(work: Path, sc: Scenario) -> Path:
    """The one folder a warm scenario's skillab commands run from."""
    folder = work / f"{sc.name.replace(' ', '-')}-project"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait_for_warm(folder: Path, before: set[Path]) -> None:
    """Until the warm process the untimed run left listens (its socket: one not there ``before``)."""
    deadline = time.monotonic() + 120
    while not set(folder.glob("*.sock")) - before:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no warm process came up in {folder}")
        time.sleep(0.2)


@contextlib.contextmanager
def fresh_homes(homes: Homes, root: Path) -> Iterator[Homes]:
    """New homes for one trial; the skillab server started there is stopped after it."""
    fresh = Homes(root, homes.prefect_port)
    try:
        yield fresh
    finally:
        server(fresh, root, "stop")


def server(homes: Homes, work: Path, action: str) -> None:
    cmd = [sys.executable, "-m", "flows.bench", "server", action]
    subprocess.run(cmd, env=homes.env("skillab", work), cwd=ROOT, check=action != "stop", capture_output=True)


def run_trial(
    sc: Scenario, peers: Peers, homes: Homes, work: Path, suite: Path, stub: str, order: list[str], trial: int
) -> list[Run]:
    runs = []
    for tool in order:
        run_dir = work / f"{sc.name}-t{trial}-{tool}"
        init = 0.0
        if sc.fresh and sc.init and tool == "skillab":  # timed too: it starts the server the run will use
            start = time.time()
            subprocess.run(
                [sys.executable, "-m", "flows.bench", "init", str(run_dir / "project")],
                env=homes.env(tool, run_dir), cwd=ROOT, capture_output=True, check=True,
            )  # fmt: skip
            init = time.time() - start
        cmd = command(tool, peers, suite, run_dir, stub, sc.concurrency)
        cwd = run_dir / "project" if sc.fresh and sc.init and tool == "skillab" else run_dir
        env = homes.env(tool, run_dir)
        if tool == "inspect":  # it takes only a relative task path
            cwd = suite
        if sc.warm and tool == "skillab":
            cwd, env = warm_project(work, sc), env | {"SKILLAB_WARM": "1"}
        run = run_one(tool, cmd, env, cwd, stub, sc.units, run_dir / "output.log")
        if sc.warm and tool == "skillab":
            run.rss_mb = 0.0  # the command line's own: the run itself was in the warm process's fork
        run.init = init
        runs.append(run)
        print(
            f"  trial {trial + 1} {tool:9s} wall {run.wall:7.2f} s  first request {run.to_first:5.2f} s  "
            f"last request to exit {run.tail:5.2f} s  peak RSS {run.rss_mb:6.0f} MB  calls {run.calls}"
            + (f"  (after init {init:.2f} s)" if init else "")
            + (f"  FAILED (exit {run.code}):\n{run.note}" if run.note else ""),
            flush=True,
        )
    return runs


def ratio_line(sc: Scenario, peer: str, with_init: bool = False) -> str:
    ratios = []
    for runs in sc.runs:
        by = {r.tool: r for r in runs if not r.note}
        if "skillab" in by and peer in by:
            mine = by["skillab"].wall + (by["skillab"].init if with_init else 0.0)
            ratios.append(mine / by[peer].wall)
    if not ratios:
        return "-"
    listed = ", ".join(f"{r:.2f}" for r in ratios)
    return f"**{statistics.median(ratios):.2f}** ({listed})" if len(ratios) > 1 else f"**{ratios[0]:.2f}**"


def summary(scenarios: list[Scenario], tools: list[str]) -> str:
    """The results table (benchmarks/RESULTS.md, the README): median wall per tool, ratios per trial and their median."""
    peers = [t for t in PEERS if t in tools]
    head = "| scenario | " + " | ".join(f"{t} wall (s)" for t in tools)
    head += "".join(f" | skillab/{p}" for p in peers)
    head += " | ideal (s) | skillab/ideal | skillab first request (s) | skillab peak RSS |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for sc in scenarios:
        walls = []
        for tool in tools:
            values = [r.wall for runs in sc.runs for r in runs if r.tool == tool and not r.note]
            walls.append(f"{statistics.median(values):.2f}" if values else "failed")
        mine = [r for runs in sc.runs for r in runs if r.tool == "skillab" and not r.note]
        first = f"{statistics.median(r.to_first for r in mine):.2f}" if mine else "-"
        rss = f"{max(r.rss_mb for r in mine):.0f} MB" if mine and not sc.warm else "-"
        label = f"{sc.name} ({sc.units} units, c={sc.concurrency}, {len(sc.runs)} trial(s))"
        over = f"**{statistics.median(r.wall for r in mine) / sc.ideal:.2f}**" if mine else "-"
        lines.append(
            f"| {label} | " + " | ".join(walls)
            + "".join(f" | {ratio_line(sc, p)}" for p in peers)
            + f" | {sc.ideal:.2f} | {over} | {first} | {rss} |"
        )  # fmt: skip
    for sc in scenarios:
        inits = [r.init for runs in sc.runs for r in runs if r.tool == "skillab" and r.init and not r.note]
        if inits:
            lines.append(
                f"\n{sc.name}: skillab's `init` (scaffold, and the Prefect server started in the background) "
                f"took {statistics.median(inits):.2f} s just before; counting it, "
                + ", ".join(f"skillab/{p} {ratio_line(sc, p, True)}" for p in peers)
                + "."
            )
    return "\n".join(lines)


# ------------------------------------------------------------------ the first install


def timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    """Seconds a command took (its output to ``log``); a failure stops the benchmark, with its tail."""
    start = time.time()
    with open(log, "ab") as out:
        code = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if code.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed; the end of {log}:\n{log.read_text()[-1500:]}")
    return time.time() - start


def first_install(work: Path, stub: str) -> str:
    """A new user's first minutes, nothing cached: skillab from a clone of this checkout through
    `bash scripts/demo.sh` (fresh virtualenv, scripts/setup.sh with no pip cache, the demo on the
    embedded model, to its report); promptfoo by `npm install` (empty npm cache) and its first eval;
    inspect-ai by `pip install` into a fresh virtualenv (no pip cache) and its first eval. The peers'
    first runs are the 100-unit suite against the stub; skillab's is its offline demo."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SKILLAB_", "PROMPTFOO_"))}
    base |= {"PIP_NO_CACHE_DIR": "1", "UV_CACHE_DIR": str(work / "uv-cache"), "OPENAI_API_KEY": "sk-bench"}
    base |= {"NO_PROXY": "127.0.0.1,localhost"}
    suite = write_suite(work / "install-suite", 100, 16, stub)
    rows: list[tuple[str, float, float | None]] = []
    clone = work / "skillab"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = base | {"SKILLAB_HOME": str(work / "sk-home"), "PREFECT_HOME": str(work / "pf-home")}
    env |= {"PREFECT_SERVER_API_PORT": str(free_port())}
    try:
        demo = timed(["bash", "scripts/demo.sh", "--quiet"], clone, env, work / "skillab-install.log")
    finally:
        subprocess.run(
            [".venv/bin/python", "-m", "flows.bench", "server", "stop"], cwd=clone, env=env, check=False
        )
    rows.append(("skillab: clone → `bash scripts/demo.sh` (install, then the demo's 28 calls)", demo, None))
    npm_dir, npm_env = work / "promptfoo", base | {"npm_config_cache": str(work / "npm-cache")}
    npm_env |= {"PROMPTFOO_CONFIG_DIR": str(work / "pf-config"), "PROMPTFOO_DISABLE_TELEMETRY": "1"}
    npm_env |= {"PROMPTFOO_DISABLE_UPDATE": "1"}
    setup = timed(
        ["npm", "install", "--prefix", str(npm_dir), "--no-audit", "--no-fund", PROMPTFOO],
        work, npm_env, work / "promptfoo-install.log",
    )  # fmt: skip
    cmd = command(
        "promptfoo", Peers(npm_dir / "node_modules" / ".bin" / "promptfoo", Path()), suite, work, stub, 16
    )
    rows.append(
        ("promptfoo: `npm install promptfoo`, first eval", setup, timed(cmd, suite, npm_env, work / "pf.log"))
    )
    venv = work / "inspect-venv"
    setup = timed([sys.executable, "-m", "venv", str(venv)], work, base, work / "inspect-install.log")
    setup += timed(
        [str(venv / "bin" / "pip"), "install", "-q", f"inspect-ai=={INSPECT_VERSION}", "openai"],
        work, base, work / "inspect-install.log",
    )  # fmt: skip
    cmd = command("inspect", Peers(Path(), venv / "bin" / "inspect"), suite, work, stub, 16)
    env = base | {"INSPECT_LOG_DIR": str(work / "inspect-logs")}
    rows.append(
        (
            "inspect-ai: venv + `pip install inspect-ai`, first eval",
            setup,
            timed(cmd, suite, env, work / "in.log"),
        )
    )
    lines = ["| first install | install (s) | first run (s) | total (s) |", "|---|---|---|---|"]
    for name, install_s, run_s in rows:
        if run_s is None:
            lines.append(f"| {name} | (inside) | (inside) | {install_s:.1f} |")
        else:
            lines.append(f"| {name} | {install_s:.1f} | {run_s:.1f} | {install_s + run_s:.1f} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ main


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stub(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.provider", "--delay", str(latency), "--port", str(port)],
        cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    stub = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            stub_stats(stub)
            return proc, stub
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the stub did not start") from None
            time.sleep(0.2)


def parse_scenarios(args: argparse.Namespace) -> list[Scenario]:
    out = [Scenario("first run after init", 100, 16, args.trials, fresh=True)] if args.first_run else []
    if args.cold:  # nothing before it: the run itself starts the Prefect server
        out.append(Scenario("cold first command", 100, 16, args.trials, fresh=True, init=False))
    for item in filter(None, args.scenarios.split(",")):
        units, concurrency, *how = item.split(":")
        trials = args.big_trials if int(units) >= 10_000 else args.trials
        warm = how == ["warm"]
        out.append(
            Scenario(f"{units}{' warm' if warm else ''}", int(units), int(concurrency), trials, warm=warm)
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scenarios",
        default="100:16,1000:32,10000:64",
        help="N:C,... (units:concurrency); N:C:warm: skillab's commands from one folder, as at a terminal",
    )
    parser.add_argument("--trials", type=int, default=3, help="trials per scenario below 10,000 units")
    parser.add_argument(
        "--big-trials", type=int, default=1, help="trials per scenario of 10,000 units or more"
    )
    parser.add_argument("--first-run", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--cold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a first command in fresh homes, no init",
    )
    parser.add_argument("--latency", type=float, default=0.2, help="the stub's reply delay in seconds")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "skillab" / "peers")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, reports)")
    parser.add_argument(
        "--install", action="store_true", help="measure only the first install and first run of each tool"
    )
    args = parser.parse_args()
    if args.install:
        work = Path(tempfile.mkdtemp(prefix="skillab-install-"))
        stub_proc, stub = start_stub(args.latency)
        try:
            print(first_install(work, stub))
        finally:
            stub_proc.terminate()
            stub_proc.wait(timeout=30)
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        return
    tools = args.tools.split(",")
    for package in (*help_cache.PACKAGES, "deployments"):
        compileall.compile_dir(ROOT / package, quiet=1)
    peers = install(args.cache)
    work = Path(tempfile.mkdtemp(prefix="skillab-peers-"))
    homes = Homes(work / "homes", free_port())
    stub_proc, stub = start_stub(args.latency)
    scenarios = parse_scenarios(args)
    try:
        for sc in scenarios:
            if not sc.fresh and "skillab" in tools:  # later runs find a server, as a user's do
                server(homes, work, "start")
            run_scenario(sc, peers, homes, work, stub, tools, args.latency)
    finally:
        server(homes, work, "stop")
        stub_proc.terminate()
        stub_proc.wait(timeout=30)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"\npromptfoo {PROMPTFOO_VERSION}, inspect-ai {INSPECT_VERSION}, stub latency {args.latency * 1000:.0f} ms"
    )
    print(summary(scenarios, tools))
    if args.keep:
        print(f"work folder: {work}")


if __name__ == "__main__":
    main()
