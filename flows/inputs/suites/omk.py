"""oh-my-knowledge projects, read unchanged: its ``eval.yaml`` (``--config eval.yaml``) and its
``--control X --treatment Y,Z`` naming of variants.

An eval.yaml names the samples file and the variants, each ``{name, role: control|treatment,
artifact}``, plus run options. Here it becomes skillab's options: the variants in order, control
first; ``control`` the one variant with role control; the options it shares with skillab mapped
(``timeoutMs`` to seconds, ``noJudge`` to ``judge: false``, ...; flags still win). An artifact is
resolved as oh-my-knowledge does: ``baseline`` is no artifact; a path (``./x.md``, ``a/b``,
``*.md``) is relative to the eval.yaml's folder, a directory meaning its ``SKILL.md``; a bare name
is ``<skill-dir>/<name>.md`` or ``<skill-dir>/<name>/SKILL.md``. On the command line, control and
treatment expressions are resolved the same way, paths relative to the working folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from executors.errors import InputError
from executors.parsing import JsonObject
from flows.inputs.files import parse_data, read_text
from flows.inputs.samples import BASELINE, Variant

ROLES = ("control", "treatment")
#: oh-my-knowledge executor names -> skillab's.
EXECUTOR_NAMES = {"openai-api": "openai", "anthropic-api": "anthropic", "gemini-api": "gemini"}
#: eval.yaml options with no counterpart in a skillab sample-mode run: read, reported, not used.
UNUSED = (
    "mcpConfig",
    "goldDir",
    "bootstrap",
    "bootstrapSamples",
    "lengthDebias",
    "strictBaseline",
    "effort",
    "skipDoctor",
    "holdoutRatio",
)
# Keys oh-my-knowledge removed: it refuses them, so a project that has them never ran there either.
REMOVED = {"judgeModel": "judgeModels", "judgeExecutor": "judgeModels", "blind": "(nothing)"}


@dataclass(frozen=True)
class VariantSpec:
    name: str
    role: str
    artifact: str
    field: str  # where it was written, for errors: "variants[1].artifact" or "--treatment"


@dataclass
class Project:
    path: Path
    samples: Path
    variants: list[VariantSpec]
    options: JsonObject = field(default_factory=dict)
    unused: list[str] = field(default_factory=list)

    @property
    def control(self) -> str:
        return next(v.name for v in self.variants if v.role == "control")


def _string(data: JsonObject, key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}.{key}: required, a non-empty string")
    return value


def _variant(path: Path, i: int, raw: Any) -> VariantSpec:
    where = f"{path}: variants[{i}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected an object {{name, role, artifact}}")
    if "git" in raw:
        raise InputError(
            f"{where}.git: remote git variants are not read by skillab; check the skill out and "
            "name it in artifact"
        )
    name = _string(raw, "name", where)
    role = raw.get("role")
    if role not in ROLES:
        raise InputError(f"{where}.role: must be 'control' or 'treatment', got {role!r}")
    artifact = _string(raw, "artifact", where)
    if artifact.startswith("git:"):
        raise InputError(f"{where}.artifact: git:<ref>:<skill> is not read by skillab; name a file")
    if raw.get("cwd") is not None and artifact == BASELINE:
        raise InputError(f"{where}.cwd: baseline cannot be bound to a cwd")
    return VariantSpec(name, role, artifact, f"variants[{i}].artifact")


def _options(path: Path, data: JsonObject) -> JsonObject:
    """The eval.yaml options skillab shares, under skillab's names; a wrong type is one line."""
    out: JsonObject = {}
    kinds: dict[str, tuple[type, ...]] = {
        "executor": (str,),
        "model": (str,),
        "concurrency": (int,),
        "timeoutMs": (int, float),
        "noCache": (bool,),
        "noJudge": (bool,),
        "noDiagnostic": (bool,),
        "repeat": (int,),
        "judgeRepeat": (int,),
    }
    for key, kind in kinds.items():
        value = data.get(key)
        if value is not None and (
            (isinstance(value, bool) and bool not in kind) or not isinstance(value, kind)
        ):
            raise InputError(f"{path}: {key}: must be a {kind[0].__name__}, got {value!r}")
    if "executor" in data:
        out["executor"] = EXECUTOR_NAMES.get(data["executor"], data["executor"])
    for key, name in (("model", "model"), ("concurrency", "concurrency"), ("repeat", "repeat")):
        if key in data:
            out[name] = data[key]
    if "judgeRepeat" in data:
        out["judge_repeat"] = data["judgeRepeat"]
    if "timeoutMs" in data:
        out["timeout"] = data["timeoutMs"] / 1000
    for key, name in (("noCache", "cache"), ("noJudge", "judge"), ("noDiagnostic", "diagnose")):
        if key in data:
            out[name] = not data[key]
    out |= _judges_and_budget(path, data)
    return out


def _judges_and_budget(path: Path, data: JsonObject) -> JsonObject:
    out: JsonObject = {}
    judges = data.get("judgeModels")
    if judges is not None:
        if not isinstance(judges, list) or not judges:
            raise InputError(f"{path}: judgeModels: must be a non-empty list of {{executor, model}}")
        specs = []
        for i, judge in enumerate(judges):
            if not isinstance(judge, dict):
                raise InputError(f"{path}: judgeModels[{i}]: expected an object {{executor, model}}")
            executor = _string(judge, "executor", f"{path}: judgeModels[{i}]")
            model = _string(judge, "model", f"{path}: judgeModels[{i}]")
            specs.append(f"{EXECUTOR_NAMES.get(executor, executor)}:{model}")
        out["judge_models"] = tuple(specs)
    budget = data.get("budget")
    if budget is not None:
        if not isinstance(budget, dict):
            raise InputError(f"{path}: budget: must be an object")
        total = budget.get("totalUSD")
        if total is not None:
            if isinstance(total, bool) or not isinstance(total, int | float) or total < 0:
                raise InputError(f"{path}: budget.totalUSD: must be a number >= 0, got {total!r}")
            out["budget_usd"] = total
    return out


