"""``plan``: before paying for a run, how many cases and runs per case detect the effect worth
finding, which of the two is the cheaper lever, and what it costs with caching and batching.

The variance comes from a pilot: a report given by path, or the newest run of a suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
from pathlib import Path
from typing import Any

from executors.errors import InputError
from executors.parsing import JsonObject
from flows.cli.command import Command


def plan_source(args: argparse.Namespace) -> Path:
    """The pilot report: --report, or the newest report of --suite in the reports folder."""
    from flows.inputs.files import skillab_home
    from flows.report.store import read_reports

    if args.report:
        path = Path(args.report)
        if not path.is_file():
            raise InputError(f"--report: file not found: {path}")
        return path
    if not args.suite:
        raise InputError("plan: give the pilot: --report FILE, or --suite NAME (its newest run)")
    folder = Path(args.reports_dir) if args.reports_dir else skillab_home() / "reports"
    runs = sorted(
        (r for r in read_reports(folder) if r.meta.suite == args.suite and r.plannable),
        key=lambda r: r.meta.timestamp,
    )
    if not runs:
        raise InputError(f"--suite: no sample-mode run of suite {args.suite!r} in {folder}")
    return folder / f"{runs[-1].id}.json"


def call_shape(data: JsonObject, artifact_tokens: int | None) -> Any:
    """Tokens of one call from the pilot's results; the artifact's share from the flag, else from
    the tokens the provider cached (the artifact is the cached prefix), else unknown (0)."""
    from tasks.stats.planning import CallShape

    runs = [
        run
        for case in data.get("results", [])
        for entry in case.get("variants", {}).values()
        for run in entry.get("runs") or [entry]
        if run.get("ok")
    ]

    def mean(key: str) -> float:
        values = [float(r.get(key) or 0) for r in runs]
        return sum(values) / len(values) if values else 0.0

    prompt = mean("inputTokens") + mean("cacheReadTokens") + mean("cacheWriteTokens")
    cached = mean("cacheReadTokens") + mean("cacheWriteTokens")
    artifact = artifact_tokens if artifact_tokens is not None else round(cached)
    return CallShape(artifact, max(round(prompt) - artifact, 0), round(mean("outputTokens")))


def cmd_plan(args: argparse.Namespace, command: Command) -> int:
    from executors.pricing import PriceTable
    from flows.report.schema import load_report
    from tasks.stats.planning import Prices, frame_from_report, pilot_from_frame, plan

    path = plan_source(args)
    try:
        report = load_report(path)
    except ValueError as exc:  # it names the file
        raise InputError(str(exc)) from None
    data = report.dump()
    control = args.control or report.meta.control
    others = [v for v in report.meta.variants if v != control]
    treatment = args.treatment or (others[0] if others else control)
    # The run's own margin and effect (what its verdicts used), unless the flags say otherwise.
    used = next((c.verdict for c in report.comparisons if c.treatment == treatment), None)
    margin = args.margin if args.margin is not None else used.margin if used else report.scale.margin
    effect = (
        args.min_effect
        if args.min_effect is not None
        else used.min_effect
        if used
        else report.scale.min_effect
    )
    try:
        pilot = pilot_from_frame(frame_from_report(data, minimum=report.scale.minimum), control, treatment)
        table = PriceTable.from_file(Path(args.prices)) if args.prices else None
        model = args.model or report.meta.model
        prices = None
        with contextlib.suppress(ValueError):  # no price: the plan in calls only
            prices = Prices.for_model(model, table)
        result = plan(
            pilot,
            effect=effect,
            margin=margin,
            available_cases=args.available_cases,
            shape=call_shape(data, args.artifact_tokens),
            prices=prices,
        )
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
    else:
        print_plan(result, f"{path.name}: {treatment} vs {control}", model if prices else None)
    return 0


def print_plan(result: Any, title: str, priced_model: str | None) -> None:
    p = result.pilot

    def sd(value: float | None) -> str:
        return "unknown" if value is None else f"{math.sqrt(value):.2f}"

    print(f"pilot {title}: {p.cases} paired cases, {p.runs:g} run(s) per case and variant")
    print(
        f"  spread of a case's difference {sd(p.var_diff)}; case to case {sd(p.between)}; run to run {sd(p.within)}"
    )
    for note in p.notes:
        print(f"  note: {note}")
    print(
        f"for a BETTER verdict (the whole interval above the margin +{result.margin:g}) at a true effect "
        f"of {result.effect:g}, with {result.power:.0%} power (alpha {result.alpha:g}):"
    )
    header = "  runs/case  cases  calls" + (
        "  plain $  cached $  batch $  cached+batch $" if priced_model else ""
    )
    print(header)
    for o in result.options:
        cases = "—" if o.cases is None else f"{o.cases}{'' if o.feasible else '*'}"
        line = f"  {o.runs:>9}  {cases:>5}  {o.calls if o.calls is not None else '—':>5}"
        if priced_model and o.cost is not None:
            c = o.cost
            line += f"  {c.plain:>7.2f}  {c.cached:>8.2f}  {c.batch:>7.2f}  {c.cached_batch:>14.2f}"
        print(line)
    if any(not o.feasible and o.cases is not None for o in result.options):
        print("  * more cases than are available (--available-cases)")
    if result.smallest_better is not None:
        print(
            f"at the pilot's {p.cases} cases x {p.runs:g} run(s), the smallest effect that could read BETTER "
            f"is {result.smallest_better:.3g}"
        )
    print(f"cheaper lever: {result.lever}: {result.reason}")
    if priced_model:
        print(f"prices: {priced_model} (cache and batch at the provider's published ratios)")
    else:
        print("no price for this model: give --model of a priced model or --prices FILE for the cost")


def add_plan_command(sub: Any) -> None:
    p = sub.add_parser(
        "plan", help="how many cases and runs a verdict needs, from a pilot run, and what it costs"
    )
    p.add_argument("--report", help="the pilot: a report JSON file")
    p.add_argument("--suite", help="the pilot: the newest sample-mode run of this suite")
    p.add_argument("--reports-dir", default=None, help="reports folder (default: ~/.skillab/reports)")
    p.add_argument("--control", help="default: the report's control")
    p.add_argument("--treatment", help="default: the first other variant")
    p.add_argument(
        "--min-effect", type=float, default=None, help="difference worth finding (default: the pilot run's)"
    )
    p.add_argument(
        "--margin",
        type=float,
        default=None,
        help="practical margin of the verdict (default: the pilot run's)",
    )
    p.add_argument("--available-cases", type=int, default=None, help="how many cases you can write or have")
    p.add_argument("--model", help="price the plan for this model (default: the pilot's)")
    p.add_argument("--prices", help="price file overriding the built-in table")
    p.add_argument(
        "--artifact-tokens", type=int, default=None, help="tokens of the artifact (the cacheable prefix)"
    )
    p.add_argument("--json", action="store_true", help="the plan as JSON")
    p.set_defaults(handler=cmd_plan)
