"""Report parts: entries that set the same fields share one set of their names, and stay models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from flows.report.build import DUMP
from tasks.stats.figures import CaseStats
from tasks.stats.models import FieldsSets, SharedNames, _may_hold_model
from tests.flows.report.synthetic import make_report


def test_entries_share_their_fields_sets_and_refuse_an_assignment(tmp_path: Path) -> None:
    report = make_report(tmp_path, {"v1": [3.0, 4.0, 5.0], "v2": [4.0, 4.0, 5.0]}, repeat=2)
    before = report.model_dump_json(**DUMP)
    sets = FieldsSets()
    for case in report.results:
        sets.share(case)
    entries = [v for case in report.results for v in case.variants.values()]
    assert all(type(e.model_fields_set) is SharedNames for e in entries)
    # every model nested anywhere in a case (found here by its values, not by its annotations)
    nested = list(everything_in(report.results))
    assert len(nested) > 4 * len(report.results)
    assert all(type(m.model_fields_set) is SharedNames for m in nested)
    assert len({id(e.model_fields_set) for e in entries}) == 1  # the same fields set: one copy
    stats = [e.case_stats for e in entries]
    assert len({id(s.model_fields_set) for s in stats if isinstance(s, CaseStats)}) == 1
    assert report.model_dump_json(**DUMP) == before
    changed = entries[0].model_copy(update={"output": "changed", "judge_raw": "raw"})
    assert changed.output == "changed" and type(changed.model_fields_set) is set
    assert "judge_raw" in changed.model_fields_set and "judge_raw" not in entries[1].model_fields_set
    assert report.model_dump_json(**DUMP) == before
    with pytest.raises(TypeError, match="shared"):
        entries[0].output = "changed"  # adding its name to every entry's set fails loudly


def everything_in(values: object) -> Iterator[BaseModel]:
    if isinstance(values, BaseModel):
        yield values
        values = list(values.__dict__.values())
    if isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, list | tuple):
        for value in values:
            yield from everything_in(value)


@pytest.mark.parametrize(
    ("annotation", "holds"),
    [
        (int, False),
        (str | None, False),
        (list[str], False),
        (dict[str, float], False),
        (Literal["a", "b"], False),
        (CaseStats, True),
        (CaseStats | None, True),
        (list[CaseStats], True),
        (dict[str, list[CaseStats]], True),
        (dict[str, Any], True),
        (Any, True),
        (list, True),
    ],
)
def test_which_fields_may_hold_a_model(annotation: object, holds: bool) -> None:
    assert _may_hold_model(annotation) is holds
