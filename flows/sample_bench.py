"""The sample-mode flow: load, fan out one task per sample x variant x run, grade, judge, aggregate."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect import flow
from prefect.artifacts import acreate_link_artifact, acreate_markdown_artifact, acreate_table_artifact
from prefect.utilities.annotations import quote

from executors.errors import TransientError
from executors.schema import RunResult
from flows.ci_outputs import append_github_summary, summary_markdown, write_junit
from flows.gc_tuning import lean_gc
from flows.options import BenchOptions
from flows.plan import JudgeJob, Target, judge_unit
from flows.prepare import Prepared
from flows.progress import Progress
from flows.regression import regression_against_previous
from flows.report_server import export_html
from graders import registry
from graders.judge import (
    WINNER_SCHEMA_JSON,
    Judgement,
    JudgeParseError,
    judge_layer,
    pairwise_outcome,
    pairwise_prompt,
    parse_reply,
    parse_winner,
    prompts_for,
)
from graders.schema import AssertionResult, Grade, JudgeResult, Sample
from graders.scoring import make_grade
from tasks.aggregate import aggregate_results, pairwise_summary
from tasks.cache import ResultCache
from tasks.execute import with_policy
from tasks.files import atomic_write_text
from tasks.grade import grade_outputs
from tasks.schema import SAMPLE_SCALE, Record, Unit

T = TypeVar("T")
P = TypeVar("P")


def unwalked(value: T) -> T:
    """Hand a large parameter to a task without Prefect walking every element (seconds at 1,000 units)."""
    return cast(T, quote(value))


# ---------------------------------------------------------------- running units


class UnitRunner:
    """Runs units as Prefect tasks under a concurrency cap, skipping cached ones, within budgets."""

    def __init__(self, prepared: Prepared, progress: Progress) -> None:
        self.prepared = prepared
        self.progress = progress
        self.cache = ResultCache(prepared.cache_dir) if prepared.cache_dir else None
        self.semaphore = asyncio.Semaphore(prepared.options.concurrency)
        self.calls = 0
        self.cache_hits = 0
        self.spent = 0.0
        self.spent_by_kind: dict[str, float] = {}
        self.not_run: list[Unit] = []

    def over_budget(self) -> bool:
        o = self.prepared.options
        return (o.max_calls is not None and self.calls >= o.max_calls) or (
            o.budget_usd is not None and self.spent >= o.budget_usd
        )

    def cached(self, unit: Unit) -> RunResult | None:
        if self.cache is None:
            return None
        value = self.cache.get(unit.key)
        if value is None:
            return None
        try:
            return RunResult(**{**value, "cached": True})
        except ValueError:
            return None

    async def run(self, units: list[Unit], target: Target) -> dict[str, RunResult]:
        results: dict[str, RunResult] = {}
        policy = self.prepared.policy(target)
        call = with_policy(policy)

        async def one(unit: Unit) -> None:
            hit = self.cached(unit)
            if hit is not None:
                self.cache_hits += 1
                results[unit.key] = hit
                self.progress.advance(ok=True, cached=True)
                return
            async with self.semaphore:
                if self.over_budget():
                    self.not_run.append(unit)
                    return
                self.calls += 1
                state = await call(unwalked(unit), unwalked(policy), return_state=True)
                if state.is_completed():
                    result = await state.aresult()
                else:
                    exc = await state.aresult(raise_on_failure=False)
                    kind = getattr(exc, "kind", "error")
                    message = str(exc) or type(exc).__name__
                    if "timeout" in message.lower() and isinstance(exc, TransientError):
                        kind = "timeout"
                    attempts = policy.retries + 1 if isinstance(exc, TransientError) else 1
                    result = RunResult(
                        ok=False, error=message, error_kind=kind, attempts=attempts, model=unit.request.model
                    )
            self.spent += result.cost_usd
            self.spent_by_kind[unit.kind] = self.spent_by_kind.get(unit.kind, 0.0) + result.cost_usd
            results[unit.key] = result
            self.progress.advance(ok=result.ok, cost=result.cost_usd)

        with lean_gc():
            await asyncio.gather(*(one(u) for u in units))
        return results


# ---------------------------------------------------------------- grading


async def run_judge_jobs(
    runner: UnitRunner, jobs: list[JudgeJob], parse: Callable[[str], P]
) -> list[tuple[P | None, str | None, str | None]]:
    """(parsed, raw reply, error) per job. A failed or unparseable judgement is asked once more."""
    outcomes: list[tuple[P | None, str | None, str | None]] = [(None, None, "not run")] * len(jobs)
    pending = list(range(len(jobs)))
    for attempt in (0, 1):
        units = {i: judge_unit(jobs[i], attempt) for i in pending}
        groups: dict[int, tuple[Target, list[Unit]]] = {}
        for i in pending:
            groups.setdefault(id(jobs[i].target), (jobs[i].target, []))[1].append(units[i])
        results: dict[str, RunResult] = {}
        for part in await asyncio.gather(*(runner.run(us, target) for target, us in groups.values())):
            results |= part
        retry = []
        for i in pending:
            res = results.get(units[i].key)
            if res is None:
                outcomes[i] = (None, None, "not run: budget reached")
                continue
            try:
                if not res.ok:
                    raise JudgeParseError(res.error or "judge call failed")
                outcomes[i] = (parse(res.output), res.output, None)
            except JudgeParseError as exc:
                outcomes[i] = (None, res.output or None, str(exc))
                retry.append(i)
        pending = retry
        if not pending:
            break
    return outcomes


def judge_name(target: Target) -> str:
    return f"{target.executor.name}:{target.model}"


async def judge_outputs(
    prepared: Prepared, runner: UnitRunner, items: list[tuple[Unit, Sample, RunResult]]
) -> list[list[Judgement]]:
    """Every judge call for every output (each judge of an ensemble, each --judge-repeat)."""
    jobs: list[JudgeJob] = []
    owners: list[int] = []
    for index, (unit, sample, result) in enumerate(items):
        for prompt in prompts_for(sample, result.output):
            for judge in prepared.judges:
                for rep in range(1, prepared.options.judge_repeat + 1):
                    jobs.append(JudgeJob(judge, prompt, unit.sample_id, unit.variant, unit.run, rep))
                    owners.append(index)
    outcomes = await run_judge_jobs(runner, jobs, parse_reply)
    out: list[list[Judgement]] = [[] for _ in items]
    for owner, job, (parsed, raw, error) in zip(owners, jobs, outcomes, strict=True):
        score, reason = parsed if parsed is not None else (None, "")
        out[owner].append(
            Judgement(job.prompt.aspect, judge_name(job.target), score, reason, raw=raw, error=error)
        )
    return out


async def pairwise(prepared: Prepared, runner: UnitRunner, records: list[Record]) -> list[dict[str, Any]]:
    """--pairwise: each judge compares control and treatment outputs of a case, in both orders."""
    by_key = {(r.sample_id, r.variant, r.run): r for r in records if r.result.ok}
    samples = {s.sample_id: s for s in prepared.samples}
    comparisons = []
    for treatment in [v.name for v in prepared.variants if v.name != prepared.control]:
        jobs: list[JudgeJob] = []
        meta: list[tuple[str, int, str]] = []
        for (sample_id, variant, run), rec in by_key.items():
            other = by_key.get((sample_id, prepared.control, run))
            if variant != treatment or other is None:
                continue
            sample = samples[sample_id]
            criteria = (
                sample.rubric or "\n".join(f"{k}: {v}" for k, v in (sample.dimensions or {}).items()) or None
            )
            t_out, c_out = rec.result.output, other.result.output
            for judge in prepared.judges:
                for order, (first, second) in (("t-first", (t_out, c_out)), ("c-first", (c_out, t_out))):
                    prompt = pairwise_prompt(sample.full_prompt, criteria, first, second)
                    jobs.append(
                        JudgeJob(
                            judge,
                            prompt,
                            sample_id,
                            f"{treatment} vs {prepared.control}",
                            run,
                            schema_json=WINNER_SCHEMA_JSON,
                        )
                    )
                    meta.append((sample_id, run, order + "|" + judge_name(judge)))
        outcomes = await run_judge_jobs(runner, jobs, parse_winner)
        votes: dict[tuple[str, int, str], dict[str, str | None]] = {}
        for (sample_id, run, tag), (winner, _, _) in zip(meta, outcomes, strict=True):
            order, judge_id = tag.split("|", 1)
            votes.setdefault((sample_id, run, judge_id), {})[order] = winner
        case_score: dict[str, int] = {}
        unresolved = 0
        for (sample_id, _, _), v in votes.items():
            outcome = pairwise_outcome(v.get("t-first"), v.get("c-first"))
            if outcome is None:
                unresolved += 1
                continue
            case_score[sample_id] = (
                case_score.get(sample_id, 0) + {"treatment": 1, "control": -1, "tie": 0}[outcome]
            )
        comparisons.append(pairwise_summary(prepared.control, treatment, case_score, unresolved))
    return comparisons


def combine(
    sample: Sample, deterministic: list[AssertionResult], judgements: list[Judgement], judge_enabled: bool
) -> Grade:
    judge, similarity = judge_layer(sample, judgements) if judge_enabled else (JudgeResult(), {})
    results: list[AssertionResult] = []
    det = iter(deterministic)
    for i, a in enumerate(sample.assertions):
        if registry.is_judged(a):
            if i in similarity:
                results.append(similarity[i])
        else:
            results.append(next(det))
    return make_grade(results, judge, sample.judged and judge_enabled)


# ---------------------------------------------------------------- the flow


@dataclass
class Outcome:
    report: dict[str, Any]
    path: Path | None


async def run_benchmark(prepared: Prepared, cwd: Path, *, show_progress: bool = True) -> Outcome:
    from flows.report import build_report, publish

    opts = prepared.options
    started = time.time()
    started_at = dt.datetime.now(dt.UTC)
    units = prepared.units()
    shard_runs: list[dict[str, Any]] = []
    if opts.shards > 1:
        from flows.shard import dispatch_shards

        shard_runs = await dispatch_shards(prepared, cwd)
    progress = Progress(len(units), "executing", enabled=show_progress)
    runner = UnitRunner(prepared, progress)
    try:
        results = await runner.run(units, prepared.target)
    finally:
        progress.close()
    by_id = {s.sample_id: s for s in prepared.samples}
    done = [(u, by_id[u.sample_id], results[u.key]) for u in units if u.key in results]
    ok_items = [(u, s, r) for u, s, r in done if r.ok]
    deterministic = grade_outputs(unwalked([(s, r) for _, s, r in ok_items])) if ok_items else []
    judgements: list[list[Judgement]] = [[] for _ in ok_items]
    judge_enabled = bool(prepared.judges)
    if judge_enabled and ok_items:
        jprogress = Progress(0, "judging", enabled=False)
        runner.progress = jprogress
        judgements = await judge_outputs(prepared, runner, ok_items)
    grades = {
        u.key: combine(s, det, js, judge_enabled)
        for (u, s, _), det, js in zip(ok_items, deterministic, judgements, strict=True)
    }
    records = [
        Record(
            sample_id=u.sample_id,
            variant=u.variant,
            run=u.run,
            cluster=s.cluster,
            result=r,
            grade=grades.get(u.key),
        )
        for u, s, r in done
    ]
    aggregate = aggregate_results(
        unwalked(records),
        unwalked(prepared.samples),
        [v.name for v in prepared.variants],
        prepared.control,
        SAMPLE_SCALE,
        opts.seed,
        opts.margin,
        opts.min_effect,
        opts.max_error_rate,
    )
    if opts.pairwise and judge_enabled and len(prepared.variants) > 1:
        aggregate["pairwise"] = await pairwise(prepared, runner, records)
    report = build_report(prepared, records, aggregate, runner, started_at, time.time() - started)
    if shard_runs:
        report["meta"]["shards"] = shard_runs
    if opts.suite:
        report["regression"] = regression_against_previous(prepared.output_dir, report)
    path = publish(report, prepared)
    if opts.junit:
        write_junit(report, Path(opts.junit), opts.threshold)
    if opts.github_summary:
        append_github_summary(report, Path(opts.github_summary), opts.threshold)
    return Outcome(report, path)


class RegressionError(Exception):
    """A significant regression against the previous run of the suite: the flow run ends Failed."""

    def __init__(self, message: str, report_path: str) -> None:
        super().__init__(message)
        self.report_path = report_path


@flow(name="sample-bench", log_prints=False)
async def sample_bench(options: BenchOptions, cwd: str = ".", show_progress: bool = True) -> dict[str, Any]:
    """Sample mode: does artifact B beat artifact A on the same model and the same cases?"""
    from flows.prepare import prepare

    prepared = prepare(options, Path(cwd))
    outcome = await run_benchmark(prepared, Path(cwd), show_progress=show_progress)
    await publish_artifacts(outcome)
    regression = outcome.report.get("regression") or {}
    if regression.get("regressed"):
        raise RegressionError(
            f"significant regression in {', '.join(regression['regressed'])} against the previous run "
            f"{regression['previous']} of suite {options.suite!r}",
            str(outcome.path),
        )
    return {"report_path": str(outcome.path) if outcome.path else None, "id": outcome.report["id"]}


async def publish_artifacts(outcome: Outcome) -> None:
    """What the Prefect UI shows without opening a file: summary and verdict, per-variant table, a link."""
    report = outcome.report
    key = (
        re.sub(r"[^a-z0-9-]+", "-", (report["meta"].get("suite") or "skillab").lower()).strip("-")
        or "skillab"
    )
    await acreate_markdown_artifact(
        markdown=summary_markdown(report), key=f"{key}-summary", description=f"skillab report {report['id']}"
    )
    table = [
        {
            "variant": name,
            "score": s["avgCompositeScore"],
            "ci95_low": (s.get("compositeCI95") or [None])[0],
            "ci95_high": (s.get("compositeCI95") or [None, None])[1],
            "pass_rate": s["passRate"],
            "errors": s["errorCount"],
            "ungraded": s["ungradedCount"],
            "cost_usd": s["totalCostUSD"],
        }
        for name, s in report["summary"].items()
    ]
    await acreate_table_artifact(table=table, key=f"{key}-variants", description="per-variant figures")
    if outcome.path is not None:
        html = outcome.path.with_suffix(".html")
        atomic_write_text(html, export_html(report))
        port = os.environ.get("SKILLAB_REPORT_PORT") or "7799"
        await acreate_link_artifact(
            link=f"http://127.0.0.1:{port}/run/{report['id']}",
            link_text=f"report {report['id']} (python -m flows.bench report; file: {html})",
            key=f"{key}-report",
        )
