"""Running: units as Prefect tasks under budgets (``runner``), the first calls sent while Prefect
starts (``headstart``), judging, agentic sessions after they ran, task generation, progress, and the
garbage-collector settings while units run."""
