"""The command line: ``python -m flows.bench`` (installed as ``skillab``).

run    benchmark artifact variants on samples (sample mode)
ci     the same, exiting 1 when a variant is under --threshold or the verdict gate fails
init   scaffold a working example project
server the local Prefect server that runs share (start, stop, status)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from executors.errors import InputError
from flows.cli.codes import EXIT_OK, EXIT_USAGE, Terminated
from flows.cli.command import Command
from flows.cli.flags import add_model_flags
from flows.cli.plan import add_plan_command
from flows.cli.reports import cmd_history, cmd_report


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the house format (one line, exit 2)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"skillab: error: {message} (see --help)\n")


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
        "units_per_task",
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
        "suite",
        "junit",
        "github_summary",
    ),
}
CI_GROUPS: dict[str, tuple[str, ...]] = {"ci gate": ("threshold", "require")}
#: SkillBenchConfig fields that are not flags: a mapping has no flag form (set it in config.yml).
SKILL_NOT_FLAGS = ("difficulties",)


def add_run_options(p: argparse.ArgumentParser) -> set[str]:
    from flows.inputs.options import BenchOptions

    p.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="options file (default: ./skillab.yaml if present), or an oh-my-knowledge eval.yaml",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return add_model_flags(p, BenchOptions, RUN_GROUPS)


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


def port_number(value: str) -> int:
    port = int(value)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1-65535)")
    return port


def add_trigger_commands(skill_sub: Any) -> None:
    from flows.cli.triggers import cmd_triggers_generate, cmd_triggers_run
    from flows.inputs.triggers import TriggerOptions

    triggers = skill_sub.add_parser("triggers", help="trigger mode: does the skill fire when it should?")
    trig_sub = triggers.add_subparsers(dest="triggers_command", required=True, parser_class=Parser)
    trun = trig_sub.add_parser(
        "run", help="run every query with the skill(s) listed, never forced; rates with intervals"
    )
    add_model_flags(trun, TriggerOptions, {"": tuple(TriggerOptions.model_fields)})
    trun.add_argument("--quiet", action="store_true", help="no progress bar")
    trun.set_defaults(handler=cmd_triggers_run)
    tgen = trig_sub.add_parser(
        "generate", help="draft a balanced queries file with an LLM, for you to review"
    )
    tgen.add_argument("--skill", required=True, help="the skill (name or folder)")
    tgen.add_argument("--out", required=True, help="the queries file to write (must not exist)")
    tgen.add_argument("--count", type=int, default=20, help="queries to draft (default: 20)")
    tgen.add_argument(
        "--executor", default="anthropic", help="executor of the drafting model (default: anthropic)"
    )
    tgen.add_argument("--model", default=None, help="drafting model (default: the executor's default)")
    tgen.set_defaults(handler=cmd_triggers_generate)


def add_report_commands(sub: Any) -> None:
    hist = sub.add_parser("history", help="the trend of a named suite over its runs")
    hist.add_argument("--suite", required=True)
    hist.add_argument("--reports-dir", default=None, help="reports folder (default: ~/.skillab/reports)")
    hist.set_defaults(handler=cmd_history)
    report = sub.add_parser(
        "report", help="serve the reports in the browser (127.0.0.1), or export one as HTML"
    )
    report.add_argument(
        "--port",
        type=port_number,
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


def add_server_command(sub: Any) -> None:
    from flows.cli.prefect_env import SERVER_SETTING, cmd_server

    server = sub.add_parser(
        "server",
        help="the local Prefect server that runs share (started by the first run when no "
        f"PREFECT_API_URL is set; {SERVER_SETTING}=ephemeral: a temporary one per run instead)",
    )
    server.add_argument("action", choices=("start", "stop", "status"))
    server.set_defaults(handler=cmd_server)


def build_parser(command: str | None = None) -> Parser:
    """The whole command line; with ``command``, only that command has its flags and the others their
    one line of help: a sample run does not import agentic and trigger mode (0.1-0.2 s here)."""
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
    ci = sub.add_parser("ci", help="run, then exit 1 when a variant is below --threshold or the gate fails")
    if command in (None, "run", "ci"):
        add_sample_commands(run, ci)
    skill = sub.add_parser("skill", help="agentic mode: benchmark a Claude Code skill with agent CLIs")
    if command in (None, "skill"):
        add_skill_commands(skill)
    add_plan_command(sub)
    add_report_commands(sub)
    add_server_command(sub)
    init = sub.add_parser("init", help="scaffold a working example project")
    init.add_argument("dir", nargs="?", default=".", help="where (default: here)")
    init.set_defaults(handler=cmd_init)
    return parser


def add_sample_commands(run: argparse.ArgumentParser, ci: argparse.ArgumentParser) -> None:
    from flows.cli.sample import cmd_ci, cmd_run
    from flows.inputs.options import BenchOptions

    add_run_options(run)
    run.set_defaults(handler=cmd_run)
    covered = add_run_options(ci) | add_model_flags(ci, BenchOptions, CI_GROUPS)
    missing = set(BenchOptions.model_fields) - covered
    if missing:  # a new option without a flag is a bug, caught by every test that builds the parser
        raise RuntimeError(f"options without a flag: {sorted(missing)}")
    ci.set_defaults(handler=cmd_ci)


def add_skill_commands(skill: argparse.ArgumentParser) -> None:
    from flows.cli.skill import cmd_skill_generate, cmd_skill_run

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
    add_trigger_commands(skill_sub)


def cmd_init(args: argparse.Namespace, command: Command) -> int:
    from flows.cli.prefect_env import check_settings, launch_server
    from flows.cli.scaffold import scaffold

    check_settings()  # a bad server setting stops init before it writes anything
    target = Path(args.dir)
    written = scaffold(target)
    print(
        f"created {target}/ ({len(written)} files). Next:\n  cd {target}\n  python -m flows.bench run --dry-run\n"
        f"  python -m flows.bench run --variants v1,v2",
        flush=True,
    )
    # The Prefect server the project's runs will share starts now, in the background (announced in
    # one line): the first run finds it up instead of waiting seconds for it.
    launch_server(started=command.servers_started)
    return EXIT_OK


def main(argv: list[str] | None = None, command: Command | None = None) -> int:
    """The command ``argv`` names, run as ``command`` (the entry point's; by default one that does
    not own this process: a caller such as a test keeps it)."""
    argv = sys.argv[1:] if argv is None else argv
    # The command is the first word (the top level has no option taking a value).
    name = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(name).parse_args(argv)
    try:
        return int(args.handler(args, command or Command()))
    except InputError as exc:
        for line in exc.lines:  # a path or name with a control character still prints on one line
            shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
            print(f"skillab: error: {shown}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("skillab: interrupted; finished calls are cached, re-run to resume", file=sys.stderr)
        return 130
    except BaseException as exc:
        # SIGTERM during a flow arrives as Prefect's TerminationSignal (a BaseException)
        if not isinstance(exc, Terminated) and type(exc).__name__ != "TerminationSignal":
            raise
        print("skillab: terminated; finished calls are cached, re-run to resume", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
