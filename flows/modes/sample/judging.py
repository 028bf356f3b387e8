"""Sample mode's judging: every output's judge calls, the pairwise comparison in both orders, and the
combination of assertions and judge into a grade."""

from __future__ import annotations

from executors.schema import RunResult
from flows.engine.judging import judge_name, run_judge_jobs
from flows.engine.runner import UnitRunner
from flows.inputs.plan import JudgeJob
from flows.modes.sample.prepare import Prepared
from graders import registry
from graders.judge import (
    WINNER_SCHEMA_JSON,
    Judgement,
    judge_layer,
    pairwise_outcome,
    pairwise_prompt,
    parse_reply,
    parse_winner,
    prompts_for,
)
from graders.schema import AssertionResult, Grade, JudgeResult, Sample
from graders.scoring import make_grade
from tasks.schema import Record, Unit
from tasks.stats.figures import PairwiseSummary


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
    outcomes = await run_judge_jobs(runner, jobs, parse_reply, prepared.policy)
    out: list[list[Judgement]] = [[] for _ in items]
    for owner, job, (parsed, raw, error) in zip(owners, jobs, outcomes, strict=True):
        score, reason = parsed if parsed is not None else (None, "")
        out[owner].append(
            Judgement(job.prompt.aspect, judge_name(job.target), score, reason, raw=raw, error=error)
        )
    return out


async def pairwise(prepared: Prepared, runner: UnitRunner, records: list[Record]) -> list[PairwiseSummary]:
    """--pairwise: each judge compares control and treatment outputs of a case, in both orders."""
    from tasks.stats.aggregate import pairwise_summary  # pandas, scipy: imported when a run gets this far
    from tasks.stats.judge_bias import position_flips

    by_key = {(r.sample_id, r.variant, r.run): r for r in records if r.result.ok}
    samples = {s.sample_id: s for s in prepared.samples}
    comparisons = []
    for treatment in [v.name for v in prepared.variants if v.name != prepared.control]:
        jobs: list[JudgeJob] = []
        meta: list[tuple[str, int, str, str]] = []  # sample_id, run, order, judge
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
                    meta.append((sample_id, run, order, judge_name(judge)))
        outcomes = await run_judge_jobs(runner, jobs, parse_winner, prepared.policy)
        votes: dict[tuple[str, int, str], dict[str, str | None]] = {}
        for (sample_id, run, order, judge_id), (winner, _, _) in zip(meta, outcomes, strict=True):
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
        pairs, flips = position_flips([(v.get("t-first"), v.get("c-first")) for v in votes.values()])
        summary = pairwise_summary(prepared.control, treatment, case_score, unresolved)
        summary.pairs, summary.flips = pairs, flips
        comparisons.append(summary)
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
