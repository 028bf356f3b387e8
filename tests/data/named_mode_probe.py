"""What the rule against naming a mode outside its folder must find (tests/test_layering.py)."""

from typing import Literal


def probe(report: object, mode: str) -> object:
    if mode == "trigger":
        kind: Literal["sample"] = "sample"
        return kind
    return isinstance(report, TriggerReport)  # type: ignore[name-defined]  # noqa: F821
