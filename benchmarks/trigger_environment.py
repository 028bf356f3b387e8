"""A trigger suite in a crowded environment: what --dry-run estimates and how long the run takes.

    .venv/bin/python -m benchmarks.trigger_environment                       # 40 skills x 30 queries x 5 runs
    .venv/bin/python -m benchmarks.trigger_environment --skills 40 --queries 30 --runs 1 --concurrency 4

An environment of generated skills (descriptions of 300-500 characters, so the listing is far over
Claude Code's 8,000-character budget for a 200,000-token window), one new skill under test, and
queries that expect the new skill, installed skills or none. The real claude CLI runs every query
with and without the new skill, against the scripted model server of the tests (in this process:
its CPU is shared with the run's), which picks a skill only when its description is listed in full.
Prints the plan's sessions and cost estimate (claude-sonnet-4 prices), the wall time of the whole
command, sessions per minute, and how many descriptions were dropped.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import tempfile
import time
from pathlib import Path

import yaml

from flows.cli.main import main
from tests.fakes.provider import FakeProvider, RouteScript

TOPICS = (
    "invoices", "sprint notes", "database migrations", "release notes", "onboarding docs", "API clients",
    "load tests", "log triage", "feature flags", "dependency updates", "security reviews", "CSV reports",
)  # fmt: skip


def description(i: int, rng: random.Random) -> str:
    topic = TOPICS[i % len(TOPICS)]
    words = " ".join(
        rng.choice(("keeps", "checks", "drafts", "formats", "tracks", "summarises")) for _ in range(60)
    )
    return f"Handles {topic} number {i} for the team, {words}"[: rng.randint(300, 500)]


def build(
    root: Path, skills: int, queries: int, seed: int
) -> tuple[Path, Path, dict[str, list[tuple[str, float]]]]:
    rng = random.Random(seed)
    home = root / "home"
    for i in range(skills):
        folder = home / ".claude" / "skills" / f"team-{i:02d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: team-{i:02d}\ndescription: {description(i, rng)}\n---\nDo it.\n"
        )
    new = root / "new" / "release-scribe"
    new.mkdir(parents=True)
    (new / "SKILL.md").write_text(
        "---\nname: release-scribe\ndescription: Writes release notes from merged work.\n---\nDo it.\n"
    )
    rows, prefs = [], {}
    for q in range(queries):
        kind = q % 3
        text = f"Request {q}: " + (
            "write the release notes" if kind == 0 else f"work on topic {q}" if kind == 1 else "what is 2+2"
        )
        expect = "release-scribe" if kind == 0 else f"team-{q % skills:02d}" if kind == 1 else "none"
        rows.append({"id": f"q{q:02d}", "query": text, "expect": expect})
        if expect != "none":
            prefs[text] = [(expect, 0.9)]
    (root / "queries.yaml").write_text(yaml.safe_dump({"queries": rows}))
    return home, new, prefs


def run(argv: list[str]) -> tuple[int, str, float]:
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue(), time.perf_counter() - started


def measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="skillab-trig-env-") as tmp, FakeProvider() as server:
        root = Path(tmp)
        home, new, prefs = build(root, args.skills, args.queries, args.seed)
        RouteScript(prefs, seed=args.seed).install(server)
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-bench")
        os.chdir(root)
        common = [
            "skill",
            "triggers",
            "run",
            "--skill",
            str(new),
            "--environment",
            str(home),
            "--queries",
            "queries.yaml",
        ]
        common += ["--runs", str(args.runs), "--concurrency", str(args.concurrency), "--base-url", server.url]
        common += ["--results-dir", str(root / "results"), "--quiet"]
        haiku = ["--runner-model", "claude-haiku-4-5"]  # a 200,000-token window: the 8,000-character budget
        _, plan, _ = run([*common, *haiku, "--dry-run"])
        print(plan.strip())
        _, priced, _ = run([*common, "--runner-model", "sonnet", "--dry-run"])
        print("at claude-sonnet-4 prices:", next(x for x in priced.splitlines() if x.startswith("estimated")))
        code, out, seconds = run([*common, *haiku, "--cache-dir", str(root / "cache")])
        if code != 0:
            raise SystemExit(out)
        report = json.loads(next((root / "results").glob("*.json")).read_text())
        sessions = report["meta"]["taskCount"]
        listing = report["triggers"]["summaries"][-1]["listing"]
        print(
            f"whole command: {seconds:.0f} s wall for {sessions} sessions at concurrency {args.concurrency} "
            f"= {sessions / seconds * 60:.0f} sessions/min (2 cores; the scripted server in the same process)"
        )
        print(
            f"listing: up to {listing['chars']:,} characters of a {listing['budget']:,} budget; descriptions "
            f"dropped in {listing['over_budget']}/{listing['sessions']} sessions"
        )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=40)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    measure(parser.parse_args())


if __name__ == "__main__":
    cli()
