"""Loading and validating every input before any model call. Each problem becomes one line."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from executors.contents import inspect_file
from executors.errors import InputError, where
from executors.parsing import JsonObject
from flows.inputs.files import closest, located, options_file, parse_data, read_text, validation_lines
from flows.inputs.options import BenchOptions
from graders import registry
from graders.schema import Assertion, JudgedAssertion, Sample

SAMPLE_FILES = ("eval-samples.json", "eval-samples.yaml", "eval-samples.yml")
CONFIG_FILE = "skillab.yaml"
BASELINE = "baseline"


# ---------------------------------------------------------------- config


def load_config(path: Path) -> JsonObject:
    """Options from skillab.yaml: the same names as the flags (dashes or underscores); an
    oh-my-knowledge eval.yaml is read by ``flows.inputs.suites.omk``: here it is only named, as the project."""
    data = parse_data(path, read_text(path))
    if is_omk_project(data):
        return {"project": str(path)}
    lists = frozenset({"variants", "treatment", "judge_models", "ablate_sections"})
    return options_file(path, BenchOptions, lists, data)


def is_omk_project(data: Any) -> bool:
    """An oh-my-knowledge eval.yaml (variants are objects with a role), not a skillab.yaml."""
    variants = data.get("variants") if isinstance(data, dict) else None
    return isinstance(variants, list) and any(isinstance(v, dict) for v in variants)


# ---------------------------------------------------------------- samples


def find_samples(given: str | None, base: Path = Path()) -> Path:
    if given:
        return Path(given)
    for name in SAMPLE_FILES:
        if (base / name).is_file():
            return base / name
    raise InputError(f"{base.resolve()}: no samples file ({', '.join(SAMPLE_FILES)}); pass --samples PATH")


SAMPLE_FIELDS = [f for f in Sample.model_fields if f != "source_dir"]


def raw_problems(raw: JsonObject, prefix: str) -> list[str]:
    """What is wrong with a sample before it can be validated as one (its id)."""
    sample_id = raw.get("sample_id")
    # bool is an int in Python: `sample_id: true` must not become the case "True"
    if sample_id is not None and (isinstance(sample_id, bool) or not isinstance(sample_id, str | int)):
        return [f"{prefix}: sample_id: must be a string"]
    if isinstance(sample_id, str) and not sample_id.strip():
        return [f"{prefix}: sample_id: must not be empty"]
    if "source_dir" in raw:
        return [f"{prefix}: source_dir: unknown field"]
    return []


def parse_assertions(raw: list[Any], prefix: str, source_dir: str) -> tuple[list[Assertion], list[str]]:
    """Each assertion by its type's model and load-time checks; a problem names its field."""
    parsed, problems = [], []
    for i, item in enumerate(raw):
        try:
            parsed.append(registry.parse(item, source_dir))
        except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable file
            problems.append(f"{prefix}: assertions[{i}].fn: cannot read: {exc}")
        except ValueError as exc:
            field, _, message = str(exc).partition(": ")
            if field.isidentifier():  # a parameter's name, known or unknown
                problems.append(f"{prefix}: assertions[{i}].{field}: {message}")
            else:
                problems.append(f"{prefix}: assertions[{i}]: {exc}")
    return parsed, problems


def grounding_problems(sample: Sample, prefix: str) -> list[str]:
    """The RAG judgements that ground on a reference need it, or the sample's context."""
    return [
        f"{prefix}: assertions[{i}].reference: {a.type} needs it, or the sample's context"
        for i, a in enumerate(sample.assertions)
        if a.type in {"faithfulness", "context_recall"}
        and isinstance(a, JudgedAssertion)
        and not (a.reference or sample.context)
    ]


#: Sample fields of oh-my-knowledge 0.54 that drive its agent runs (working folder, tool mocks,
#: allowed tools) or describe the sample (capability, difficulty, ...): accepted, unused here.
OMK_SAMPLE_FIELDS = frozenset(
    {
        "cwd",
        "mocks",
        "mocksStrict",
        "allowedTools",
        "expectedTools",
        "capability",
        "environment",
        "difficulty",
        "construct",
        "provenance",
        "tripwire",
        "covers",
    }
)


