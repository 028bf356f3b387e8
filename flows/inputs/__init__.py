"""Inputs: options, the user's files, samples, variants, agentic config and tasks, and the plan of
units and sessions. No Prefect here: bad input fails before anything starts."""
