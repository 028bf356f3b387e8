"""``run`` and ``ci``: sample mode from the command line, and the CI gate.

The report's modules are imported after the run: a command reaches its first model call sooner."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from executors.errors import InputError
from flows.cli.codes import EXIT_FAIL, EXIT_OK, run_signals
from flows.cli.command import Command
from flows.cli.flags import add_model_flags
from flows.cli.prefect_env import launch_server
from flows.cli.run import FlowCall, run_flow
from flows.inputs.files import validation_lines
from flows.inputs.options import BenchOptions
from flows.modes.sample.prepare import Prepared, prepare
from tasks.context import handover_key


def options_from(args: argparse.Namespace, cwd: Path) -> BenchOptions:
    from flows.inputs.samples import CONFIG_FILE, load_config
    from flows.inputs.suites.omk import project_options

    given = {k: v for k, v in vars(args).items() if k in BenchOptions.model_fields}
    config_path = Path(getattr(args, "config", "") or cwd / CONFIG_FILE)
    if getattr(args, "config", None) and not config_path.is_file():
        raise InputError(f"{config_path}: file not found (--config)")
    config = load_config(config_path) if config_path.is_file() else {}
    project = given.get("project") or config.get("project")
    if project:  # an oh-my-knowledge eval.yaml, by --config or --project
        config = project_options(cwd / project, given)
    try:
        return BenchOptions(**{**config, **given})
    except ValidationError as exc:
        flag = lambda loc: "--" + str(loc[0] if loc else "options").replace("_", "-")  # noqa: E731
        raise InputError(validation_lines(exc, flag)) from None


def execute(args: argparse.Namespace, command: Command, *, ci: bool) -> int:
    """Validate, then print the plan, or run the flow, print the summary, then gate: ``run`` fails on a
    regression against the suite's previous run (or nothing measured), ``ci`` on the thresholds asked for."""
    from flows.modes.sample.headstart import head_start

    cwd = Path.cwd()
    options = options_from(args, cwd)
    prepared = prepare(options, cwd)
    for notice in prepared.notices:
        print(f"skillab: {notice}", file=sys.stderr)
    if options.dry_run:
        print_plan(prepared)
        broken = [f for f in prepared.graders if f.status == "broken"]
        if options.require_valid and broken:  # the certificate would FAIL whatever the calls say
            print(f"skillab: FAIL --require-valid: {len(broken)} broken grader(s)", file=sys.stderr)
            return EXIT_FAIL
        return EXIT_OK

    def ending(outcome: Any, state: Any) -> int:
        return summary_and_gate(options, report_path(outcome), state, ci=ci)

    # a bad setting stops the command before any call; a first run's server starts now
    launch_server(started=command.servers_started)
    with run_signals(), head_start(prepared, command.run):
        load = sample_flow(command, options, cwd, prepared, show_progress=not args.quiet)
        return run_flow(command, load, ending, meanwhile=import_flow_modules)


def report_path(outcome: Any) -> Path:
    """The report a flow run's outcome names (a run that failed before writing one raises)."""
    from flows.modes.sample.flow import FailedBench

    if isinstance(outcome, FailedBench):
        return Path(outcome.report_path)
    if isinstance(outcome, BaseException):
        raise outcome
    return Path(outcome.report_path)


def sample_flow(
    command: Command, options: BenchOptions, cwd: Path, prepared: Prepared, *, show_progress: bool
) -> Callable[[], FlowCall]:
    """The sample-bench flow run, for the run protocol."""

    def load() -> FlowCall:
        from flows.modes.sample.flow import sample_bench

        names = ",".join(v.name for v in prepared.variants)
        flow = sample_bench.with_options(
            flow_run_name=f"{options.suite or prepared.samples_path.name} · {names}"
        )

        command.run.hand_over(handover_key(options, cwd), prepared)
        return lambda: flow(options, str(cwd), show_progress, return_state=True)

    return load


