"""Assertions on what a call cost: cost_max (USD) and latency_max (ms)."""

from __future__ import annotations

from graders.schema import NumberAssertion, Observation, Outcome


def cost_max(a: NumberAssertion, obs: Observation) -> Outcome:
    return obs.cost_usd <= float(a.value), f"cost ${obs.cost_usd:.6f}"


def latency_max(a: NumberAssertion, obs: Observation) -> Outcome:
    return obs.latency_ms <= float(a.value), f"latency {obs.latency_ms:.0f} ms"
