"""The command line: ``python -m flows.bench`` (installed as ``skillab``).

run    benchmark artifact variants on samples (sample mode)
ci     the same, exiting 1 when a variant is under --threshold or the verdict gate fails
validate  try every grader on the cases' reference answers (no model call)
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
from flows.cli.flags import Parser
from flows.cli.plan import add_plan_command
from flows.cli.reports import cmd_history, cmd_report
from flows.report.modes import modes
from flows.report.written import keeping_written


def port(value: str) -> int:
    """A TCP port; argparse names this function in its error ("invalid port value")."""
    number = int(value)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port (1-65535)")
    return number


def add_report_commands(sub: Any) -> None:
    hist = sub.add_parser("history", help="the trend of a named suite over its runs")
    hist.add_argument("--suite", required=True)
    hist.add_argument("--reports-dir", default=None, help="reports folder (default: ~/.skillab/reports)")
    hist.add_argument(
        "--history-url",
        default=None,
        help="a team's shared history (folder or s3://): its runs mirrored in first",
    )
    hist.set_defaults(handler=cmd_history)
    report = sub.add_parser(
        "report", help="serve the reports in the browser (127.0.0.1), or export one as HTML"
    )
    report.add_argument(
        "--port",
        type=port,
        # a string default goes through ``type`` too: a bad $SKILLAB_REPORT_PORT is a usage error
        # of this command only, never of the others
        default=os.environ.get("SKILLAB_REPORT_PORT") or "7799",
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
    from flows.cli.prefect_env import SERVER_SETTING

    server = sub.add_parser(
        "server",
        help="the local Prefect server that runs share (started by the first run when no "
        f"PREFECT_API_URL is set; {SERVER_SETTING}=ephemeral: a temporary one per run instead)",
    )
    server.add_argument("action", choices=("start", "stop", "status"))
    server.set_defaults(handler=cmd_server_command)


def cmd_server_command(args: argparse.Namespace, command: Command) -> int:
    """``server``; ``stop`` stops the warm processes too (flows/cli/warm.py), and no server command
    leaves one behind."""
    from flows.cli import warm
    from flows.cli.prefect_env import cmd_server

    command.leaves_warm = False
    code = cmd_server(args, command)
    if args.action == "stop" and (stopped := warm.stop_all()):
        print(f"skillab: stopped the warm processes (pids {', '.join(map(str, stopped))})")
    return code


#: The commands modes put their own under (a mode's ``group``), with their one line of help.
GROUPS = {"skill": "agentic and trigger modes: benchmark a Claude Code skill with agent CLIs"}


def add_mode_commands(sub: Any, command: str | None) -> None:
    """Every mode's commands, in the registry's order. Only the modes ``command`` names (all of them
    for None or a word no mode has) add their flags, the others their commands' one line of help: a
    sample run does not import agentic and trigger mode (0.1-0.2 s here)."""
    every = modes()
    known = {w for m in every for w in m.words} | {m.group for m in every if m.group}
    groups: dict[str, argparse._SubParsersAction[Parser]] = {}
    for mode in every:
        if mode.group is None:
            if command is None or command in mode.words or command not in known:
                mode.add_commands(sub)
            else:
                for word, line in mode.words.items():
                    sub.add_parser(word, help=line)
            continue
        if mode.group not in groups:
            group = sub.add_parser(mode.group, help=GROUPS[mode.group])
            groups[mode.group] = group.add_subparsers(
                dest=f"{mode.group}_command", required=True, parser_class=Parser
            )
        if command in (None, mode.group):
            mode.add_commands(groups[mode.group])


def build_parser(command: str | None = None) -> Parser:
    """The whole command line; with ``command``, only that command has its flags and the others their
    one line of help."""
    parser = Parser(
        prog="skillab",
        description="Measure whether a knowledge artifact (skill, system prompt, rule set) makes a model do "
        "better: fixed model, fixed cases, only the artifact changes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_mode_commands(sub, command)
    add_plan_command(sub)
    add_report_commands(sub)
    add_server_command(sub)
    init = sub.add_parser("init", help="scaffold a working example project")
    init.add_argument("dir", nargs="?", default=".", help="where (default: here)")
    init.set_defaults(handler=cmd_init)
    return parser


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
    command = command or Command()
    try:
        with keeping_written():  # the command's ending reads the report its run wrote
            return int(args.handler(args, command))
    except InputError as exc:
        for line in exc.lines:  # a path or name with a control character still prints on one line
            shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
            print(f"skillab: error: {shown}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        command.run.cache_writes.drain()  # the answers already in: what the line below promises
        print("skillab: interrupted; finished calls are cached, re-run to resume", file=sys.stderr)
        return 130
    except BaseException as exc:
        # SIGTERM during a flow arrives as Prefect's TerminationSignal (a BaseException)
        if not isinstance(exc, Terminated) and type(exc).__name__ != "TerminationSignal":
            raise
        command.run.cache_writes.drain()
        print("skillab: terminated; finished calls are cached, re-run to resume", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