def import_flow_modules() -> None:
    """While a first run's server starts, this core is idle: what the flow imports later, now."""
    from flows.engine.prefetch import FLOW_ENGINE, import_all
    from flows.modes.sample.flow import AFTER_CALLS

    import_all(FLOW_ENGINE + AFTER_CALLS)


def print_ui_link(state: Any) -> None:
    """Where the run's log and artifacts are, when a Prefect server outlives this command (the
    terminal shows Prefect's warnings only, so its own "View at" line is not printed)."""
    from prefect.settings import PREFECT_API_URL

    from flows.engine.runlog import flow_run_page

    if PREFECT_API_URL.value() and (page := flow_run_page(state.state_details.flow_run_id)):
        print(f"Prefect UI (log and artifacts): {page}")


def print_plan(prepared: Any) -> None:
    from flows.modes.sample.estimate import estimate

    o = prepared.options
    e = estimate(prepared)
    units, tokens_in, tokens_out, cost, judge_calls = (
        e.calls,
        e.tokens_in,
        e.tokens_out,
        e.cost,
        e.judge_calls,
    )
    cache = "off" if prepared.cache_dir is None else str(prepared.cache_dir)
    print(
        f"plan: {len(prepared.samples)} samples x {len(prepared.variants)} variants "
        f"({', '.join(v.name for v in prepared.variants)}) x {o.repeat} run(s) = {units} model calls"
    )
    print(f"model: {prepared.target.executor.describe(prepared.target.model)}; concurrency {o.concurrency}")
    print(
        f"judge: {', '.join(f'{j.executor.name}:{j.model}' for j in prepared.judges) or 'none'}; "
        f"up to {judge_calls} judge calls"
    )
    print(f"estimated tokens: ~{tokens_in} in, <= {tokens_out} out; estimated cost (upper bound): {cost}")
    if prepared.gold is not None:
        print(
            f"judge gold: {len(prepared.gold.items)} scored outputs judged before the run ({prepared.gold.path})"
        )
    print(f"cache: {cache} (finished calls are never repeated)")
    for v in prepared.variants:
        print(f"  {v.name}: {v.path or 'no artifact'}" + (f" sha256 {v.sha256[:12]}" if v.sha256 else ""))


def cmd_run(args: argparse.Namespace, command: Command) -> int:
    return execute(args, command, ci=False)


def cmd_ci(args: argparse.Namespace, command: Command) -> int:
    return execute(args, command, ci=True)


def summary_and_gate(options: BenchOptions, path: Path, state: Any, *, ci: bool) -> int:
    """The summary (with the UI link when the flow run's ``state`` is known), then the gate's exit code.
    The report's modules are imported only now."""
    from flows.report.console import print_summary
    from flows.report.gates import gate_failures, regression_failures, unmeasured
    from flows.report.schema import load_report
    from flows.report.validity import require_valid_failures

    report = load_report(path)
    print_summary(report, path)
    if state is not None:
        print_ui_link(state)
    if not ci:
        marked = " (the flow run is marked Failed)" if state is not None else ""  # else the API was lost
        for line in (failures := unmeasured(report)):
            print(f"skillab: FAIL {line}{marked}", file=sys.stderr)
        for line in (invalid := require_valid_failures(report) if options.require_valid else []):
            print(f"skillab: FAIL {line}{marked}", file=sys.stderr)
        for line in (regressions := [] if failures else regression_failures(report)):
            print(f"skillab: REGRESSION {line}{marked}", file=sys.stderr)
        return EXIT_FAIL if failures or invalid or regressions else EXIT_OK
    failures = gate_failures(
        report, threshold=options.threshold, require=options.require, require_valid=options.require_valid
    )
    for line in failures:
        print(f"skillab ci: FAIL {line}", file=sys.stderr)
    if not failures:
        print("skillab ci: PASS", file=sys.stderr)
    return EXIT_FAIL if failures else EXIT_OK


