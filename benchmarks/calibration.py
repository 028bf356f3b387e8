"""Calibration of skillab's verdicts, measured on the real command (not a simulation of the statistics).

Each procedure runs the whole ``run`` (or ``skill triggers run``) command K times against a seeded
random-reply server on 127.0.0.1 and counts the verdicts it prints in its report:

* fixed N, A/A: both variants draw from one distribution: share of BETTER or WORSE (false verdicts).
* fixed N, planted 0.8: the treatment names one more word with probability 0.8 (+0.8 on 1-5, 30 cases
  x 2 runs): share BETTER (detected).
* --sequential, A/A (waves of 10): share of BETTER or WORSE.
* the plan's promise: a pilot run, ``plan`` for an effect equal to --min-effect, then K runs at the
  number of cases it advised with exactly that effect planted: share BETTER.
* trigger A/B, A/A: two descriptions that fire with the same chance, the real claude CLI in its
  sandbox (so fewer runs): share of BETTER or WORSE on recall or false-fire rate.

Each rate is printed with its Wilson 95% interval and written to benchmarks/RESULTS.md.

    python -m benchmarks.calibration [--runs K] [--trigger-runs K] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cost_to_verdict import WORDS, word_project
from tasks.stats.trigger_stats import wilson

RESULTS = Path(__file__).with_name("RESULTS.md")
MARKER = "<!-- calibration -->"


@dataclass(frozen=True)
class Outcome:
    name: str
    runs: int
    hits: int
    what: str  # what a hit is
    target: str
    met: bool | None
    note: str = ""

    def line(self) -> str:
        r = wilson(self.hits, self.runs)
        rate = "—" if r.rate is None else f"{r.rate:.1%} [{r.low:.1%}, {r.high:.1%}]"
        met = "" if self.met is None else (" MET" if self.met else " MISSED")
        return f"| {self.name} | {self.runs} | {self.what} | {rate} | {self.target}{met} | {self.note} |"


class WordModel:
    """Replies name 0-2 of WORDS at random; the treatment (its system prompt names "v2") adds one more
    with probability ``effect``. Seeded per run and per call, so a run is reproducible in law."""

    def __init__(self, seed: int, effect: float) -> None:
        self.seed, self.effect = seed, effect
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, system: str, prompt: str) -> str:
        treated = "v2" in system
        key = f"{self.seed}:{prompt}:{treated}"
        with self.lock:
            self.seen[key] += 1
            rng = random.Random(f"{key}:{self.seen[key]}")
        words = rng.randint(0, 2) + (treated and rng.random() < self.effect)
        return " ".join(WORDS[:words]) or "nothing"


def run_sample(root: Path, seed: int, effect: float, cases: int, extra: list[str]) -> dict[str, Any]:
    """One whole ``run`` command; its report."""
    from flows.cli.main import main as cli
    from tests.fakes.provider import FakeProvider

    out = root / f"out-{seed}"
    with FakeProvider(WordModel(seed, effect)) as server:
        os.environ |= {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": f"{server.url}/v1"}
        args = [
            "run",
            "--executor",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--quiet",
            "--no-cache",
            "--no-judge",
        ]
        args += [
            "--concurrency",
            "16",
            "--seed",
            str(seed),
            "--repeat",
            "2",
            "--output-dir",
            str(out),
            *extra,
        ]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cli(args)
    report = json.loads(next(out.glob("*.json")).read_text())
    for f in out.glob("*.json"):
        f.unlink()
    return report


def label_of(report: dict[str, Any]) -> str:
    return str(report["comparisons"][0]["verdict"]["label"])


def repeat(k: int, one: Callable[[int], str], name: str) -> Counter[str]:
    labels: Counter[str] = Counter()
    started = time.monotonic()
    for i in range(k):
        labels[one(i)] += 1
        if (i + 1) % 20 == 0 or i + 1 == k:
            print(
                f"  {name}: {i + 1}/{k} runs, {dict(labels)} ({time.monotonic() - started:.0f} s)", flush=True
            )
    return labels


def fixed_aa(root: Path, k: int) -> Outcome:
    labels = repeat(k, lambda i: label_of(run_sample(root, 1000 + i, 0.0, 30, [])), "fixed N A/A")
    hits = labels["BETTER"] + labels["WORSE"]
    return Outcome("fixed N, A/A, 30 cases x 2 runs", k, hits, "BETTER or WORSE", "<= 5%", hits / k <= 0.05)


def fixed_planted(root: Path, k: int) -> Outcome:
    labels = repeat(k, lambda i: label_of(run_sample(root, 2000 + i, 0.8, 30, [])), "fixed N planted 0.8")
    hits = labels["BETTER"]
    return Outcome("fixed N, planted +0.8, 30 cases x 2 runs", k, hits, "BETTER", ">= 80%", hits / k >= 0.8)


def sequential_aa(root: Path, k: int) -> Outcome:
    extra = ["--sequential", "--wave", "10"]
    labels = repeat(k, lambda i: label_of(run_sample(root, 3000 + i, 0.0, 30, extra)), "sequential A/A")
    hits = labels["BETTER"] + labels["WORSE"]
    return Outcome(
        "--sequential (waves of 10), A/A, 30 cases x 2 runs",
        k,
        hits,
        "BETTER or WORSE",
        "<= 5%",
        hits / k <= 0.05,
    )


def plans_promise(root: Path, k: int) -> Outcome:
    """A pilot of 30 cases at the default effect (0.3, margin 0.1), the plan's advice at 2 runs,
    then K runs at that many cases with exactly 0.3 planted."""
    from flows.cli.main import main as cli

    word_project(root, 30)
    pilot = run_sample(root, 4000, 0.3, 30, [])
    path = root / "pilot.json"
    path.write_text(json.dumps(pilot))
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        cli(["plan", "--report", str(path), "--json"])
    advice = json.loads(buffer.getvalue())
    option = next(o for o in advice["options"] if o["runs"] == 2)
    cases = int(option["cases"])
    word_project(root, cases)
    labels = repeat(k, lambda i: label_of(run_sample(root, 5000 + i, 0.3, cases, [])), f"plan's N ({cases})")
    word_project(root, 30)
    hits = labels["BETTER"]
    return Outcome(
        f"the plan's promise: effect 0.3 = --min-effect, margin 0.1, {cases} cases x 2 runs as advised",
        k,
        hits,
        "BETTER",
        ">= 75%",
        hits / k >= 0.75,
        f"pilot sd of a case's difference {advice['pilot']['var_diff'] ** 0.5:.2f}",
    )


def trigger_aa(root: Path, k: int) -> list[Outcome]:
    """Two descriptions of one skill, both firing with the same chance on each query."""
    import yaml

    from flows.cli.main import main as cli
    from tests.fakes.provider import FakeProvider, SkillScript

    name = "greeting-files"
    for label in ("A", "B"):
        folder = root / "skills-ab" / label / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Writes greeting files ({label}).\n---\nWrite greeting.txt.\n"
        )
    should = [f"Please write greeting file number {i}" for i in range(6)]
    shouldnt = [f"What is {i} times 7?" for i in range(6)]
    rows = [{"id": f"p{i}", "query": q, "expect": name} for i, q in enumerate(should)]
    rows += [{"id": f"n{i}", "query": q, "expect": "none"} for i, q in enumerate(shouldnt)]
    (root / "queries.yaml").write_text(yaml.safe_dump({"queries": rows}))
    chances = {q: 0.7 for q in should} | {q: 0.2 for q in shouldnt}

    def one(i: int) -> str:
        with FakeProvider() as server:
            SkillScript(name, p_by_query=chances, seed=6000 + i).install(server)
            os.environ["ANTHROPIC_API_KEY"] = "sk-bench"
            out = root / f"trig-{i}"
            args = [
                "skill",
                "triggers",
                "run",
                "--queries",
                str(root / "queries.yaml"),
                "--base-url",
                server.url,
            ]
            args += [
                "--skill",
                str(root / "skills-ab" / "A" / name),
                "--skill",
                str(root / "skills-ab" / "B" / name),
            ]
            args += ["--runs", "2", "--quiet", "--no-cache", "--results-dir", str(out), "--concurrency", "4"]
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                cli(args)
        report = json.loads(next(out.glob("*.json")).read_text())
        comparison = report["triggers"]["comparisons"][0]["parts"]["all"]
        settled = [
            m for m in ("recall", "false_fire") if comparison[m]["verdict"]["label"] in ("BETTER", "WORSE")
        ]
        return "+".join(settled) or "none"

    labels = repeat(k, one, "trigger A/A")
    out = []
    for metric in ("recall", "false_fire"):
        hits = sum(n for key, n in labels.items() if metric in key.split("+"))
        out.append(
            Outcome(
                f"trigger A/B, A/A, {metric.replace('_', '-')}, 12 queries x 2 runs, real claude CLI",
                k,
                hits,
                "BETTER or WORSE",
                "<= 5%",
                hits / k <= 0.05,
            )
        )
    return out


PROCEDURES: dict[str, Callable[[Path, int], Outcome]] = {
    "fixed-aa": fixed_aa,
    "fixed-planted": fixed_planted,
    "sequential-aa": sequential_aa,
    "plan": plans_promise,
}


def write_results(outcomes: list[Outcome], args: argparse.Namespace, seconds: float) -> None:
    lines = [
        MARKER,
        "## Calibration (`python -m benchmarks.calibration`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine in {seconds / 60:.0f} minutes: the whole "
        "command per run against a seeded random-reply server; Wilson 95% intervals.",
        "",
        "| procedure | runs | counted | rate [95% CI] | target | note |",
        "|---|---|---|---|---|---|",
        *(o.line() for o in outcomes),
        MARKER,
    ]
    text = RESULTS.read_text() if RESULTS.exists() else "# Measurements\n\nDated figures the README cites.\n"
    if MARKER in text:
        head, _, rest = text.partition(MARKER)
        _, _, tail = rest.partition(MARKER)
        text = head.rstrip() + "\n\n" + "\n".join(lines) + tail
    else:
        text = text.rstrip() + "\n\n" + "\n".join(lines) + "\n"
    RESULTS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="runs per sample-mode procedure")
    ap.add_argument("--plan-runs", type=int, default=100, help="runs at the plan's N")
    ap.add_argument(
        "--trigger-runs", type=int, default=20, help="runs of the trigger A/A (real CLI sessions)"
    )
    ap.add_argument("--only", nargs="*", choices=[*PROCEDURES, "trigger"], help="run only these")
    args = ap.parse_args(argv)
    started = time.monotonic()
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        word_project(root, 30)
        previous = os.getcwd()
        os.chdir(root)
        try:
            for name, procedure in PROCEDURES.items():
                if args.only and name not in args.only:
                    continue
                k = args.plan_runs if name == "plan" else args.runs
                outcomes.append(procedure(root, k))
                print(outcomes[-1].line(), flush=True)
                # written after each procedure: an hour of runs is not lost to a later failure
                write_results(outcomes, args, time.monotonic() - started)
            if not args.only or "trigger" in args.only:
                for outcome in trigger_aa(root, args.trigger_runs):
                    outcomes.append(outcome)
                    print(outcome.line(), flush=True)
                write_results(outcomes, args, time.monotonic() - started)
        finally:
            os.chdir(previous)
    print(f"written to {RESULTS}")
    return 0 if all(o.met is not False for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
