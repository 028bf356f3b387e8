"""The --judge-gold file: loaded as samples are, each problem one line naming the file, item and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executors.errors import InputError
from flows.inputs.gold import load_gold

GOOD = {"id": "g1", "prompt": "p", "output": "o", "score": 4, "rubric": "r"}


def lines(path: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        load_gold(path)
    return info.value.lines


def test_good_file(tmp_path: Path) -> None:
    path = tmp_path / "gold.yaml"
    path.write_text(json.dumps([GOOD, GOOD | {"id": "g2", "dimensions": {"a": "b"}, "rubric": None}]))
    gold = load_gold(path)
    assert [i.id for i in gold.items] == ["g1", "g2"] and len(gold.sha256) == 64
    assert gold.items[1].sample.dimensions == {"a": "b"}


def test_each_problem_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "gold.json"
    path.write_text(
        json.dumps(
            [
                GOOD | {"score": 7},
                GOOD | {"id": "g2", "rubric": None},
                GOOD | {"id": "g3", "colour": "red"},
                GOOD,
                "text",
            ]
        )
    )
    assert lines(path) == [
        f"{path}: item g1: score: Input should be less than or equal to 5 (got 7)",
        f"{path}: item g2: rubric: give a rubric or dimensions (what the judge scores against)",
        f"{path}: item g3: colour: unknown field",
        f"{path}: item #5: expected an object, got str",
    ]
    assert lines(tmp_path / "missing.yaml") == [f"{tmp_path / 'missing.yaml'}: file not found (--judge-gold)"]
    path.write_text(json.dumps([GOOD]))
    assert lines(path) == [f"{path}: at least 2 scored outputs are needed to measure agreement"]
