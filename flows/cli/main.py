"""The command line: ``python -m flows.bench`` (installed as ``skillab``).

run    benchmark artifact variants on samples (sample mode)
ci     the same, exiting 1 when a variant is under --threshold or the verdict gate fails
init   scaffold a working example project
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from executors.errors import InputError
from flows.cli.flags import add_model_flags
from flows.inputs.files import validation_lines
from flows.inputs.options import BenchOptions
from flows.inputs.skill_config import SkillBenchConfig
from flows.report.schema import Report
from tasks.schema import VerdictLabel

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

# Quiet, robust defaults for Prefect (measured in ../shared/PREFECT.md); the user's environment wins.
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
    "PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL": "WARNING",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "50",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "500",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_READ_BATCH_SIZE": "50",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
}


def configure_prefect() -> None:
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the house format (one line, exit 2)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"skillab: error: {message} (see --help)\n")


#: BenchOptions fields by flag group; "ci" only on the ci command. Every field has exactly one flag.
RUN_GROUPS: dict[str, tuple[str, ...]] = {
    "inputs": ("samples", "skill_dir", "variants", "control"),
    "model": ("executor", "model", "base_url", "temperature", "max_tokens", "seed", "prices"),
    "judge": ("judge", "judge_executor", "judge_model", "judge_models", "judge_repeat", "pairwise"),
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
    ),
    "report": (
        "output_dir",
        "blind",
        "margin",
        "min_effect",
        "max_error_rate",
        "suite",
        "junit",
        "github_summary",
    ),
}
CI_GROUPS: dict[str, tuple[str, ...]] = {"ci gate": ("threshold", "require")}
#: SkillBenchConfig fields that are not flags: a mapping has no flag form (set it in config.yml).
SKILL_NOT_FLAGS = ("difficulties",)


def add_run_options(p: argparse.ArgumentParser) -> set[str]:
    p.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="options file (default: ./skillab.yaml if present)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return add_model_flags(p, BenchOptions, RUN_GROUPS)


def add_skill_options(p: argparse.ArgumentParser) -> None:
    """Every key of the seed's config.yml is also a flag (flags win over the file)."""
    p.add_argument(
        "--config",
        default=None,
        help="config.yml (default: .claude/skills/skill-benchmark/config.yml, ~/...)",
    )
    names = tuple(n for n in SkillBenchConfig.model_fields if n not in SKILL_NOT_FLAGS)
    add_model_flags(p, SkillBenchConfig, {"": names})


def build_parser() -> Parser:
    parser = Parser(
        prog="skillab",
        description="Measure whether a knowledge artifact (skill, system prompt, rule set) makes a model do "
        "better: fixed model, fixed cases, only the artifact changes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser(
        "run",
        help="benchmark artifact variants on a samples file",
        description="Run every sample x variant x run, grade, compare, write the report.",
    )
    add_run_options(run)
    run.set_defaults(handler=cmd_run)
    ci = sub.add_parser("ci", help="run, then exit 1 when a variant is below --threshold or the gate fails")
    covered = add_run_options(ci) | add_model_flags(ci, BenchOptions, CI_GROUPS)
    missing = set(BenchOptions.model_fields) - covered
    if missing:  # a new option without a flag is a bug, caught by every test that builds the parser
        raise RuntimeError(f"options without a flag: {sorted(missing)}")
    ci.set_defaults(handler=cmd_ci)
    skill = sub.add_parser("skill", help="agentic mode: benchmark a Claude Code skill with agent CLIs")
    skill_sub = skill.add_subparsers(dest="skill_command", required=True, parser_class=Parser)
    srun = skill_sub.add_parser(
        "run", help="run the suite with and without the skill, grade, compare, report"
    )
    add_skill_options(srun)
    srun.set_defaults(handler=cmd_skill_run)
    gen = skill_sub.add_parser("generate-tasks", help="write a task suite with an LLM, for you to review")
    add_skill_options(gen)
    gen.add_argument("--out", required=True, help="folder to write the suite into (must not hold tasks yet)")
    gen.add_argument(
        "--executor", default="anthropic", help="executor of the writing model (default: anthropic)"
    )
    gen.add_argument("--model", default=None, help="writing model (default: the judge model)")
    gen.set_defaults(handler=cmd_skill_generate)
    hist = sub.add_parser("history", help="the trend of a named suite over its runs")
    hist.add_argument("--suite", required=True)
    hist.add_argument("--reports-dir", default=None, help="reports folder (default: ~/.skillab/reports)")
    hist.set_defaults(handler=cmd_history)
    report = sub.add_parser(
        "report", help="serve the reports in the browser (127.0.0.1), or export one as HTML"
    )
    report.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("SKILLAB_REPORT_PORT") or 7799),
        help="port (default: $SKILLAB_REPORT_PORT or 7799)",
    )
    report.add_argument(
        "--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, this machine only)"
    )
    report.add_argument("--reports-dir", default=None, help="reports folder (default: ~/.skillab/reports)")
    report.add_argument("--export", metavar="FILE.html", help="write one self-contained HTML file and exit")
    report.add_argument("--run", metavar="ID", help="with --export: which run (default: the newest)")
    report.set_defaults(handler=cmd_report)
    init = sub.add_parser("init", help="scaffold a working example project")
    init.add_argument("dir", nargs="?", default=".", help="where (default: here)")
    init.set_defaults(handler=cmd_init)
    return parser


