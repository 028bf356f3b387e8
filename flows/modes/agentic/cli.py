"""``skill run`` and ``skill generate-tasks``: agentic mode from the command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from executors.errors import InputError, warn
from flows.cli.codes import EXIT_FAIL, EXIT_OK
from flows.cli.command import Command
from flows.cli.flags import add_model_flags
from flows.cli.run import FlowCall, run_flow


def skill_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    from flows.inputs.skill_config import SkillBenchConfig, find_skill, load_config

    cwd = Path.cwd()
    overrides = {k: v for k, v in vars(args).items() if k in SkillBenchConfig.model_fields and k != "config"}
    config = load_config(args.config, cwd, overrides)
    suite = config.suite
    if suite:  # a plugin eval suite: its tasks, and its skill unless --skill names one
        from flows.inputs.suites.plugin_eval import suite_skill

        config = config.model_copy(update={"tasks": config.tasks or suite})
        if not config.skill:
            config = config.model_copy(update={"skill": str(suite_skill(Path(suite)))})
    return config, find_skill(config.skill, cwd)


def runners_of(config: Any) -> list[str]:
    """The agent CLIs --runner names (several: a cross-agent run), their endpoints and models checked."""
    from flows.inputs.skill_config import agent_list, agent_models, endpoints

    runners = agent_list(config.runner)
    if len(runners) > 1 and config.json_file:
        raise InputError("--json: `claude plugin eval --json` describes one agent's run; name one --runner")
    endpoints(config.base_url, runners)
    agent_models(config.runner_model, runners)
    return runners


def checked_run_inputs(args: argparse.Namespace) -> tuple[Any, Any, list[Any]]:
    """The run's config, skill and tasks, every input checked (exit 2) before any session starts."""
    from executors.registry import usable_executor
    from executors.sandbox import checked_isolation
    from flows.inputs.ablation import plan_skill_ablations
    from flows.inputs.options import fleet_sandbox
    from flows.inputs.skill_config import (
        agent_models,
        check_artifact,
        endpoints,
        load_tasks,
        select_tasks,
        suite_warnings,
    )
    from flows.modes.agentic.portability import portability_warnings

    config, skill = skill_inputs(args)
    runners = runners_of(config)
    if len(runners) == 1:  # " codex", `--base-url codex=URL`: the one agent's own values
        (runner,) = runners
        update = {"runner": runner, "runner_model": agent_models(config.runner_model, runners)[runner]}
        config = config.model_copy(update=update | {"base_url": endpoints(config.base_url, runners)[runner]})
    # exit 2 before the tasks are read: a plugin a CLI cannot load, a clashing name, a hostile folder
    versions = {runner: check_artifact(skill, runner) for runner in runners}
    if not config.tasks:
        raise InputError(
            "--tasks: name the task-set folder (a fixed suite; `skill generate-tasks` writes one)"
        )
    tasks, _ = load_tasks(Path(config.tasks), config.mocks)  # every malformed file said before any session
    tasks = select_tasks(tasks, config)
    for runner, version in versions.items():
        check_runner(runner, version, tasks)
    # said before the run (and kept in the report): such a case may not score as its author meant
    for warning in suite_warnings(tasks, config, skill.name, skill.plugin is not None):
        warn(warning)
    for warning in portability_warnings(skill, runners, config.require_portable):
        warn(warning)
    plan_skill_ablations(skill.path, config.ablate, config.ablate_sections)  # a SKILL.md without headings
    checked_isolation(config.os_sandbox)  # exit 2 before any session when bubblewrap cannot run
    fleet_sandbox(config.fleet_pool, config.os_sandbox, config.allow_network)
    # the judge too, before any session is paid for (its key, its package)
    usable_executor(config.judge_executor, "--judge-executor", agentic=False)
    return config, skill, tasks


def check_runner(runner: str, version: str | None, tasks: list[Any]) -> None:
    """Whether ``runner`` (``version`` installed) can run these cases (exit 2 otherwise)."""
    from executors.agent import agent_cli
    from executors.registry import AGENT_CLIS, usable_executor

    if "plugin-eval" not in agent_cli(runner).features and any(t.plugin_case for t in tasks):
        able = ", ".join(n for n in AGENT_CLIS if "plugin-eval" in agent_cli(n).features)
        raise InputError(
            f"--runner: a plugin eval suite runs on {able} (its graders read that CLI's stream), not {runner}"
        )
    resumed = [t for t in tasks if t.plugin_case is not None and t.plugin_case.history_file]
    if resumed and (problem := agent_cli(runner).feature_problem("resume-file", version)):
        raise InputError(f"{resumed[0].case_dir}: {problem}")
    if resumed:
        print(
            f"skillab: {', '.join(t.task_id for t in resumed)}: continue a recorded session (history_file) "
            "and run with the plugin only, as under claude plugin eval: its history carries the plugin "
            "into any arm, so these cases are left out of the comparison",
            file=sys.stderr,
        )
    usable_executor(runner, "--runner", agentic=True)


