"""The resource label of every unit's task-run event (tasks/unit_runs.py), by which the server skillab
starts keeps those events out of its event history (flows/cli/prefect_server.py). Standard library
only: a command passes it to the server it starts before it imports anything heavy."""

UNIT_LABEL = "skillab.unit"