def options_from(args: argparse.Namespace, cwd: Path) -> BenchOptions:
    from flows.inputs.samples import CONFIG_FILE, load_config

    given = {k: v for k, v in vars(args).items() if k in BenchOptions.model_fields}
    config_path = Path(getattr(args, "config", "") or cwd / CONFIG_FILE)
    if getattr(args, "config", None) and not config_path.is_file():
        raise InputError(f"{config_path}: file not found (--config)")
    config = load_config(config_path) if config_path.is_file() else {}
    try:
        return BenchOptions(**{**config, **given})
    except ValidationError as exc:
        flag = lambda loc: "--" + str(loc[0] if loc else "options").replace("_", "-")  # noqa: E731
        raise InputError(validation_lines(exc, flag)) from None


def execute(args: argparse.Namespace) -> tuple[BenchOptions, Report | None, Path | None]:
    """Validate, print the plan or run the flow; returns the report (None for a dry run)."""
    from flows.inputs.prepare import prepare

    cwd = Path.cwd()
    options = options_from(args, cwd)
    prepared = prepare(options, cwd)
    for notice in prepared.notices:
        print(f"skillab: {notice}", file=sys.stderr)
    if options.dry_run:
        print_plan(prepared)
        return options, None, None
    configure_prefect()
    from flows.report.console import print_summary
    from flows.report.schema import load_report
    from flows.sample_bench import RegressionError, sample_bench

    names = ",".join(options.variants)
    flow = sample_bench.with_options(flow_run_name=f"{options.suite or prepared.samples_path.name} · {names}")
    state: Any = asyncio.run(flow(options, str(cwd), not args.quiet, return_state=True))  # type: ignore[arg-type]
    outcome = state.result(raise_on_failure=False)
    if isinstance(outcome, RegressionError):
        path = Path(outcome.report_path)
    elif isinstance(outcome, BaseException):
        raise outcome
    else:
        path = Path(outcome["report_path"])
    report = load_report(path)
    print_summary(report, path)
    return options, report, path


def print_plan(prepared: Any) -> None:
    from flows.inputs.plan import estimate_tokens

    o = prepared.options
    units = prepared.units()
    tokens_in, tokens_out = estimate_tokens(units, o.max_tokens)
    price = prepared.target.executor.prices.lookup(prepared.target.model)
    cost = (
        "unknown price" if price is None else f"${(tokens_in * price[0] + tokens_out * price[1]) / 1e6:.4f}"
    )
    if prepared.target.executor.name == "local":
        cost = "$0 (local)"
    judge_calls = 0
    if prepared.judges:
        from graders.judge import prompts_for

        per_output = (
            sum(len(prompts_for(s, "")) for s in prepared.samples) * len(prepared.variants) * o.repeat
        )
        judge_calls = per_output * len(prepared.judges) * o.judge_repeat
    cache = "off" if prepared.cache_dir is None else str(prepared.cache_dir)
    print(
        f"plan: {len(prepared.samples)} samples x {len(prepared.variants)} variants "
        f"({', '.join(v.name for v in prepared.variants)}) x {o.repeat} run(s) = {len(units)} model calls"
    )
    print(f"model: {prepared.target.executor.describe(prepared.target.model)}; concurrency {o.concurrency}")
    print(
        f"judge: {', '.join(f'{j.executor.name}:{j.model}' for j in prepared.judges) or 'none'}; "
        f"up to {judge_calls} judge calls"
    )
    print(f"estimated tokens: ~{tokens_in} in, <= {tokens_out} out; estimated cost (upper bound): {cost}")
    print(f"cache: {cache} (finished calls are never repeated)")
    for v in prepared.variants:
        print(f"  {v.name}: {v.path or 'no artifact'}" + (f" sha256 {v.sha256[:12]}" if v.sha256 else ""))


def regression_failures(report: Report | None) -> list[str]:
    regression = report.regression if report else None
    if regression is None:
        return []
    return [
        f"{v}: regression against {regression.previous}: {regression.per_variant[v].verdict.reason}"
        for v in regression.regressed
    ]


def cmd_run(args: argparse.Namespace) -> int:
    _, report, _ = execute(args)
    failures = regression_failures(report)
    for line in failures:
        print(f"skillab: REGRESSION {line} (the flow run is marked Failed)", file=sys.stderr)
    return EXIT_FAIL if failures else EXIT_OK


