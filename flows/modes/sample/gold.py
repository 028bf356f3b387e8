"""--judge-gold: the run's judge(s) score the human-scored outputs before the run; the agreement
decides whether the verdict may rest on the judge."""

from __future__ import annotations

from flows.engine.judging import judge_name, run_judge_jobs
from flows.engine.progress import Progress
from flows.engine.runner import UnitRunner
from flows.inputs.gold import Gold
from flows.inputs.plan import JudgeJob
from flows.modes.sample.prepare import Prepared
from graders.judge import Judgement, judge_layer, parse_reply, prompts_for
from graders.schema import JudgeResult, JudgeStatus
from tasks.stats.agreement import rater_agreement
from tasks.stats.figures import JudgeGold


async def judge_gold(prepared: Prepared, runner: UnitRunner, gold: Gold) -> list[JudgeResult]:
    """Every gold output judged exactly as a run's output would be (each judge of an ensemble)."""
    jobs: list[JudgeJob] = []
    owners: list[int] = []
    for index, item in enumerate(gold.items):
        for prompt in prompts_for(item.sample, item.output):
            for judge in prepared.judges:
                jobs.append(JudgeJob(judge, prompt, f"gold:{item.id}", "gold", 1))
                owners.append(index)
    outcomes = await run_judge_jobs(runner, jobs, parse_reply, prepared.policy)
    per_item: list[list[Judgement]] = [[] for _ in gold.items]
    for owner, job, (parsed, raw, error) in zip(owners, jobs, outcomes, strict=True):
        score, reason = parsed if parsed is not None else (None, "")
        per_item[owner].append(
            Judgement(job.prompt.aspect, judge_name(job.target), score, reason, raw=raw, error=error)
        )
    return [judge_layer(item.sample, js)[0] for item, js in zip(gold.items, per_item, strict=True)]


def gold_figures(gold: Gold, results: list[JudgeResult], min_alpha: float, seed: int) -> JudgeGold:
    """The JudgeGold part of the report: the judge layer and each judge against the gold scores."""
    graded = [
        (item, r) for item, r in zip(gold.items, results, strict=True) if r.status == JudgeStatus.GRADED
    ]
    overall = rater_agreement(
        [(item.id, float(item.score), r.score) for item, r in graded if r.score is not None], seed=seed
    )
    judges = sorted({name for _, r in graded for name in (r.judges or {})})
    per_judge = {}
    if len(judges) > 1:
        for name in judges:
            pairs = [(item.id, float(item.score), (r.judges or {}).get(name)) for item, r in graded]
            per_judge[name] = rater_agreement([(i, h, j) for i, h, j in pairs if j is not None], seed=seed)
    alpha = overall.krippendorff_alpha_ordinal
    reliable = alpha is not None and alpha >= min_alpha
    shown = "undefined" if alpha is None else f"{alpha:.3f}"
    low, high = overall.alpha_ci95
    interval = f" (95% CI [{low:.2f}, {high:.2f}])" if low is not None and high is not None else ""
    message = (
        f"judge vs gold ({gold.path.name}, {overall.n} items): Krippendorff's alpha {shown}{interval}"
        + (
            f" >= {min_alpha:g}: reliable enough"
            if reliable
            else f" < {min_alpha:g}: the verdict rests on an unreliable judge"
        )
    )
    return JudgeGold(
        file=str(gold.path),
        sha256=gold.sha256,
        items=len(gold.items),
        ungraded=len(gold.items) - len(graded),
        min_alpha=min_alpha,
        reliable=reliable,
        agreement=overall,
        per_judge=per_judge,
        message=message,
        scores={item.id: r.score for item, r in zip(gold.items, results, strict=True)},
    )


async def check_gold(prepared: Prepared, runner: UnitRunner) -> JudgeGold | None:
    """The gold check of --judge-gold (None without it), before the run's own calls."""
    if prepared.gold is None:
        return None
    saved, runner.progress = runner.progress, Progress(0, "judge gold", enabled=False)
    try:
        results = await judge_gold(prepared, runner, prepared.gold)
    finally:
        runner.progress = saved
    o = prepared.options
    return gold_figures(prepared.gold, results, o.min_judge_alpha, o.seed)