def load_project(path: Path) -> Project:
    """Read and check an eval.yaml: every problem is one line naming the file and the field."""
    data = parse_data(path, read_text(path))
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping (samples, variants, ...)")
    for key, instead in REMOVED.items():
        if key in data:
            raise InputError(f"{path}: {key}: removed from oh-my-knowledge's format; use {instead}")
    if not isinstance(data.get("samples"), str) or not data["samples"].strip():
        raise InputError(f"{path}: samples: required, the samples file (relative to this file)")
    samples = path.parent / data["samples"]
    if not samples.exists():
        raise InputError(f"{path}: samples: file not found: {samples}")
    raw = data.get("variants")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: variants: required, a non-empty list of {{name, role, artifact}}")
    variants = [_variant(path, i, v) for i, v in enumerate(raw)]
    names = [v.name for v in variants]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise InputError(f"{path}: variants: name {duplicate!r} appears twice")
    controls = [v.name for v in variants if v.role == "control"]
    if len(controls) != 1:
        raise InputError(
            f"{path}: variants: exactly one variant needs role control (found {len(controls)}); "
            "the treatments are compared with it"
        )
    ordered = [v for v in variants if v.role == "control"] + [v for v in variants if v.role != "control"]
    unused = [k for k in UNUSED if k in data]
    unused += [f"variants[{i}].cwd" for i, v in enumerate(raw) if isinstance(v, dict) and v.get("cwd")]
    return Project(path.resolve(), samples.resolve(), ordered, _options(path, data), unused)


def project_options(path: Path, given: JsonObject) -> JsonObject:
    """Options from an eval.yaml, for BenchOptions; flags in ``given`` win, and a control or
    treatment flag replaces the file's variants (as in oh-my-knowledge)."""
    project = load_project(path)
    out = project.options | {"project": str(project.path), "samples": str(project.samples)}
    out |= {"variants": tuple(v.name for v in project.variants), "control": project.control}
    if "control" in given and "treatment" not in given:
        raise InputError(
            "--control: with an eval.yaml also pass --treatment (the command line's roles replace the file's)"
        )
    if "treatment" in given:
        del out["variants"], out["control"]
    return out


def short_name(expr: str) -> str:
    """The variant name oh-my-knowledge gives an expression: a path's file stem, or its folder's
    name for a SKILL.md or a directory."""
    if expr == BASELINE or "/" not in expr:
        return expr
    path = Path(expr.rstrip("/"))
    if path.name == "SKILL.md":
        return path.parent.name
    return re.sub(r"\.md$", "", path.name, flags=re.IGNORECASE)


def looks_like_path(expr: str) -> bool:
    return "/" in expr or expr.lower().endswith((".md", ".yaml", ".yml", ".json"))


def resolve(spec: VariantSpec, base: Path, skill_dir: Path, where: str) -> Variant:
    """The artifact an expression names (see the module docstring); one line when it is missing."""
    expr = spec.artifact
    if expr == BASELINE:
        return Variant(spec.name, None, None)
    if looks_like_path(expr):
        path = (base / expr).resolve()
        candidates = [path / "SKILL.md"] if path.is_dir() else [path]
    else:
        candidates = [skill_dir / f"{expr}.md", skill_dir / expr / "SKILL.md"]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise InputError(f"{where}{spec.field}: skill not found: {' or '.join(map(str, candidates))}")
    return Variant(spec.name, read_text(found), str(found))


def command_line_specs(control: str | None, treatments: tuple[str, ...]) -> list[VariantSpec]:
    if not control:
        raise InputError("--treatment: needs --control, the variant the treatments are compared with")
    specs = [VariantSpec(short_name(control), "control", control, "--control")]
    specs += [VariantSpec(short_name(t), "treatment", t, "--treatment") for t in treatments]
    names = [s.name for s in specs]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise InputError(f"--control/--treatment: variant {duplicate!r} named twice")
    return specs


def variants_of(
    project: str | None,
    control: str | None,
    treatments: tuple[str, ...],
    names: tuple[str, ...],
    cwd: Path,
    skill_dir: Path,
) -> tuple[list[Variant], str]:
    """The variants of an oh-my-knowledge run and the control's name: the command line's
    --control/--treatment when given, else the eval.yaml's (``names``: those chosen, in order)."""
    if treatments:
        specs = command_line_specs(control, treatments)
        return [resolve(s, cwd, skill_dir, "") for s in specs], specs[0].name
    if project is None:
        raise InputError("--control: --treatment names the variants compared with it")
    loaded = load_project(Path(project))
    by_name = {v.name: v for v in loaded.variants}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise InputError(
            f"--variants: {', '.join(unknown)} not in {loaded.path} (its variants: {', '.join(by_name)})"
        )
    where = f"{loaded.path}: "
    variants = [resolve(by_name[n], loaded.path.parent, skill_dir, where) for n in names]
    return variants, control or loaded.control


def notices(project: str | None) -> list[str]:
    """What of an eval.yaml a sample-mode run reads but does not use, for the user to know."""
    if project is None:
        return []
    unused = load_project(Path(project)).unused
    if not unused:
        return []
    return [f"{project}: not used in a skillab sample-mode run: {', '.join(unused)}"]