def print_skill_plan(config: Any, skill: Any, tasks: list[Any]) -> tuple[int, float, set[str]]:
    """--dry-run: the sessions each case runs, on which model, with how many turns, and an upper
    bound of tokens and dollars (every session using every turn), judge calls aside. Returns the
    sessions, that bound, and the models with no price."""
    from executors.agent import agent_cli
    from executors.pricing import PriceTable
    from flows.modes.agentic.plan import runs_of, single_arm
    from flows.modes.agentic.portability import forecast_lines

    case_runs = "runs" not in config.model_fields_set
    table = PriceTable()
    total_sessions, total_cost, unpriced = 0, 0.0, set()
    print(
        f"skill run plan: {skill.name} on {config.runner} ({len(tasks)} case{'' if len(tasks) == 1 else 's'})"
    )
    print(f"  {'case':<40} {'model':<18} {'turns':>5} {'sessions':>8} {'tokens (max)':>13} {'$ (max)':>9}")
    for t in tasks:
        case = t.plugin_case
        model = (case.model if case is not None and case.model else None) or config.runner_model
        turns = case.max_turns if case is not None else config.max_turns
        sessions = runs_of(t, config.runs, case_runs) * (1 if single_arm(t) else 2)
        one_in, one_out = agent_cli(config.runner).session_tokens(turns)
        tokens_in, tokens_out = sessions * one_in, sessions * one_out
        price = table.lookup(agent_cli(config.runner).priced_as(model))
        cost = None if price is None else (tokens_in * price[0] + tokens_out * price[1]) / 1e6
        if cost is None:
            unpriced.add(model)
        total_sessions += sessions
        total_cost += cost or 0.0
        shown = "—" if cost is None else f"{cost:.2f}"
        print(
            f"  {t.task_id[:40]:<40} {model[:18]:<18} {turns:>5} {sessions:>8} {tokens_in + tokens_out:>13,} {shown:>9}"
        )
    caps = [f"--max-calls {config.max_calls}"] if config.max_calls else []
    caps += [f"--budget-usd {config.budget_usd:g}"] if config.budget_usd else []
    print(
        f"  = {total_sessions} sessions; at most ${total_cost:.2f}"
        + (f" for the priced models (no price for {', '.join(sorted(unpriced))})" if unpriced else "")
        + " if every session used every turn; the judge's calls come on top"
        + (f"; capped by {' and '.join(caps)}" if caps else "")
    )
    for line in forecast_lines(skill, [config.runner]):
        print(f"  {line}")
    if not agent_cli(config.runner).turn_limit:
        print(
            f"  {config.runner} has no hard turn limit: the bound assumes --max-turns {config.max_turns}; "
            f"--timeout {config.timeout:g}s bounds each session"
        )
    return total_sessions, total_cost, unpriced


def cmd_skill_run(args: argparse.Namespace, command: Command) -> int:
    config, skill, tasks = checked_run_inputs(args)
    runners = runners_of(config)
    if len(runners) > 1:
        return matrix_run(config, skill, tasks, runners, command)
    if config.dry_run:
        print_skill_plan(config, skill, tasks)
        return EXIT_OK

    def load() -> FlowCall:
        from flows.modes.agentic.flow import skill_bench

        flow = skill_bench.with_options(
            flow_run_name=f"skill {skill.name} · {config.runner}:{config.runner_model}"
        )
        tasks_dir = str(Path(config.tasks).resolve())
        return lambda: flow(config, skill.name, str(skill.path), tasks_dir, return_state=True)

    def ending(outcome: Any, state: Any) -> int:
        from flows.modes.agentic.flow import InsufficientData

        if isinstance(outcome, InsufficientData):
            print(f"skillab skill: {outcome}", file=sys.stderr)
            return EXIT_FAIL
        if isinstance(outcome, BaseException):
            raise outcome
        return summarized(config, outcome)

    return run_flow(command, load, ending)


