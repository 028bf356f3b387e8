"""What every mode's report shares: one assembly path (``assemble``) fed by each mode's parts (its
meta, per-case results and own figures; the mode folders' report builders make them), the run's id,
the meta every mode records (versions, the runner's ``RunStats``, the OS sandbox), a case's entry
for one variant, and publishing the file. Figures come from ``tasks.stats.aggregate``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from executors import sandbox
from flows.report.entries import RunEntry, V
from flows.report.fingerprint import fingerprint
from flows.report.schema import REPORT_VERSION, RP, Meta, Report, mode_of
from flows.report.written import wrote
from tasks.schema import RunStats, Scale
from tasks.stats.figures import Aggregate, Analysis, CaseStats
from tasks.store.files import atomic_write_chunks

#: Variant names in a file name are cut here: file systems refuse names over 255 bytes.
ID_NAMES_CHARS = 80


def cli_version() -> str:
    try:
        return metadata.version("skillab")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def timestamp(at: dt.datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def new_report_id(started_at: dt.datetime, names: list[str]) -> str:
    """The run id (and file name): start time, the variant names (cut to fit), a random suffix."""
    stamp = started_at.strftime("%Y-%m-%dT%H-%M-%S")
    suffix = hashlib.sha256(f"{started_at.isoformat()}{random.random()}".encode()).hexdigest()[:6]
    joined = "-".join(re.sub(r"[^A-Za-z0-9_.]", "_", n) for n in names)[:ID_NAMES_CHARS]
    return f"{stamp}-{joined}-{suffix}"


# ---------------------------------------------------------------- the one assembly path


def assemble(
    cls: type[RP],
    report_id: str,
    meta: Meta,
    scale: Scale,
    aggregate: Aggregate | None,
    results: list[Any],
    stats: RunStats | None = None,
    **parts: Any,
) -> RP:
    """Every mode's report is made here, as its mode's class: the figures of ``aggregate`` plus the
    mode's own parts (by their Python names), validated into the typed model (a missing or misnamed
    field fails here, not in a reader). ``stats``: what the runner saw, the run's fingerprint."""
    if stats is not None:
        meta.fingerprint = fingerprint(meta, stats)
    return cls(
        version=REPORT_VERSION,
        id=report_id,
        mode=mode_of(cls),
        meta=meta,
        summary=aggregate.summary if aggregate else {},
        comparisons=aggregate.comparisons if aggregate else [],
        scale=Scale.model_validate(scale.model_dump()),  # every field written, defaults included
        results=results,
        analysis=aggregate.analysis if aggregate else Analysis(insights=[], suggestions=[]),
        **parts,
    )


# ---------------------------------------------------------------- a case's entry


def variant_entry(
    cls: type[V], runs: Sequence[RunEntry], stats: CaseStats | dict[str, Any], mean: float | None
) -> V:
    """A case's entry for one variant (``cls``: the mode's): the first run's fields, the case mean,
    and every run."""
    # the first run's fields as given (their values are validated already: no dump and re-parse)
    fields = {name: getattr(runs[0], name) for name in runs[0].model_fields_set}
    if len(runs) > 1:
        fields |= {"composite_score": mean, "ok": all(r.ok for r in runs), "runs": runs}
    return cls(**fields, case_stats=stats)


def run_meta(started: dt.datetime, stats: RunStats) -> dict[str, Any]:
    """What every mode's report meta records of the run: when it started, skillab's version, and what
    its runner did (model calls or agent sessions)."""
    return {
        "timestamp": timestamp(started),
        "cli_version": cli_version(),
        "calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "warm_up_calls": stats.warm_up_calls,
        "batched_calls": stats.batched_calls,
        "not_run": list(stats.not_run),
    }


class RunOutcome(BaseModel):
    """What every mode's flow run ends with for its command (and in Prefect, its state's data): the
    report it wrote, and the run's own folder where a mode keeps one."""

    model_config = ConfigDict(frozen=True)

    id: str
    report_path: str | None
    results_dir: str | None = None


# ---------------------------------------------------------------- writing


def report_path(output_dir: Path, report_id: str) -> Path:
    return output_dir / f"{report_id}.json"


#: How a report is written: the aliases, only the fields a run set, indented for a reader.
DUMP: dict[str, Any] = {"indent": 2, "by_alias": True, "exclude_unset": True}
#: Where the cases stand in the report's JSON: top-level keys alone are indented by two spaces.
CASES_AT = '\n  "results": []'


def report_json(report: Report) -> Iterator[str]:
    """The report's JSON, the very text ``model_dump_json(**DUMP)`` makes, a case at a time:
    pydantic-core's encoder straight from the model (at 10,000 cases 0.12 s, where the dict first
    then its JSON took 0.46 s), strict JSON (NaN and infinity as null, UTF-8 kept), and never the
    whole text in memory (14 MB at 10,000 cases, twice that while encoded)."""
    cases: list[BaseModel] = getattr(report, "results", [])
    head = report.model_copy(update={"results": []}).model_dump_json(**DUMP) if cases else ""
    if CASES_AT not in head:  # no cases
        yield report.model_dump_json(**DUMP) + "\n"
        return
    before, after = head.split(CASES_AT, 1)
    yield before + CASES_AT[:-1] + "\n"
    for i, case in enumerate(cases):
        # JSON strings hold no raw newline: every line break is the indentation's
        yield ("    " if i == 0 else ",\n    ") + case.model_dump_json(**DUMP).replace("\n", "\n    ")
    yield "\n  ]" + after + "\n"


def publish(report: Report, output_dir: Path) -> Path:
    path = report_path(output_dir, report.id)
    if not atomic_write_chunks(path, report_json(report)):  # else a reader parses the file, masked
        wrote(path, report)
    return path


def agent_cli_meta(runner: str, reported: list[Any], probed: str | None) -> dict[str, str | None]:
    """The agent CLI's version for the report's meta: what its sessions reported (Claude Code's init
    event), else what ``--version`` said before the run."""
    version = next((str(v) for v in reported if v), None) or probed
    return {"agent_cli_version": f"{runner} {version}" if version else None}


def isolation_meta(
    isolation: sandbox.Isolation, allow_network: bool = False, pool: str | None = None
) -> dict[str, str | None]:
    """The report's record of the OS sandbox agents and checks ran in, with its version, what of the
    network the sessions could reach, and the work pool whose containers ran them (--fleet-pool)."""
    if isolation == "none":
        network = "host network (no OS sandbox: the sessions could reach anything this machine can)"
    elif allow_network:
        network = "host network (--allow-network)"
    else:
        network = "the model endpoint only (through skillab's forwarder); task checks: none"
    return {
        "isolation": isolation,
        "sandbox_version": sandbox.version() if isolation != "none" else None,
        "network": network,
        "fleet_pool": pool,
    }
