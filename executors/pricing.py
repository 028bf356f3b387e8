"""Prices in USD per million tokens, overridable by the user with a YAML or JSON file.

Matching is by longest prefix of the model id, so dated ids ("gpt-4o-2024-08-06") find their family.
Unknown models cost 0 and the report says the price was unknown.

Each model has four prices: uncached input, output, cache write and cache read (see
``executors.schema.Usage`` for what each token count means). The defaults are the providers' list
prices. A user's file gives ``input`` and ``output`` and optionally ``cache_write`` / ``cache_read``;
a missing cache price comes from the provider's published ratio to the input price
(by the executor's vendor, ``VENDOR_RATIOS``), so price files written before prompt caching still load and price caching right.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import yaml

from executors.errors import InputError
from executors.parsing import load_json, load_yaml
from executors.schema import RunResult, Usage


class Price(NamedTuple):
    """USD per 1M tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


class CacheRatios(NamedTuple):
    """Cache write and cache read prices as multiples of the input price."""

    write: float
    read: float


# Anthropic: a 5-minute cache write costs 1.25x input, a cache read 0.1x. OpenAI: no write premium,
# cached input 0.5x on the gpt-4o / o3-mini generation (0.25x on gpt-4.1 and o4-mini, 0.1x on
# gpt-5: those are listed per model below). Gemini: implicit caching has no write premium; cached
# tokens cost 0.25x on 2.0 models and 0.1x on 2.5 models. The ratio used for a model a user adds
# is the provider's least generous one, so a saving is never overstated.
NO_DISCOUNT = CacheRatios(1.0, 1.0)
ANTHROPIC_RATIOS = CacheRatios(1.25, 0.10)
OPENAI_RATIOS = CacheRatios(1.0, 0.50)
GEMINI_RATIOS = CacheRatios(1.0, 0.25)
#: Each vendor's ratios: an executor prices by the vendor of the models it serves.
VENDOR_RATIOS = {"anthropic": ANTHROPIC_RATIOS, "openai": OPENAI_RATIOS, "google": GEMINI_RATIOS}


def _anthropic(input_price: float, output_price: float) -> Price:
    return Price(
        input_price,
        output_price,
        input_price * ANTHROPIC_RATIOS.write,
        input_price * ANTHROPIC_RATIOS.read,
    )


# (input, output, cache write, cache read) USD per 1M tokens, public list prices.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60, 0.15, 0.075),
    "gpt-4o": Price(2.50, 10.00, 2.50, 1.25),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.10, 0.025),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.40, 0.10),
    "gpt-4.1": Price(2.00, 8.00, 2.00, 0.50),
    "o3-mini": Price(1.10, 4.40, 1.10, 0.55),
    "o4-mini": Price(1.10, 4.40, 1.10, 0.275),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
    "claude-haiku-4": _anthropic(1.00, 5.00),
    "claude-3-7-sonnet": _anthropic(3.00, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.30, 0.03),
    "gemini-2.5-pro": Price(1.25, 10.00, 1.25, 0.125),
    "gemini-2.0-flash": Price(0.10, 0.40, 0.10, 0.025),
}

PRICE_FIELDS = ("input", "output", "cache_write", "cache_read")


def _price(value: Price | tuple[float, ...], ratios: CacheRatios) -> Price:
    """A full price from a 4-tuple, or from an (input, output) pair and the cache ratios."""
    if len(value) == 4:
        return Price(*map(float, value))
    input_price, output_price = map(float, value)
    return Price(input_price, output_price, input_price * ratios.write, input_price * ratios.read)


