"""Tasks: thin Prefect tasks (policy in the decorator, one call down) and the pure aggregation code."""
