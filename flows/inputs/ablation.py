"""--ablate: leave-one-section-out variants of a markdown artifact (a SKILL.md or a prompt file).

In agentic mode (``skill run --ablate``) the artifact is the skill's SKILL.md and each variant is an
extra arm: a copy of the skill folder whose SKILL.md lacks one section.

Sections are found by heading: the shallowest heading level that occurs at least twice (so a
single title above them is kept), or every heading named with --ablate-sections (any level). A
section runs from its heading to the next heading of the same or a shallower level. Front matter
and headings inside fenced code are never sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from executors.contents import copy_tree
from executors.errors import InputError
from flows.inputs.files import read_text
from flows.inputs.options import BenchOptions
from flows.inputs.samples import Variant, load_variants
from tasks.schema import Arm

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")


@dataclass(frozen=True)
class Section:
    """One heading's section: lines [start, end) of the artifact."""

    heading: str
    level: int
    start: int
    end: int


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every markdown heading outside front matter and code fences."""
    found, fenced, i = [], False, 0
    if lines and lines[0].strip() == "---":  # front matter
        i = next((k + 1 for k in range(1, len(lines)) if lines[k].strip() == "---"), 0)
    for k in range(i, len(lines)):
        if FENCE.match(lines[k]):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(lines[k])
        if match:
            found.append((k, len(match.group(1)), match.group(2).strip()))
    return found


def sections(text: str, named: tuple[str, ...] = ()) -> list[Section]:
    """The sections to leave out, in the artifact's order."""
    lines = text.splitlines(keepends=True)
    heads = headings(lines)
    if named:
        wanted = {n.strip().lower() for n in named}
        chosen = [h for h in heads if h[2].lower() in wanted]
    else:
        levels = sorted({lvl for _, lvl, _ in heads})
        level = next(
            (lvl for lvl in levels if sum(1 for h in heads if h[1] == lvl) >= 2), levels[-1] if levels else 0
        )
        chosen = [h for h in heads if h[1] == level]
    out = []
    for k, level, text_ in chosen:
        end = next((j for j, lvl, _ in heads if j > k and lvl <= level), len(lines))
        out.append(Section(text_, level, k, end))
    return out


def without(text: str, section: Section) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[: section.start] + lines[section.end :])


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")[:40] or "section"


def ablated_variants(full: Variant, named: tuple[str, ...]) -> tuple[list[Variant], dict[str, str]]:
    """The full variant first, then one variant per section left out; and variant name -> heading."""
    if full.artifact is None or full.path is None:
        raise InputError(f"--ablate: {full.name!r} has no artifact to take sections out of")
    found = sections(full.artifact, named)
    if named:
        present = {s.heading.lower() for s in found}
        missing = [n for n in named if n.strip().lower() not in present]
        if missing:
            listed = ", ".join(h for _, _, h in headings(full.artifact.splitlines(keepends=True))) or "none"
            raise InputError(
                f"{full.path}: --ablate-sections: no heading {', '.join(map(repr, missing))} (headings: {listed})"
            )
    if not found:
        raise InputError(f"{full.path}: --ablate: no markdown heading, so no section to leave out")
    variants, names = [full], {}
    for s in found:
        name = f"{full.name}-no-{slug(s.heading)}"
        while name in names or name == full.name:
            name += "-"
        names[name] = s.heading
        variants.append(Variant(name, without(full.artifact, s), full.path))
    return variants, names


def plan_variants(skill_dir: Path, options: BenchOptions) -> tuple[list[Variant], dict[str, str]]:
    """The run's variants: --variants, or with --ablate the full artifact and its ablations."""
    if not options.ablate:
        if options.ablate_sections:
            raise InputError(
                "--ablate-sections: needs --ablate VARIANT (the artifact to take sections out of)"
            )
        return load_variants(skill_dir, options.variants), {}
    (full,) = load_variants(skill_dir, (options.ablate,))
    return ablated_variants(full, options.ablate_sections)


@dataclass(frozen=True)
class SkillAblation:
    """One extra agentic arm: the skill with one section of its SKILL.md left out."""

    arm: str  # with-skill-no-<section>
    heading: str
    skill_md: str  # SKILL.md without the section


def skill_ablations(skill_md: Path, text: str, named: tuple[str, ...]) -> list[SkillAblation]:
    """One arm per section of SKILL.md, named after the with-skill arm. Front matter is never a
    section, so every arm sees the same skill name and description."""
    variants, names = ablated_variants(Variant(str(Arm.WITH_SKILL), text, str(skill_md)), named)
    return [SkillAblation(v.name, names[v.name], v.artifact or "") for v in variants[1:]]


def plan_skill_ablations(skill_dir: Path, ablate: bool, named: tuple[str, ...]) -> list[SkillAblation]:
    """``skill run``'s extra arms: none without --ablate."""
    if not ablate:
        if named:
            raise InputError("--ablate-sections: needs --ablate (the sections are SKILL.md's)")
        return []
    path = skill_dir / "SKILL.md"
    if not path.is_file():  # a whole plugin: its skills are ablated one at a time, as skills
        raise InputError(
            f"{skill_dir}: --ablate: no SKILL.md here (a plugin?); ablate one of its skills with "
            "--skill path/to/plugin/skills/NAME"
        )
    return skill_ablations(path, read_text(path), named)


def write_ablated_skills(
    skill_dir: Path, skill_name: str, ablations: list[SkillAblation], folder: Path
) -> dict[str, Path]:
    """Each ablated arm's copy of the skill folder (same folder name, every other file kept), made
    once per run under ``folder``; returns arm -> the copy."""
    out = {}
    for a in ablations:
        copy = folder / a.arm / skill_name
        copy_tree(skill_dir, copy, "skill")
        (copy / "SKILL.md").write_text(a.skill_md, encoding="utf-8")
        out[a.arm] = copy
    return out