def matrix_run(config: Any, skill: Any, tasks: list[Any], runners: list[str], command: Command) -> int:
    """--runner A,B,...: the suite on each agent, one report with the cross-agent matrix; the gates
    hold for every agent."""
    from flows.inputs.skill_config import agent_models, endpoints

    models = agent_models(config.runner_model, runners)
    urls = endpoints(config.base_url, runners)
    if config.dry_run:
        sessions, cost, unpriced = 0, 0.0, set[str]()
        for runner in runners:
            one = config.model_copy(update={"runner": runner, "runner_model": models[runner]})
            n, dollars, missing = print_skill_plan(one, skill, tasks)
            sessions, cost, unpriced = sessions + n, cost + dollars, unpriced | missing
        print(
            f"all {len(runners)} agents: {sessions} sessions; at most ${cost:.2f}"
            + (f" for the priced models (no price for {', '.join(sorted(unpriced))})" if unpriced else "")
            + "; the judge's calls come on top"
        )
        if config.max_calls or config.budget_usd:
            print("--max-calls and --budget-usd hold for all the agents together, in --runner order")
        return EXIT_OK

    def load() -> FlowCall:
        from flows.modes.agentic.matrix import agent_matrix

        flow = agent_matrix.with_options(flow_run_name=f"skill {skill.name} · agents {','.join(runners)}")
        tasks_dir = str(Path(config.tasks).resolve())
        return lambda: flow(
            config, runners, models, urls, skill.name, str(skill.path), tasks_dir, return_state=True
        )

    def ending(outcome: Any, state: Any) -> int:
        if isinstance(outcome, BaseException):
            raise outcome
        if getattr(outcome, "report_path", None) is None:  # no RunOutcome: the matrix ended early
            print(f"skillab skill: {state.message}", file=sys.stderr)
            return EXIT_FAIL
        return matrix_summarized(config, outcome)

    return run_flow(command, load, ending)


def matrix_summarized(config: Any, outcome: Any) -> int:
    """The matrix's lines, the report's path, then the gates, applied to each agent's own report."""
    from flows.modes.agentic.matrix_report import agent_report
    from flows.modes.agentic.model import AgenticReport
    from flows.modes.agentic.portability import portability_lines
    from flows.report.console import economy_lines
    from flows.report.diagnosis_parts import AgentMatrix
    from flows.report.schema import load_report

    root = Path(outcome.results_dir)
    report = load_report(Path(outcome.report_path), AgenticReport)
    matrix = report.matrix or AgentMatrix(reference="", agents=[], interactions=[])
    pooled = [matrix.pooled.line] if matrix.pooled else []
    for line in [*(a.line for a in matrix.agents), *(i.line for i in matrix.interactions), *pooled]:
        print(line)
    for line in portability_lines(report):
        print(line)
    for line in economy_lines(report):  # sessions the shared caps kept back, every agent's
        print(line)
    print(f"report: {root / 'report.md'}")
    failures = []
    for agent in matrix.agents:
        written = agent_report(root, agent.runner)
        if written is None:
            failures.append(f"{agent.runner}: {agent.line}")
            continue
        failures += [
            f"{agent.runner}: {line}" for line in gate_lines(config, load_report(written), own=False)
        ]
    failures += portability_failures(config, report)
    for line in failures:
        print(f"skillab skill: FAIL {line}", file=sys.stderr)
    return EXIT_FAIL if failures else EXIT_OK


def summarized(config: Any, outcome: Any) -> int:
    """The verdict and ablation lines, the report's path, then the CI gate's exit code."""
    from flows.modes.agentic.model import AgenticReport
    from flows.modes.agentic.portability import portability_lines
    from flows.report.console import economy_lines
    from flows.report.logtext import headline, validity_lines
    from flows.report.schema import load_report

    report = load_report(Path(outcome.report_path), AgenticReport)
    for comp in report.comparisons:
        v = comp.verdict
        print(f"with-skill vs baseline: {headline(report, v)} — {v.reason}")
    for section in report.ablation.sections if report.ablation else []:
        print(section.line)
    for line in [*economy_lines(report), *validity_lines(report), *portability_lines(report)]:
        print(line)  # economy: sessions a budget kept back
    print(f"report: {Path(outcome.results_dir) / 'report.md'}")
    failures = gate_lines(config, report)
    for line in failures:
        print(f"skillab skill: FAIL {line}", file=sys.stderr)
    return EXIT_FAIL if failures else EXIT_OK


def gate_lines(config: Any, report: Any, own: bool = True) -> list[str]:
    """What fails the CI gates (--threshold, --require, --require-valid, --case-threshold) in one agent's
    report, and --require-portable in a report of its own run (``own``; a matrix's agent reports are
    gated for portability once, on the matrix's)."""
    from flows.report.gates import gate_failures
    from tasks.schema import Arm

    failures = gate_failures(
        report,
        threshold=config.threshold,
        require=config.require,
        variants=[Arm.WITH_SKILL],
        score_name="average score",
        require_valid=config.require_valid,
    )
    if config.case_threshold is not None:
        failures += case_threshold_failures(report, config.case_threshold)
    return failures + (portability_failures(config, report) if own else [])


