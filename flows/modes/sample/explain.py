"""Every "why" part of a sample-mode report: the judge gold check, the judge bias probes, the section
ablation and the failure diagnosis (flows/modes/explain.py holds what every mode shares of it)."""

from __future__ import annotations

from flows.engine.runner import UnitRunner
from flows.modes.explain import diagnose, mark_judge
from flows.modes.sample.bias import judge_bias
from flows.modes.sample.model import SampleReport
from flows.modes.sample.prepare import Prepared
from flows.report.ablation import ablation
from flows.report.schema import JudgeGold


async def explain_sample_run(
    report: SampleReport,
    prepared: Prepared,
    runner: UnitRunner,
    labels: dict[str, str],
    gold: JudgeGold | None,
) -> None:
    """Every "why" part of a sample-mode report (``report`` and ``labels`` as the report names variants)."""
    mark_judge(report, gold)
    bias = judge_bias(report)
    if bias is not None:
        report.judge_bias = bias
    if prepared.ablated:
        full = prepared.variants[0]
        report.ablation = ablation(
            report,
            str(full.path),
            labels[full.name],
            {labels[name]: heading for name, heading in prepared.ablated.items()},
        )
    artifacts = {labels[v.name]: v.artifact for v in prepared.variants}
    judge = prepared.judges[0] if prepared.judges else None
    suggest = (judge, runner, prepared.policy) if judge is not None and prepared.options.diagnose else None
    report.diagnosis = await diagnose(report, artifacts, suggest)
    stats = runner.stats()  # the suggestions were judge calls too
    report.meta.calls, report.meta.cache_hits = stats.calls, stats.cache_hits
    report.meta.judge_cost_usd = round(stats.spent_by_kind.get("judge", 0.0), 6)
