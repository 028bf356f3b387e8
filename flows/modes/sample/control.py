"""A suite's same-night control: a night whose variant changed since the last night that passed also
runs that night's artifact (kept by content hash) as the arm ``<name>@good``, paired by case, so the
regression verdict is tonight's variant against tonight's control (whatever changed in the world
cancels) and the drift verdict is the control against its own night (``flows/report/regression.py``).
The night reads no cache: every arm meets tonight's world."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

from flows.inputs.options import BenchOptions
from flows.inputs.samples import load_variants
from flows.modes.sample.prepare import Prepared, prepared_output_dir
from flows.report.regression import KNOWN_GOOD, suite_reports
from flows.report.schema import Report
from tasks.store.files import atomic_write_text

#: Where a suite's passing nights keep their artifacts, by SHA-256 (in the reports folder).
STORE = ".known-good"


def keep_known_good(prepared: Prepared, report: Report) -> None:
    """A suite's night that did not regress: its artifacts become the known good ones."""
    if not prepared.options.suite or not passed(report):
        return
    store = prepared.output_dir / STORE
    for v in prepared.variants:
        kept = store / f"{v.sha256}.md"
        if v.artifact is not None and v.sha256 and not v.name.endswith(KNOWN_GOOD) and not kept.exists():
            atomic_write_text(kept, v.artifact)


def passed(report: Report) -> bool:
    return report.regression is None or not report.regression.regressed


def with_controls(options: BenchOptions, folder: Path) -> tuple[BenchOptions, list[str]]:
    """The night's options with a control arm for each variant changed since the last night that
    passed (its artifact known), and what the night was told; the options as given otherwise."""
    if not options.same_night_control or not options.suite:
        return options, []
    reports = prepared_output_dir(options)
    reports = reports if reports.is_absolute() else folder / reports
    nights = [
        r for r in suite_reports(reports, options.suite) if r.meta.model == (options.model or r.meta.model)
    ]
    good = next((r for r in reversed(nights) if passed(r)), None)
    with_control = [i for i, r in enumerate(nights) if any(v.endswith(KNOWN_GOOD) for v in r.meta.variants)]
    if good is None or (with_control and len(nights) - 1 - with_control[-1] < options.control_every - 1):
        return options, []
    hashes = {good.variant_name(k): h for k, h in (good.meta.skill_hashes or {}).items()}
    staging = reports / ".nights" / quote(options.suite, safe="") / "skills"
    shutil.rmtree(staging, ignore_errors=True)
    controls, told = [], []
    for v in load_variants(folder / options.skill_dir, options.variants):
        if v.artifact is None:
            continue
        atomic_write_text(staging / f"{v.name}.md", v.artifact)
        kept = reports / STORE / f"{hashes.get(v.name)}.md"
        if hashes.get(v.name) not in (None, v.sha256) and kept.is_file():
            atomic_write_text(staging / f"{v.name}{KNOWN_GOOD}.md", kept.read_text(encoding="utf-8"))
            controls.append(f"{v.name}{KNOWN_GOOD}")
            told.append(
                f"same-night control: {v.name}{KNOWN_GOOD}, the artifact of night {good.id} (sha256 "
                f"{str(hashes[v.name])[:12]}), runs beside {v.name}: its calls double, and the night reads no cache"
            )
    if not controls:
        return options, []
    update = {"skill_dir": str(staging), "variants": (*options.variants, *controls), "cache": False}
    return options.model_copy(update=update), told
