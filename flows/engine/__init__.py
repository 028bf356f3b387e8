"""Running, for every mode: units as Prefect tasks under budgets (``runner``: model and judge calls,
agent sessions), judging, batches and warm-up, task generation, progress, and the garbage-collector
settings while units run. The engine never imports a mode."""