def load_samples(path: Path) -> list[Sample]:
    if path.exists():  # a fifo would hang the read, /dev/zero fill the memory: refused, one line
        inspect_file(path.resolve(), f"samples file {path}")
    data = parse_data(path, read_text(path))
    if isinstance(data, dict) and isinstance(data.get("samples"), list):
        data = data["samples"]  # oh-my-knowledge's wrapper: {requires: ..., samples: [...]}
    if not isinstance(data, list):
        raise InputError(f"{path}: expected an array of samples, got {type(data).__name__}")
    problems: list[str] = []
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    source_dir = str(path.resolve().parent)
    for index, raw in enumerate(data):
        if not isinstance(raw, dict):
            problems.append(f"{path}: sample #{index + 1}: expected an object, got {type(raw).__name__}")
            continue
        sample_id = raw.get("sample_id")
        usable = sample_id is not None and not isinstance(sample_id, bool) and str(sample_id).strip()
        case = str(sample_id) if usable else f"#{index + 1}"
        if usable and not case.isprintable():  # a control character would break the line
            case = repr(case)
        prefix = where(path, case)
        shape = raw_problems(raw, prefix)
        if shape:
            problems += shape
            continue
        fields = {k: v for k, v in raw.items() if k not in OMK_SAMPLE_FIELDS} | {"source_dir": source_dir}
        if sample_id is not None:
            fields["sample_id"] = str(sample_id)
        wrong: list[str] = []
        if isinstance(raw.get("assertions"), list):
            fields["assertions"], wrong = parse_assertions(raw["assertions"], prefix, source_dir)
        try:
            sample = Sample(**fields)
        except ValidationError as exc:
            problems.extend(validation_lines(exc, located(prefix), SAMPLE_FIELDS))
            sample = None
        problems += wrong
        if sample is None:
            continue
        if not sample.prompt.strip():
            problems.append(f"{prefix}: prompt: must not be empty")
        if sample.sample_id in seen:
            problems.append(f"{prefix}: sample_id: duplicate of sample #{seen[sample.sample_id] + 1}")
        seen.setdefault(sample.sample_id, index)
        problems += grounding_problems(sample, prefix)
        samples.append(sample)
    if problems:
        raise InputError(problems)
    if not samples:
        raise InputError(f"{path}: no samples")
    return samples


# ---------------------------------------------------------------- variants


@dataclass(frozen=True)
class Variant:
    name: str
    artifact: str | None  # None for the baseline
    path: str | None

    @property
    def sha256(self) -> str | None:
        return hashlib.sha256(self.artifact.encode()).hexdigest() if self.artifact is not None else None

    @property
    def size(self) -> int | None:
        """The artifact's bytes of UTF-8 (a changed artifact is reported with the change's size)."""
        return len(self.artifact.encode()) if self.artifact is not None else None


def available_variants(skill_dir: Path) -> list[str]:
    if not skill_dir.is_dir():
        return []
    names = {p.stem for p in skill_dir.glob("*.md")}
    names |= {p.parent.name for p in skill_dir.glob("*/SKILL.md")}
    return sorted(names)


def load_variants(skill_dir: Path, names: tuple[str, ...]) -> list[Variant]:
    if not names:
        raise InputError("--variants: name at least one variant")
    if len(set(names)) != len(names):
        raise InputError(f"--variants: duplicate variant name in {','.join(names)}")
    variants, problems = [], []
    found = available_variants(skill_dir)
    for name in names:
        if name == BASELINE:
            variants.append(Variant(BASELINE, None, None))
            continue
        for path in (skill_dir / f"{name}.md", skill_dir / name / "SKILL.md"):
            if path.is_file():
                variants.append(Variant(name, read_text(path), str(path)))
                break
        else:
            listing = ", ".join(found) if found else "none"
            problems.append(
                f"{skill_dir}: variant {name!r}: no {name}.md or {name}/SKILL.md{closest(name, found)} "
                f"(found: {listing}; 'baseline' means no artifact)"
            )
    if problems:
        raise InputError(problems)
    return variants
