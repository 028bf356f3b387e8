"""What a sample-mode run will do and roughly cost, before any call, and its plan in one line."""

from __future__ import annotations

from dataclasses import dataclass

from executors.agent import SAMPLE_TURNS, AgentExecutor
from flows.inputs.plan import estimate_tokens, prompt_tokens
from flows.modes.sample.prepare import Prepared
from graders.judge import prompts_for


@dataclass(frozen=True)
class Estimate:
    """What a sample-mode run will do and roughly cost, before any call."""

    calls: int
    judge_calls: int
    tokens_in: int
    tokens_out: int
    cost: str  # "$0.0123", "$0 (local)" or "unknown price": an upper bound


def estimate(prepared: Prepared) -> Estimate:
    o = prepared.options
    units = prepared.units()
    tokens_in, tokens_out = estimate_tokens(units, o.max_tokens)
    executor, model = prepared.target.executor, prepared.target.model
    if isinstance(executor, AgentExecutor):  # each case is a session of up to SAMPLE_TURNS requests
        per_session = [executor.session_tokens(SAMPLE_TURNS, prompt_tokens(u)) for u in units]
        tokens_in, tokens_out = sum(i for i, _ in per_session), sum(out for _, out in per_session)
        model = executor.priced_as(model)
    price = executor.prices.lookup(model)
    cost = (
        "unknown price" if price is None else f"${(tokens_in * price[0] + tokens_out * price[1]) / 1e6:.4f}"
    )
    if prepared.target.executor.name == "local":
        cost = "$0 (local)"
    judge_calls = 0
    if prepared.judges:
        per_output = (
            sum(len(prompts_for(s, "")) for s in prepared.samples) * len(prepared.variants) * o.repeat
        )
        judge_calls = per_output * len(prepared.judges) * o.judge_repeat
    return Estimate(len(units), judge_calls, tokens_in, tokens_out, cost)


def plan_line(prepared: Prepared, e: Estimate) -> str:
    """The run's plan in one line: cases, variants, runs, calls, model, judge, estimated cost."""
    o = prepared.options
    judges = ", ".join(f"{j.executor.name}:{j.model}" for j in prepared.judges) or "none"
    return (
        f"plan: {len(prepared.samples)} cases × {len(prepared.variants)} variants "
        f"({', '.join(v.name for v in prepared.variants)}) × {o.repeat} run(s) = {e.calls:,} model calls "
        f"on {prepared.target.executor.describe(prepared.target.model)}, concurrency {o.concurrency}; "
        f"judge {judges} (up to {e.judge_calls:,} calls); estimated cost (upper bound) {e.cost}; "
        f"cache {'off' if prepared.cache_dir is None else prepared.cache_dir} (finished calls are not repeated)"
        + (f"; suite {o.suite}" if o.suite else "")
    )
