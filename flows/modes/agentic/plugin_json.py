"""A plugin suite's result in the shape ``claude plugin eval --json`` writes (Claude Code 2.1.330, read
from its own result schema), so a suite's post-run gate written for the official runner (for one,
a check of ``cases[].arms.without[].graders[].evidence``) runs on skillab's results unchanged.

What skillab does not have is left out or given its plain meaning, never invented: ``evidence`` is
the grader's own explanation (the judge's reason for a judged grader), ``judgeCostUsd`` the judge's
cost of the run split evenly over the runs judged (skillab prices the judge per run, not per
grader), ``tracePath`` the session's raw stream, ``claudeVersion`` the version the sessions
reported, ``runsPerCase`` the runs made.
"""

from __future__ import annotations

from collections.abc import Sequence

from executors.parsing import JsonObject
from executors.plugin import Plugin
from flows.modes.agentic.model import AgenticReport
from flows.report.entries import AgentRun, AgentVariantResult, CaseResult
from graders.agent_task import AgentTask
from graders.plugin_eval import LlmGrader, PluginCase
from tasks.schema import Arm

SCHEMA_VERSION = 1


def _run(entry: AgentRun, judge_share: float) -> JsonObject:
    part = entry.plugin_eval()
    graders = part.graders if part is not None else []
    scored = [g for g in graders if g.scored]
    return {
        "score": float(part.score or 0.0) if part is not None else 0.0,
        "passed": bool(entry.ok and scored and all(g.passed for g in scored)),
        "turns": int(entry.num_turns or 0),
        "costUsd": float(entry.cost_usd or 0.0),
        "judgeCostUsd": judge_share if any(g.votes for g in graders) else 0.0,
        "durationSeconds": (entry.duration_ms or 0.0) / 1000,
        "error": None if entry.ok else (entry.error or entry.status or "error"),
        "tracePath": f"{entry.outputs}/raw_stream.jsonl" if entry.outputs else "",
        "skippedPaidGraders": False,
        "graders": [
            {
                "name": g.name,
                "passed": g.passed,
                "weight": g.weight,
                "explanation": g.explanation,
                "withOnly": g.with_only,
                "scored": g.scored,
                **({"judgeVotes": [bool(v) for v in g.votes if v is not None]} if g.votes else {}),
                "evidence": g.explanation,
            }
            for g in graders
        ],
    }


def _runs(result: CaseResult[AgentVariantResult], arm: str, judge_share: float) -> list[JsonObject]:
    entry = result.variants.get(arm)
    return [] if entry is None else [_run(r, judge_share) for r in (entry.runs or [entry])]


def _judged_runs(report: AgenticReport) -> int:
    return sum(
        1
        for case in report.results
        for entry in case.variants.values()
        for r in entry.runs or [entry]
        if (part := r.plugin_eval()) is not None and any(g.votes for g in part.graders)
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _case(
    task: AgentTask,
    case: PluginCase,
    result: CaseResult[AgentVariantResult] | None,
    judge_share: float,
) -> JsonObject:
    with_runs = _runs(result, Arm.WITH_SKILL, judge_share) if result else []
    without = _runs(result, Arm.BASELINE, judge_share) if result else []
    aggregates: JsonObject = {
        "score": _mean([r["score"] for r in with_runs]),
        "passRate": _mean([float(r["passed"]) for r in with_runs]),
    }
    if without:
        aggregates |= {
            "scoreWithout": _mean([r["score"] for r in without]),
            "passRateWithout": _mean([float(r["passed"]) for r in without]),
        }
        aggregates["delta"] = aggregates["score"] - aggregates["scoreWithout"]
    return {
        "name": case.name,
        "dir": task.case_dir or "",
        "source": "case",
        "promptMarkdown": case.prompt,
        # the case's own pin as written, absent otherwise, as the official runner writes it
        **({"model": case.model} if case.model else {}),
        "runsPerCase": len(with_runs),
        "timeoutSeconds": case.timeout_seconds,
        "maxTurns": case.max_turns,
        "graders": [
            {
                "name": g.name,
                "type": g.type,
                "weight": g.weight,
                **({"graderMarkdown": g.criteria} if isinstance(g, LlmGrader) else {}),
                "config": g.model_dump(exclude={"name", "type", "weight"}, mode="json"),
            }
            for g in case.graders
        ],
        "arms": {"with": with_runs, **({"without": without} if without else {})},
        "advisories": list(case.warnings),
        "aggregates": aggregates,
    }


def plugin_eval_json(
    report: AgenticReport,
    tasks: Sequence[AgentTask],
    *,
    root: str,
    threshold: float,
    case_filter: Sequence[str],
    tags: Sequence[str],
    seconds: float,
    plugin: Plugin | None = None,
) -> JsonObject:
    """The official result shape of a plugin suite run (its cases only)."""
    by_id = {r.sample_id: r for r in report.results}
    meta = report.meta
    judge = float(meta.judge_cost_usd or 0.0)
    share = judge / max(1, _judged_runs(report))
    cases = [_case(t, t.plugin_case, by_id.get(t.task_id), share) for t in tasks if t.plugin_case is not None]
    scores = [c["aggregates"]["score"] for c in cases]
    deltas = [c["aggregates"]["delta"] for c in cases if "delta" in c["aggregates"]]
    return {
        "schemaVersion": SCHEMA_VERSION,
        "claudeVersion": (meta.agent_cli_version or "").removeprefix("claude ").strip(),
        "startedAt": meta.timestamp,
        "durationSeconds": round(seconds, 3),
        "costUsd": float(meta.total_cost_usd or 0.0) + judge,
        "partial": False,
        "suite": {
            "root": root,
            "ablation": "with-without",
            "judgeModel": meta.judge_model,
            **({"caseFilter": ",".join(case_filter)} if case_filter else {}),
            **({"tagFilters": list(tags)} if tags else {}),
            "threshold": threshold,
            "plugins": [
                {
                    "name": plugin.name,
                    **({"version": plugin.version} if plugin.version else {}),
                    "path": str(plugin.path),
                }
            ]
            if plugin is not None
            else [],
        },
        "cases": cases,
        "aggregates": {
            "casesTotal": len(cases),
            "casesPassed": sum(1 for s in scores if s >= threshold),
            "overallScore": _mean(scores),
            "overallPassRate": _mean([c["aggregates"]["passRate"] for c in cases]),
            **({"meanDelta": _mean(deltas)} if deltas else {}),
        },
    }
