"""Sections of a markdown artifact, and the variants that leave one out."""

from __future__ import annotations

import pytest

from executors.errors import InputError
from flows.inputs.ablation import ablated_variants, sections, without
from flows.inputs.samples import Variant

DOC = """---
title: x
# not a heading
---
# Title
intro
## A
a text
### A.1
deep
## B
```
## fenced, not a heading
```
b text
## C
c text
"""


def test_sections_at_the_shallowest_repeated_level() -> None:
    found = sections(DOC)
    assert [(s.heading, s.level) for s in found] == [("A", 2), ("B", 2), ("C", 2)]
    assert without(DOC, found[0]).count("deep") == 0 and "## B" in without(DOC, found[0])
    assert "fenced" not in without(DOC, found[1]) and "b text" not in without(DOC, found[1])
    assert without(DOC, found[2]).endswith("```\nb text\n")


def test_named_sections_at_any_level() -> None:
    assert [s.heading for s in sections(DOC, ("a.1", "C"))] == ["A.1", "C"]


def test_ablated_variants_and_errors() -> None:
    full = Variant("v2", DOC, "skills/v2.md")
    variants, names = ablated_variants(full, ())
    assert [v.name for v in variants] == ["v2", "v2-no-a", "v2-no-b", "v2-no-c"]
    assert names == {"v2-no-a": "A", "v2-no-b": "B", "v2-no-c": "C"}
    with pytest.raises(
        InputError, match=r"skills/v2.md: --ablate-sections: no heading 'Z' \(headings: Title, A"
    ):
        ablated_variants(full, ("Z",))
    with pytest.raises(InputError, match="no markdown heading"):
        ablated_variants(Variant("v1", "just text", "skills/v1.md"), ())
