"""Cross-agent mode (``skill run --runner claude,codex,...``): on which agents does a skill help?

The same suite runs on each agent CLI with and without the skill, one agentic run (the skill-bench
flow, as a subflow) per agent, each with its own results tree and report; then one report merges
them, its variants ``<runner>/<arm>``, with the matrix: each agent's lift with its interval and
verdict, how often its sessions loaded the skill, and how each agent's lift differs from the first
agent's, paired by task.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Completed, Failed

from flows.engine.runlog import flow_run_page, run_logger, tag_flow_run
from flows.inputs.skill_config import Skill, SkillBenchConfig
from flows.modes.agentic.flow import skill_bench
from flows.modes.agentic.matrix_report import agent_report, build_matrix, matrix_markdown, matrix_report
from flows.modes.agentic.model import AgenticReport
from flows.modes.agentic.portability import (
    certificate,
    listed,
    measured_in,
    portability_lines,
    skill_findings,
    with_findings,
)
from flows.report.build import RunOutcome
from flows.report.ci import write_ci_outputs
from flows.report.diagnosis_parts import AgentMatrix
from flows.report.schema import load_report
from tasks.context import current
from tasks.store.files import atomic_write_json, atomic_write_text


def agent_config(
    config: SkillBenchConfig,
    runner: str,
    model: str,
    base_url: str | None,
    root: Path,
    used: tuple[int, float],
) -> SkillBenchConfig | str:
    """One agent's run: its CLI, model and endpoint, its own results tree below the matrix's, and
    what --max-calls and --budget-usd leave after the agents before it (``used``: their sessions and
    spend); why it cannot start when they leave nothing."""
    calls = None if config.max_calls is None else config.max_calls - used[0]
    budget = None if config.budget_usd is None else config.budget_usd - used[1]
    if calls is not None and calls < 1:
        return f"not run: --max-calls {config.max_calls} reached by the agents before it"
    if budget is not None and budget <= 0:
        return f"not run: --budget-usd {config.budget_usd:g} reached by the agents before it"
    update = {
        "runner": runner,
        "runner_model": model,
        "base_url": base_url,
        "results_dir": str(root / runner),
        "junit": None,  # the matrix writes them, of every agent
        "github_summary": None,
    }
    return config.model_copy(update=update | {"max_calls": calls, "budget_usd": budget})


def sessions_run(report: AgenticReport) -> tuple[int, float]:
    """(sessions started, their cost) of one agent's report: what counts against the caps."""
    return report.meta.calls or 0, sum(s.total_cost_usd for s in report.summary.values())


def publish_matrix(config: SkillBenchConfig, report: AgenticReport, root: Path) -> Path:
    """The matrix's report.json and report.md, its copy for the report server, --junit and
    --github-summary; its lines in the run's log. Returns report.json's path."""
    matrix = report.matrix or AgentMatrix(reference="", agents=[], interactions=[])
    report_path = root / "report.json"
    atomic_write_json(report_path, report.dump())
    atomic_write_text(root / "report.md", matrix_markdown(report, matrix))
    if config.output_dir:
        atomic_write_json(Path(config.output_dir) / f"{report.id}.json", report.dump())
    write_ci_outputs(
        report, config.junit, config.github_summary, config.threshold or 0.0, config.require_valid
    )
    log = run_logger()
    pooled = [matrix.pooled.line] if matrix.pooled else []
    for line in [*(a.line for a in matrix.agents), *(i.line for i in matrix.interactions), *pooled]:
        log.info(line)
    for line in portability_lines(report):
        log.info(line)
    log.info(f"report: {root / 'report.md'} ({report_path})")
    return report_path


@flow(name="agent-matrix", log_prints=False)
async def agent_matrix(
    config: SkillBenchConfig,
    runners: list[str],
    models: dict[str, str],
    base_urls: dict[str, str | None],
    skill_name: str,
    skill_path: str,
    tasks_dir: str,
) -> Any:
    await tag_flow_run("agentic", skill_name)
    log = run_logger()
    started = dt.datetime.now(dt.UTC)
    report_id = f"{skill_name}-agents-{started.strftime('%Y%m%d-%H%M%S')}"
    root = Path(config.results_dir) / report_id
    reports: dict[str, AgenticReport] = {}
    failures: dict[str, str] = {}
    context = current()
    used = (0, 0.0)  # the caps hold for all the agents together, in --runner order
    for runner in runners:
        agent = agent_config(config, runner, models[runner], base_urls[runner], root, used)
        if isinstance(agent, str):
            failures[runner] = agent
            log.info(f"agent {runner}: {agent}")
            continue
        log.info(f"agent {runner} ({models[runner]}): with and without {skill_name}")
        context.outcome = None
        state = await skill_bench(agent, skill_name, skill_path, tasks_dir, return_state=True)
        outcome = context.outcome_of(state)
        written = agent_report(root, runner)
        if written is not None:  # an agent with too few completed tasks still wrote its report
            reports[runner] = load_report(written, AgenticReport)
            ran, spent = sessions_run(reports[runner])
            used = (used[0] + ran, used[1] + spent)
        if isinstance(outcome, BaseException) or not state.is_completed():
            failures[runner] = str(outcome) if isinstance(outcome, BaseException) else str(state.message)
    context.outcome = None
    if not reports:
        reason = "; ".join(f"{r}: {why}" for r, why in failures.items())
        return Failed(message=f"no agent wrote a report: {reason}")
    skill = Skill(skill_name, Path(skill_path))
    findings = skill_findings(skill)
    matrix = with_findings(build_matrix(runners, models, reports, failures, config.seed), findings)
    report = matrix_report(
        report_id,
        runners,
        models,
        reports,
        failures,
        matrix,
        results_dir=str(root),
        flow_run=flow_run_page(flow_run.id),
    )
    report.portability = certificate(findings, measured_in(matrix), listed(skill), config.require_portable)
    report_path = publish_matrix(config, report, root)
    result = context.keep(RunOutcome(id=report.id, report_path=str(report_path), results_dir=str(root)))
    return Completed(message="; ".join(a.line for a in matrix.agents), data=result)
