"""Prices in USD per million tokens, overridable by the user with a YAML or JSON file.

Matching is by longest prefix of the model id, so dated ids ("gpt-4o-2024-08-06") find their family.
Unknown models cost 0 and the report says the price was unknown.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

from executors.errors import InputError

# (input, output) USD per 1M tokens, public list prices.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4": (1.00, 5.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.0-flash": (0.10, 0.40),
}


def price(entry: dict[object, object], key: str, path: Path, model: object) -> float:
    """A price from a user's file: a finite, non-negative number (a negative price would let
    --budget-usd never trigger)."""
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(
            f"{path}: model {model!r}: {key}: must be a price >= 0 in USD per 1M tokens, got {value!r}"
        )
    return float(value)


class PriceTable:
    def __init__(self, prices: dict[str, tuple[float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)

    @classmethod
    def from_file(cls, path: Path) -> PriceTable:
        """Load overrides: ``{model: {input: x, output: y}}`` merged over the defaults."""
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError) as exc:
            raise InputError(f"{path}: not a readable price file: {str(exc).splitlines()[0]}") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a mapping of model -> {{input, output}}")
        table = cls()
        for model, entry in data.items():
            if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
                raise InputError(f"{path}: model {model!r}: field 'input'/'output' missing")
            table.prices[str(model)] = (
                price(entry, "input", path, model),
                price(entry, "output", path, model),
            )
        return table

    def lookup(self, model: str) -> tuple[float, float] | None:
        best = max((p for p in self.prices if model.startswith(p)), key=len, default=None)
        return None if best is None else self.prices[best]

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.lookup(model)
        if price is None:
            return 0.0
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