class PriceTable:
    def __init__(
        self,
        prices: Mapping[str, Price | tuple[float, ...]] | None = None,
        *,
        ratios: CacheRatios = NO_DISCOUNT,
    ) -> None:
        self.ratios = ratios
        source: Mapping[str, Price | tuple[float, ...]] = DEFAULT_PRICES if prices is None else prices
        self.prices: dict[str, Price] = {model: _price(p, ratios) for model, p in source.items()}
        self._matched: dict[str, str | None] = {}  # model -> its longest priced prefix, once looked up

    @classmethod
    def from_file(cls, path: Path, *, ratios: CacheRatios = NO_DISCOUNT) -> PriceTable:
        """Load overrides: ``{model: {input, output, cache_write?, cache_read?}}`` over the defaults.

        A missing cache price is the input price times ``ratios`` (the executor's provider)."""
        try:
            text = path.read_text(encoding="utf-8")
            data = load_json(text) if path.suffix == ".json" else load_yaml(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError) as exc:
            raise InputError(f"{path}: not a readable price file: {str(exc).splitlines()[0]}") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a mapping of model -> {{input, output}}")
        table = cls(ratios=ratios)
        for model, entry in data.items():
            if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
                raise InputError(f"{path}: model {model!r}: field 'input'/'output' missing")
            unknown = sorted(set(map(str, entry)) - set(PRICE_FIELDS))
            if unknown:
                raise InputError(
                    f"{path}: model {model!r}: unknown field {unknown[0]!r} (expected {', '.join(PRICE_FIELDS)})"
                )
            values: dict[str, float] = {}
            for name, raw in entry.items():
                try:
                    number = float(raw)
                except (TypeError, ValueError):
                    number = -1.0
                if isinstance(raw, bool) or not 0 <= number < math.inf:  # also rejects NaN
                    raise InputError(
                        f"{path}: model {model!r}: field {name!r} must be a number >= 0 (USD per 1M tokens)"
                    )
                values[str(name)] = number
            table.prices[str(model)] = Price(
                values["input"],
                values["output"],
                values.get("cache_write", values["input"] * ratios.write),
                values.get("cache_read", values["input"] * ratios.read),
            )
        return table

    def price(self, model: str) -> Price | None:
        """The price of the longest priced prefix of ``model`` (asked once a call: the match is kept;
        the table is complete once made, ``from_file`` fills it before any lookup)."""
        if model not in self._matched:
            self._matched[model] = max((p for p in self.prices if model.startswith(p)), key=len, default=None)
        best = self._matched[model]
        return None if best is None else self.prices[best]

    def lookup(self, model: str) -> tuple[float, float] | None:
        """(input, output) USD per 1M tokens, or None for an unknown model."""
        price = self.price(model)
        return None if price is None else (price.input, price.output)

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_write_tokens: int = 0,
        cache_read_tokens: int = 0,
    ) -> float:
        price = self.price(model)
        if price is None:
            return 0.0
        return (
            input_tokens * price.input
            + output_tokens * price.output
            + cache_write_tokens * price.cache_write
            + cache_read_tokens * price.cache_read
        ) / 1_000_000

    def cost_of(self, model: str, usage: Usage, multiplier: float = 1.0) -> float:
        """What a call cost: each token kind at its price, times the batch multiplier."""
        return multiplier * self.cost(
            model, usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens
        )

    def uncached_cost_of(self, model: str, usage: Usage, multiplier: float = 1.0) -> float:
        """What the same call would have cost with no prompt cache: the whole prompt at input price."""
        return multiplier * self.cost(model, usage.prompt_tokens, usage.output_tokens)


@dataclass(frozen=True)
class CacheSavings:
    """What prompt caching saved over a set of results, priced from one table."""

    uncached_usd: float  # the same calls with every prompt token at the input price
    actual_usd: float  # with cache writes and reads at their prices
    cache_write_tokens: int
    cache_read_tokens: int
    unpriced: int  # results with cache tokens whose model has no price (left out of both sums)

    @property
    def saved_usd(self) -> float:
        """Negative when cache writes cost more than reads saved (a variant called only once)."""
        return self.uncached_usd - self.actual_usd


def caching_savings(results: Iterable[RunResult], prices: PriceTable) -> CacheSavings:
    """Cost at uncached prices minus cost at the cached prices, over the successful results.

    Both sides come from the same price table (with each result's batch multiplier), so the
    difference is caching's alone, even where a CLI reported its own total cost."""
    uncached = actual = 0.0
    writes = reads = unpriced = 0
    for result in results:
        usage = result.usage
        if not result.ok:
            continue
        writes += usage.cache_write_tokens
        reads += usage.cache_read_tokens
        if prices.price(result.model) is None:
            unpriced += usage.cache_write_tokens + usage.cache_read_tokens > 0
            continue
        uncached += prices.uncached_cost_of(result.model, usage, result.price_multiplier)
        actual += prices.cost_of(result.model, usage, result.price_multiplier)
    return CacheSavings(uncached, actual, writes, reads, unpriced)
