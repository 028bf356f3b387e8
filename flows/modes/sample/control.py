"""A suite's same-night control: a night whose variant changed since the last night that passed also
runs that night's artifact (kept by content hash) as the arm ``<name>@good``, paired by case, so the
regression verdict is tonight's variant against tonight's control (whatever changed in the world
cancels) and the drift verdict is the control against its own night (``flows/report/regression.py``).
The night reads no cache: every arm meets tonight's world."""

from __future__ import annotations

from pathlib import Path

from flows.inputs.options import BenchOptions
from flows.inputs.samples import load_variants
from flows.modes.sample.prepare import Prepared, prepared_output_dir
from flows.report.regression import KNOWN_GOOD, KNOWN_GOOD_STORE, control_told, due_control, passed
from flows.report.schema import Report
from tasks.store.files import atomic_write_text


def keep_known_good(prepared: Prepared, report: Report) -> None:
    """A suite's night that did not regress: its artifacts become the known good ones."""
    if not prepared.options.suite or not passed(report):
        return
    store = prepared.output_dir / KNOWN_GOOD_STORE
    for v in prepared.variants:
        kept = store / f"{v.sha256}.md"
        if v.artifact is not None and v.sha256 and not v.name.endswith(KNOWN_GOOD) and not kept.exists():
            atomic_write_text(kept, v.artifact)


def with_controls(options: BenchOptions, folder: Path) -> tuple[BenchOptions, list[str]]:
    """The night's options with a control arm for each variant changed since the last night that
    passed (its artifact known), and what the night was told; the options as given otherwise."""
    if not options.same_night_control or not options.suite:
        return options, []
    reports = prepared_output_dir(options)
    reports = reports if reports.is_absolute() else folder / reports
    due = due_control(reports, options.suite, options.control_every, options.model)
    if due is None:
        return options, []
    good, staging = due
    hashes = {good.variant_name(k): h for k, h in (good.meta.skill_hashes or {}).items()}
    controls, told = [], []
    for v in load_variants(folder / options.skill_dir, options.variants):
        if v.artifact is None:
            continue
        atomic_write_text(staging / f"{v.name}.md", v.artifact)
        kept = reports / KNOWN_GOOD_STORE / f"{hashes.get(v.name)}.md"
        if hashes.get(v.name) not in (None, v.sha256) and kept.is_file():
            atomic_write_text(staging / f"{v.name}{KNOWN_GOOD}.md", kept.read_text(encoding="utf-8"))
            controls.append(f"{v.name}{KNOWN_GOOD}")
            told.append(control_told(v.name, good, str(hashes[v.name])))
    if not controls:
        return options, []
    update = {"skill_dir": str(staging), "variants": (*options.variants, *controls), "cache": False}
    return options.model_copy(update=update), told