#: BenchOptions fields by flag group; "ci" only on the ci command. Every field has exactly one flag.
RUN_GROUPS: dict[str, tuple[str, ...]] = {
    "inputs": (
        "samples",
        "skill_dir",
        "variants",
        "control",
        "treatment",
        "project",
        "ablate",
        "ablate_sections",
    ),
    "model": ("executor", "model", "base_url", "temperature", "max_tokens", "seed", "prices"),
    "judge": (
        "judge",
        "judge_executor",
        "judge_model",
        "judge_models",
        "judge_repeat",
        "pairwise",
        "judge_gold",
        "min_judge_alpha",
        "diagnose",
    ),
    "execution": (
        "concurrency",
        "repeat",
        "timeout",
        "retries",
        "retry_backoff",
        "cache",
        "cache_dir",
        "budget_usd",
        "max_calls",
        "shards",
        "shard_deployment",
        "dry_run",
        "os_sandbox",
        "allow_network",
        "prompt_cache",
        "head_start",
        "batch",
        "batch_wait",
        "batch_poll",
        "sequential",
        "wave",
    ),
    "report": (
        "output_dir",
        "blind",
        "margin",
        "min_effect",
        "max_error_rate",
        "require_valid",
        "suite",
        "history_url",
        "same_night_control",
        "control_every",
        "junit",
        "github_summary",
    ),
}
CI_GROUPS: dict[str, tuple[str, ...]] = {"ci gate": ("threshold", "require")}


def add_config_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="options file (default: ./skillab.yaml if present), or an oh-my-knowledge eval.yaml",
    )


def add_run_options(p: argparse.ArgumentParser) -> set[str]:
    add_config_flag(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return add_model_flags(p, BenchOptions, RUN_GROUPS)


def cmd_validate(args: argparse.Namespace, command: Command) -> int:
    """Every grader of every case with a reference answer, tried on it and on its mutants: no model
    call. Exit 1 when a grader is broken."""
    from flows.cli.validate import print_findings
    from flows.inputs.samples import find_samples, load_samples
    from graders.registry import is_judged
    from graders.validation import validate_samples

    cwd = Path.cwd()
    options = options_from(args, cwd)  # the samples file `run` would read: --samples, skillab.yaml, a project
    samples = load_samples(find_samples(options.samples and str(cwd / options.samples), cwd))
    known = [s for s in samples if s.reference_output is not None]
    judged = sum(1 for s in known for a in s.assertions if is_judged(a))
    return print_findings(
        validate_samples(samples),
        len(known),
        "reference answer",
        [s.sample_id for s in samples if s.reference_output is None and s.assertions],
        f"{judged} judged criteria need a model call and were not tried" if judged else "",
    )


def add_validate_command(validate: argparse.ArgumentParser) -> None:
    """The inputs that name the samples file, as ``run`` reads them (from the current folder)."""
    add_config_flag(validate)
    add_model_flags(validate, BenchOptions, {"inputs": ("samples", "project")})
    validate.set_defaults(handler=cmd_validate)


def add_commands(sub: Any, words: Mapping[str, str]) -> None:
    """The ``run``, ``ci`` and ``validate`` commands (``words``: their help lines), their flags one per
    option, grouped."""
    run = sub.add_parser(
        "run",
        help=words["run"],
        description="Run every sample x variant x run, grade, compare, write the report.",
    )
    ci = sub.add_parser("ci", help=words["ci"])
    validate = sub.add_parser("validate", help=words["validate"])
    add_validate_command(validate)
    add_run_options(run)
    run.set_defaults(handler=cmd_run)
    covered = add_run_options(ci) | add_model_flags(ci, BenchOptions, CI_GROUPS)
    missing = set(BenchOptions.model_fields) - covered
    if missing:  # a new option without a flag is a bug, caught by every test that builds the parser
        raise RuntimeError(f"options without a flag: {sorted(missing)}")
    ci.set_defaults(handler=cmd_ci)
