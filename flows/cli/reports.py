"""``report`` (the local report server, or one run exported as HTML) and ``history`` (a suite's trend)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from executors.errors import InputError
from flows.cli.codes import EXIT_OK
from flows.cli.command import Command


def cmd_report(args: argparse.Namespace, command: Command) -> int:
    from flows.inputs.files import skillab_home
    from flows.report.store import NotFound, ReportStore

    reports = Path(args.reports_dir) if args.reports_dir else skillab_home() / "reports"
    if not reports.is_dir():
        raise InputError(f"{reports}: no reports folder (--reports-dir)")
    if args.export and Path(args.export).is_dir():
        raise InputError(f"--export: {args.export} is a folder; name the .html file to write")
    if args.export:
        from flows.report.server import export_pieces
        from tasks.store.files import atomic_write_chunks

        store = ReportStore(reports)
        newest = max(store.runs(), key=lambda r: r.timestamp, default=None)
        run_id = args.run or (newest.id if newest else None)
        if not run_id:
            raise InputError(f"{reports}: no reports to export")
        try:
            report = store.load(run_id)
        except NotFound as exc:
            cause = f": {exc.__cause__}" if exc.__cause__ else ""
            raise InputError(f"--run: no readable run {run_id!r} in {reports}{cause}") from None
        try:
            atomic_write_chunks(Path(args.export), export_pieces(report))
        except OSError as exc:
            raise InputError(f"--export: cannot write {args.export}: {exc.strerror or exc}") from None
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


def cmd_history(args: argparse.Namespace, command: Command) -> int:
    from rich.console import Console
    from rich.table import Table

    from flows.inputs.files import skillab_home
    from flows.report.regression import history

    reports = Path(args.reports_dir) if args.reports_dir else skillab_home() / "reports"
    if args.history_url:
        from flows.engine.team_history import mirror

        mirror("pull", args.history_url, args.suite, reports)
    rows = history(reports, args.suite)
    if not rows:
        raise InputError(f"{reports}: no runs of suite {args.suite!r}")
    variants = sorted({v for r in rows for v in r.means})
    table = Table(title=f"suite {args.suite}: {len(rows)} run(s)")
    for column in ("date", "run", "model", *variants, "verdicts", "regression", "what ran changed"):
        table.add_column(column)
    previous: dict[str, float | None] = {}
    for r in rows:
        cells = []
        for v in variants:
            mean, before = r.means.get(v), previous.get(v)
            trend = (
                ""
                if mean is None or before is None
                else (" ↑" if mean > before else " ↓" if mean < before else " =")
            )
            cells.append("—" if mean is None else f"{mean:.2f}{trend}")
            previous[v] = mean
        table.add_row(
            r.timestamp[:19].replace("T", " "),
            r.id,
            str(r.model),
            *cells,
            ", ".join(r.verdicts),
            ", ".join(r.regressed) or "—",
            "\n".join(r.changed) or "—",
        )
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    return EXIT_OK
