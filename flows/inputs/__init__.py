"""Inputs: options, the user's files, samples, variants, the skill and its agentic config and tasks,
the plan of units, and the suites other tools publish (suites/). No Prefect here: bad input fails
before anything starts."""