def cmd_ci(args: argparse.Namespace) -> int:
    options, report, _ = execute(args)
    if report is None:
        return EXIT_OK
    failures = []
    for name, s in report.summary.items():
        score = s.avg_composite_score
        if score is None or score < options.threshold:
            failures.append(
                f"{name}: average composite {score if score is None else f'{score:.2f}'} < threshold {options.threshold:g}"
            )
    for comp in report.comparisons:
        label = comp.verdict.label
        if options.require == "better" and label != VerdictLabel.BETTER:
            failures.append(f"{comp.treatment} vs {comp.control}: verdict {label}, required BETTER")
        if options.require == "not-worse" and label == VerdictLabel.WORSE:
            failures.append(f"{comp.treatment} vs {comp.control}: verdict WORSE")
    failures += regression_failures(report)
    for line in failures:
        print(f"skillab ci: FAIL {line}", file=sys.stderr)
    if not failures:
        print("skillab ci: PASS", file=sys.stderr)
    return EXIT_FAIL if failures else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from flows.inputs.prepare import skillab_home
    from flows.report.store import NotFound, ReportStore

    reports = Path(args.reports_dir) if args.reports_dir else skillab_home() / "reports"
    if not reports.is_dir():
        raise InputError(f"{reports}: no reports folder (--reports-dir)")
    if args.export:
        from flows.report.server import export_html
        from tasks.files import atomic_write_text

        store = ReportStore(reports)
        run_id = args.run or max(store.runs(), key=lambda r: r["timestamp"], default={}).get("id")
        if not run_id:
            raise InputError(f"{reports}: no reports to export")
        try:
            report = store.load(run_id)
        except NotFound:
            raise InputError(f"--run: no run {run_id!r} in {reports}") from None
        atomic_write_text(Path(args.export), export_html(report))
        print(f"wrote {args.export} ({report.id})")
        return EXIT_OK
    import uvicorn

    from flows.report.server import create_app

    if args.host not in {"127.0.0.1", "localhost", "::1"}:
        print(
            f"skillab: warning: serving on {args.host}: anyone who can reach it can read the reports",
            file=sys.stderr,
        )
    print(f"skillab report: http://{args.host}:{args.port}/ ({reports}); Ctrl-C stops", file=sys.stderr)
    uvicorn.run(
        create_app(reports, host=args.host, port=args.port),
        host=args.host,
        port=args.port,
        log_level="warning",
    )
    return EXIT_OK


def skill_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    from flows.inputs.skill_config import SkillBenchConfig, find_skill, load_config

    cwd = Path.cwd()
    overrides = {k: v for k, v in vars(args).items() if k in SkillBenchConfig.model_fields and k != "config"}
    config = load_config(args.config, cwd, overrides)
    return config, find_skill(config.skill, cwd)


def cmd_skill_run(args: argparse.Namespace) -> int:
    from executors.registry import usable_executor
    from flows.inputs.skill_config import load_tasks

    config, skill = skill_inputs(args)
    if not config.tasks:
        raise InputError(
            "--tasks: name the task-set folder (a fixed suite; `skill generate-tasks` writes one)"
        )
    load_tasks(Path(config.tasks))  # every malformed file reported before any session starts
    usable_executor(config.runner, "--runner", agentic=True)
    configure_prefect()
    from flows.skill_bench import InsufficientData, skill_bench

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
    outcome = state.result(raise_on_failure=False)
    if isinstance(outcome, InsufficientData):
        print(f"skillab skill: {outcome}", file=sys.stderr)
        return EXIT_FAIL
    if isinstance(outcome, BaseException):
        raise outcome
    from flows.report.schema import load_report

    report = load_report(Path(outcome["report_path"]))
    for comp in report.comparisons:
        v = comp.verdict
        print(f"with-skill vs baseline: {v.label} (band: {v.band}) — {v.reason}")
    print(f"report: {Path(outcome['results_dir']) / 'report.md'}")
    return EXIT_OK


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


def cmd_history(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from flows.inputs.prepare import skillab_home
    from flows.report.regression import history

    reports = Path(args.reports_dir) if args.reports_dir else skillab_home() / "reports"
    rows = history(reports, args.suite)
    if not rows:
        raise InputError(f"{reports}: no runs of suite {args.suite!r}")
    variants = sorted({v for r in rows for v in r["means"]})
    table = Table(title=f"suite {args.suite}: {len(rows)} run(s)")
    for column in ("date", "run", "model", *variants, "verdicts", "regression"):
        table.add_column(column)
    previous: dict[str, float | None] = {}
    for r in rows:
        cells = []
        for v in variants:
            mean, before = r["means"].get(v), previous.get(v)
            trend = (
                ""
                if mean is None or before is None
                else (" ↑" if mean > before else " ↓" if mean < before else " =")
            )
            cells.append("—" if mean is None else f"{mean:.2f}{trend}")
            previous[v] = mean
        table.add_row(
            r["timestamp"][:19].replace("T", " "),
            r["id"],
            str(r["model"]),
            *cells,
            ", ".join(r["verdicts"]),
            ", ".join(r["regressed"]) or "—",
        )
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from flows.cli.scaffold import scaffold

    target = Path(args.dir)
    written = scaffold(target)
    print(
        f"created {target}/ ({len(written)} files). Next:\n  cd {target}\n  python -m flows.bench run --dry-run\n"
        f"  python -m flows.bench run --variants v1,v2"
    )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except InputError as exc:
        for line in exc.lines:
            print(f"skillab: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("skillab: interrupted; finished calls are cached, re-run to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
