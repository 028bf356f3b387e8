"""A trigger suite's same-night control, as a sample suite's (flows/modes/sample/control.py): a night
whose skill changed since the last night that passed also installs that night's skill folder (kept by
content hash) as the variant ``<label>@good``, paired by query, so the regression verdict is tonight's
skill against tonight's control and the drift verdict the control against its own night
(``flows/report/regression.py``, each query scored by the share of its sessions that did what it
expects). The night reads no cache: every arm meets tonight's world.

Controls run for suites of one agent whose variants each install one skill or plugin (a skill, or an
A/B of its folders); a routing set, an environment or several agents run none."""

from __future__ import annotations

import shutil
from pathlib import Path

from executors.contents import copy_tree
from flows.inputs.skill_config import agent_list
from flows.modes.triggers.plan import TriggerOptions, TriggerPlan, variants_of
from flows.report.regression import KNOWN_GOOD, KNOWN_GOOD_STORE, control_told, due_control, passed
from flows.report.schema import Report


def keep_known_good(plan: TriggerPlan, report: Report, results: Path) -> None:
    """A controlled suite's night that did not regress: each variant's skill folders become known
    good ones (folders, unlike sample mode's texts: kept only where a control may ask for them)."""
    if not plan.options.suite or not plan.options.same_night_control or not passed(report):
        return
    for v in plan.variants:
        kept = results / KNOWN_GOOD_STORE / v.sha256
        if v.label.endswith(KNOWN_GOOD) or v.environment is not None or kept.exists():
            continue
        partial = kept.with_name(f"{kept.name}.partial")  # renamed whole: a kept folder is complete
        shutil.rmtree(partial, ignore_errors=True)
        for s in v.skills:
            copy_tree(s.path, partial / s.path.name, f"skill {s.name}")
        try:
            partial.rename(kept)
        except OSError:  # another run of the suite kept the same folder first
            shutil.rmtree(partial, ignore_errors=True)


def with_controls(options: TriggerOptions, folder: Path) -> tuple[TriggerOptions, list[str]]:
    """The night's options with a control variant for each variant whose skill changed since the last
    night that passed (its folder kept), and what the night was told; the options as given otherwise."""
    if (
        not options.same_night_control
        or not options.suite
        or not options.skill
        or options.skills_dir
        or options.environment
        or options.from_home
        or len(agent_list(options.runner)) > 1
    ):
        return options, []
    results = folder / options.results_dir
    variants, _ = variants_of(options, folder)
    due = due_control(results, options.suite, options.control_every)
    if due is None or any(len(v.skills) != 1 for v in variants):
        return options, []
    good, staging = due
    hashes = {good.variant_name(k): h for k, h in (good.meta.skill_hashes or {}).items()}
    kept = {  # label -> last good night's folder of its skill, where it changed since and was kept
        v.label: results / KNOWN_GOOD_STORE / str(hashes[v.label]) / v.skills[0].path.name
        for v in variants
        if hashes.get(v.label) not in (None, v.sha256)
    }
    kept = {label: path for label, path in kept.items() if path.is_dir()}
    if not kept:
        return options, []
    # every variant's folder staged under its label (the label of one skill's folders is their parent's
    # name), then each control under its variant's label and @good
    skills = [
        copy_tree(v.skills[0].path, staging / v.label / v.skills[0].path.name, "--skill") for v in variants
    ]
    skills += [
        copy_tree(path, staging / f"{label}{KNOWN_GOOD}" / path.name, "--skill")
        for label, path in kept.items()
    ]
    told = [control_told(label, good, str(hashes[label])) for label in kept]
    return options.model_copy(update={"skill": tuple(str(p) for p in skills), "cache": False}), told
