"""How sample mode's units run: the unit runner's configuration from the run's options."""

from __future__ import annotations

from flows.engine.economy import BatchMode
from flows.engine.runner import RunnerConfig
from flows.modes.sample.prepare import Prepared


def runner_config(prepared: Prepared) -> RunnerConfig:
    """Concurrency, the cache, the budget caps, the warm-up and batching the options ask for."""
    o = prepared.options
    return RunnerConfig(
        o.concurrency,
        prepared.cache_dir,
        max_calls=o.max_calls,
        budget_usd=o.budget_usd,
        warm_up=o.prompt_cache and not o.batch,  # a batch is cached best-effort by the provider
        batch=BatchMode(o.batch_wait, o.batch_poll) if o.batch else None,
    )
