"""``skill run`` and ``skill generate-tasks``: agentic mode from the command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from executors.errors import InputError
from flows.cli.api_watch import finish_once, watch_api
from flows.cli.codes import EXIT_FAIL, EXIT_OK
from flows.cli.prefect_env import prepare_prefect


def skill_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    from flows.inputs.skill_config import SkillBenchConfig, find_skill, load_config

    cwd = Path.cwd()
    overrides = {k: v for k, v in vars(args).items() if k in SkillBenchConfig.model_fields and k != "config"}
    config = load_config(args.config, cwd, overrides)
    suite = config.suite
    if suite:  # a plugin eval suite: its tasks, and its skill unless --skill names one
        from flows.inputs.plugin_suite import suite_skill

        config = config.model_copy(update={"tasks": config.tasks or suite})
        if not config.skill:
            config = config.model_copy(update={"skill": str(suite_skill(Path(suite)))})
    return config, find_skill(config.skill, cwd)


def checked_run_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    """The run's config and skill, every input checked (exit 2) before any session starts."""
    from executors.registry import usable_executor
    from executors.sandbox import checked_isolation
    from executors.versions import feature_problem
    from flows.inputs.ablation import plan_skill_ablations
    from flows.inputs.skill_config import check_artifact, load_tasks

    config, skill = skill_inputs(args)
    version = check_artifact(skill, config.runner)  # exit 2: a plugin this CLI cannot load, a clashing name
    if not config.tasks:
        raise InputError(
            "--tasks: name the task-set folder (a fixed suite; `skill generate-tasks` writes one)"
        )
    tasks, _ = load_tasks(Path(config.tasks))  # every malformed file reported before any session starts
    if config.runner != "claude" and any(t.plugin_case for t in tasks):
        raise InputError(
            f"--runner: a plugin eval suite runs on claude (its graders read Claude Code's stream), not {config.runner}"
        )
    resumed = [t for t in tasks if t.plugin_case is not None and t.plugin_case.history_file]
    if resumed and (problem := feature_problem(config.runner, "resume-file", version)):
        raise InputError(f"{resumed[0].case_dir}: {problem}")
    if resumed:
        print(
            f"skillab: {', '.join(t.task_id for t in resumed)}: continue a recorded session (history_file) "
            "and run with the plugin only, as under claude plugin eval: its history carries the plugin "
            "into any arm, so these cases are left out of the comparison",
            file=sys.stderr,
        )
    written_for = sorted({t.category for t in tasks if "skill-creator" in t.tags})
    if written_for and skill.plugin is None and skill.name not in written_for:
        print(
            f"skillab: warning: {config.tasks}: skill_name: these evals were written for "
            f"{written_for[0]!r}, not for the skill under test {skill.name!r} (check --skill)",
            file=sys.stderr,
        )
    for t in tasks:  # said before the run: such a case may not score as `claude plugin eval` would
        for warning in t.plugin_case.warnings if t.plugin_case is not None else ():
            print(f"skillab: warning: {t.case_dir}: {warning}", file=sys.stderr)
        if t.plugin_case is not None and t.plugin_case.unsupported:
            print(
                f"skillab: warning: {t.case_dir}: {', '.join(t.plugin_case.unsupported)}: not supported "
                "here, ignored (the case may score differently than under claude plugin eval)",
                file=sys.stderr,
            )
    plan_skill_ablations(skill.path, config.ablate, config.ablate_sections)  # a SKILL.md without headings
    usable_executor(config.runner, "--runner", agentic=True)
    checked_isolation(config.os_sandbox)  # exit 2 before any session when bubblewrap cannot run
    return config, skill


def cmd_skill_run(args: argparse.Namespace) -> int:
    config, skill = checked_run_inputs(args)
    prefect_ready = prepare_prefect()
    from flows.skill_bench import InsufficientData, skill_bench

    prefect_ready()

    def ending(outcome: Any, state: Any) -> int:
        if isinstance(outcome, InsufficientData):
            print(f"skillab skill: {outcome}", file=sys.stderr)
            return EXIT_FAIL
        if isinstance(outcome, BaseException):
            raise outcome
        return summarized(config, outcome)

    watch_api(ending)
    flow = skill_bench.with_options(
        flow_run_name=f"skill {skill.name} · {config.runner}:{config.runner_model}"
    )
    state: Any = asyncio.run(
        flow(
            config,
            skill.name,
            str(skill.path),
            str(Path(config.tasks).resolve()),  # type: ignore[arg-type]
            return_state=True,
        )
    )
    return finish_once(state, ending)


def summarized(config: Any, outcome: dict[str, str]) -> int:
    """The verdict and ablation lines, the report's path, then the CI gate's exit code."""
    from flows.report.gates import gate_failures
    from flows.report.schema import load_report
    from tasks.schema import Arm

    report = load_report(Path(outcome["report_path"]))
    for comp in report.comparisons:
        v = comp.verdict
        print(f"with-skill vs baseline: {v.headline()} — {v.reason}")
    for section in report.ablation.sections if report.ablation else []:
        print(section.line)
    print(f"report: {Path(outcome['results_dir']) / 'report.md'}")
    failures = gate_failures(
        report,
        threshold=config.threshold,
        require=config.require,
        variants=[Arm.WITH_SKILL],
        score_name="average score",
    )
    for line in failures:
        print(f"skillab skill: FAIL {line}", file=sys.stderr)
    return EXIT_FAIL if failures else EXIT_OK


def cmd_skill_generate(args: argparse.Namespace) -> int:
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
