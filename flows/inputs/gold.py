"""--judge-gold: a file of outputs a human has scored, to check the judge before a run.

YAML or JSON, an array of ``{id, prompt, output, score, rubric | dimensions}`` (``score`` a whole
number of stars, 1-5). Each problem is one line naming the file, the item and the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from executors.errors import InputError
from flows.inputs.files import located, parse_data, read_text, validation_lines
from graders.schema import Sample


class GoldItem(BaseModel):
    """One human-scored output."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    output: str
    score: int = Field(ge=1, le=5, description="the human's score, 1-5 stars")
    rubric: str | None = None
    dimensions: dict[str, str] | None = None

    @property
    def sample(self) -> Sample:
        """The item as a sample, so the judge sees exactly the prompt a run's judge would."""
        return Sample(sample_id=self.id, prompt=self.prompt, rubric=self.rubric, dimensions=self.dimensions)


@dataclass(frozen=True)
class Gold:
    path: Path
    sha256: str
    items: list[GoldItem]


FIELDS = list(GoldItem.model_fields)


def load_gold(path: Path) -> Gold:
    """The gold file, validated; InputError with one line per problem."""
    if not path.is_file():
        raise InputError(f"{path}: file not found (--judge-gold)")
    text = read_text(path)
    data = parse_data(path, text)
    if not isinstance(data, list):
        raise InputError(f"{path}: expected an array of scored outputs, got {type(data).__name__}")
    problems: list[str] = []
    items: list[GoldItem] = []
    seen: set[str] = set()
    for index, raw in enumerate(data):
        name = str(raw.get("id")) if isinstance(raw, dict) and raw.get("id") is not None else f"#{index + 1}"
        prefix = f"{path}: item {name}"
        if not isinstance(raw, dict):
            problems.append(f"{prefix}: expected an object, got {type(raw).__name__}")
            continue
        try:
            item = GoldItem(**{**raw, "id": str(raw["id"])} if "id" in raw else raw)
        except ValidationError as exc:
            problems += validation_lines(exc, located(prefix), FIELDS)
            continue
        if not (item.rubric or item.dimensions):
            problems.append(f"{prefix}: rubric: give a rubric or dimensions (what the judge scores against)")
        if item.id in seen:
            problems.append(f"{prefix}: id: duplicate")
        seen.add(item.id)
        items.append(item)
    if problems:
        raise InputError(problems)
    if len(items) < 2:
        raise InputError(f"{path}: at least 2 scored outputs are needed to measure agreement")
    return Gold(path, hashlib.sha256(text.encode()).hexdigest(), items)
