""" "Why did it score that way?" for every mode's flow: the --judge-gold check into the verdicts, the
judge bias probes, the section ablation, and the failure diagnosis with (unless --no-diagnose) one
LLM paragraph per group, asked of the judge model through the unit runner (so cached, budgeted and
counted like every judge call)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from executors.base import HttpExecutor
from executors.errors import warn
from executors.registry import close_all, usable_executor
from flows.engine.judging import judge_name, run_judge_jobs
from flows.engine.progress import Progress
from flows.engine.runner import RunnerConfig, UnitRunner
from flows.inputs.plan import JudgeJob, Target
from flows.inputs.skill_config import Skill, SkillBenchConfig
from flows.report.diagnosis import diagnosis
from flows.report.diagnosis_parts import Diagnosis
from flows.report.schema import JudgeGold, Report
from graders.diagnosis import DIAGNOSIS_SCHEMA_JSON, FailedCase, diagnosis_prompt, parse_diagnosis
from tasks.schema import Arm, CallPolicy
from tasks.stats.diagnosis import FailureGroup

#: Groups per variant that get a suggestion (the largest), and cases shown per group.
SUGGESTED_GROUPS = 5
CASES_SHOWN = 3


def failed_cases(report: Report, variant: str, group: FailureGroup) -> list[FailedCase]:
    by_id = {c.sample_id: c for c in report.results}
    out = []
    for sample_id in group.cases[:CASES_SHOWN]:
        case = by_id[sample_id]
        entry = case.variants[variant]
        out.append(FailedCase(sample_id, case.prompt, entry.output or entry.error or "", group.key))
    return out


async def diagnose(
    report: Report,
    artifacts: dict[str, str | None],
    suggest: tuple[Target, UnitRunner, Callable[[Target], CallPolicy]] | None,
) -> Diagnosis:
    """The report's diagnosis; ``suggest`` = (judge target, runner, policy) asks for the paragraphs.
    ``artifacts``: variant label -> the artifact's text (None for the baseline)."""
    part = diagnosis(report)
    if suggest is None:
        return part
    target, runner, policy = suggest
    jobs, owners = [], []
    for v in part.variants:
        for group in v.groups[:SUGGESTED_GROUPS]:
            cases = failed_cases(report, v.variant, group)
            prompt = diagnosis_prompt(artifacts.get(v.variant), group.key, group.share, cases)
            jobs.append(
                JudgeJob(
                    target,
                    prompt,
                    f"diagnose:{group.key[:40]}",
                    v.variant,
                    1,
                    schema_json=DIAGNOSIS_SCHEMA_JSON,
                )
            )
            owners.append(group)
    saved, runner.progress = runner.progress, Progress(0, "diagnosis", enabled=False)
    try:
        outcomes = await run_judge_jobs(runner, jobs, parse_diagnosis, policy)
    finally:
        runner.progress = saved
    for group, (text, _, _) in zip(owners, outcomes, strict=True):
        if text is not None:
            group.suggestion, group.suggestion_by = text, judge_name(target)
    part.suggestions = True
    return part


def mark_judge(report: Report, gold: JudgeGold | None) -> None:
    """--judge-gold: the check goes into the report, and an unreliable judge into every verdict."""
    if gold is None:
        return
    report.judge_gold = gold
    if not report.judge_gold.reliable:
        warn(report.judge_gold.message)
        for comp in report.comparisons:
            comp.verdict.judge_caveat = report.judge_gold.message


async def diagnose_skill_run(
    report: Report, config: SkillBenchConfig, skill: Skill, ablated: dict[str, str] | None = None
) -> Diagnosis:
    """Agentic mode's diagnosis: suggestions from the four-criterion judge's model, the with-skill
    arm's artifact being the skill's SKILL.md (``ablated``: an ablated arm -> its shorter SKILL.md)."""
    artifacts: dict[str, str | None] = {
        Arm.WITH_SKILL: skill.artifact_text,
        Arm.BASELINE: None,
        **(ablated or {}),
    }
    if not config.diagnose:
        return await diagnose(report, artifacts, None)
    executor = usable_executor(config.judge_executor, "--judge-executor")
    endpoint = executor.base_url if isinstance(executor, HttpExecutor) else "in-process"
    cache_dir = Path(config.results_dir) / ".cache"
    runner = UnitRunner(RunnerConfig.judging(config, cache_dir), Progress(0, "diagnosis", enabled=False))
    policy = CallPolicy(cache_dir=str(cache_dir))
    try:
        return await diagnose(
            report, artifacts, (Target(executor, config.judge_model, endpoint), runner, lambda _: policy)
        )
    finally:
        await close_all()