def portability_failures(config: Any, report: Any) -> list[str]:
    """--require-portable: each agent it names whose certificate line is not "portable"."""
    lines = {a.agent: a for a in (report.portability.agents if report.portability else [])}
    out = []
    for agent in config.require_portable:
        line = lines.get(agent)
        if line is None or line.status != "portable":
            out.append(f"portability: {line.line if line else f'{agent}: not measured'}")
    return out


def case_threshold_failures(report: Any, threshold: float) -> list[str]:
    """``claude plugin eval --threshold``: every case's with-skill score, 0..1 (a plugin case's
    grader score, else the weighted total / 100), at least ``threshold``."""
    from tasks.schema import Arm

    out = []
    for case in report.results:
        entry = case.variants.get(Arm.WITH_SKILL)
        runs = (entry.runs or [entry]) if entry is not None else []
        scores = [
            float(part.score or 0.0) if (part := r.plugin_eval()) else (r.composite_score or 0.0) / 100
            for r in runs
        ]
        score = sum(scores) / len(scores) if scores else 0.0
        if score < threshold:
            out.append(
                f"case {case.name or case.sample_id}: score {score:.2f} < --case-threshold {threshold:g}"
            )
    return out


def cmd_skill_generate(args: argparse.Namespace, command: Command) -> int:
    from flows.engine.task_generation import GenerationError, generate_tasks

    config, skill = skill_inputs(args)
    try:
        written = asyncio.run(
            generate_tasks(config, skill, Path(args.out), args.executor, args.model or config.judge_model)
        )
    except GenerationError as exc:
        print(f"skillab: {exc}", file=sys.stderr)
        return EXIT_FAIL
    for path in written:
        print(f"wrote {path}")
    print(
        f"Review the {len(written)} tasks, then run: python -m flows.bench skill run --skill {skill.name} --tasks {args.out}"
    )
    return EXIT_OK


#: SkillBenchConfig fields that are not flags: a mapping has no flag form (set it in config.yml).
SKILL_NOT_FLAGS = ("difficulties",)


def add_skill_options(p: argparse.ArgumentParser) -> None:
    """Every key of the seed's config.yml is also a flag (flags win over the file)."""
    from flows.inputs.skill_config import SkillBenchConfig

    p.add_argument(
        "--config",
        default=None,
        help="config.yml (default: .claude/skills/skill-benchmark/config.yml, ~/...)",
    )
    names = tuple(n for n in SkillBenchConfig.model_fields if n not in SKILL_NOT_FLAGS)
    add_model_flags(p, SkillBenchConfig, {"": names})


def cmd_skill_validate(args: argparse.Namespace, command: Command) -> int:
    """Every check of every task with a reference solution (``references/<task id>/`` beside the task
    files; a plugin eval case's ``reference/``), tried on a copy of it and on the untouched start, as
    a session's checks run (confined): no agent, no model. Exit 1 when a check is broken."""
    from executors.sandbox import checked_isolation
    from flows.cli.validate import print_findings
    from flows.inputs.skill_config import load_tasks
    from flows.modes.agentic.plan import check_folders
    from graders.task_validation import reference_of, validate_tasks

    folder = Path(args.tasks)
    tasks, _ = load_tasks(folder)
    isolation = checked_isolation(not args.no_os_sandbox)
    bare = [t.task_id for t in tasks if reference_of(t, folder) is None]
    return print_findings(
        validate_tasks(tasks, folder, isolation, check_folders),
        len(tasks) - len(bare),
        "reference solution",
        bare,
    )


def add_commands(skill_sub: Any) -> None:
    """``skill run``, ``skill validate`` and ``skill generate-tasks``: every key of the seed's config.yml
    is also a flag of ``run``."""
    srun = skill_sub.add_parser(
        "run", help="run the suite with and without the skill, grade, compare, report"
    )
    add_skill_options(srun)
    srun.set_defaults(handler=cmd_skill_run)
    sval = skill_sub.add_parser(
        "validate",
        help="try every check on the tasks' reference solutions and untouched starts (no agent, no model); "
        "exit 1 when one is broken",
    )
    sval.add_argument(
        "--tasks", required=True, help="the task set (a folder of task files, or a plugin with evals/)"
    )
    sval.add_argument(
        "--no-os-sandbox",
        action="store_true",
        help="run the checks without bubblewrap (as `skill run --no-os-sandbox`)",
    )
    sval.set_defaults(handler=cmd_skill_validate)
    gen = skill_sub.add_parser("generate-tasks", help="write a task suite with an LLM, for you to review")
    add_skill_options(gen)
    gen.add_argument("--out", required=True, help="folder to write the suite into (must not hold tasks yet)")
    gen.add_argument(
        "--executor", default="anthropic", help="executor of the writing model (default: anthropic)"
    )
    gen.add_argument("--model", default=None, help="writing model (default: the judge model)")
    gen.set_defaults(handler=cmd_skill_generate)
