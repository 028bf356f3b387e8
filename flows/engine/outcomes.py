"""A flow run's outcome, kept in this process by flow run id for the command that started the run.

The final state Prefect hands back can lack its data when it came back from the API (a state proposal
retried under load); the report's path would then be lost (seen once in the 500-unit fault test). So a
flow keeps what it ends with here as well, and the command reads it here first."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

OUTCOMES: dict[str, Any] = {}


def kept(outcome: T) -> T:
    """Keep the current flow run's outcome (its result, or the exception its Failed state carries)."""
    from prefect import runtime  # here: the command imports this module before Prefect is needed

    OUTCOMES[str(runtime.flow_run.id)] = outcome
    return outcome


def outcome_of(state: Any) -> Any:
    """What a finished flow run kept, else its state's result (a run that failed before keeping one)."""
    outcome = OUTCOMES.pop(str(state.state_details.flow_run_id), None)
    return outcome if outcome is not None else state.result(raise_on_failure=False)


def latest_outcome() -> Any:
    """The outcome the newest flow run of this process kept (None before any)."""
    return next(reversed(OUTCOMES.values()), None)
