"""Prefect settings for every command: quiet, robust defaults measured in ../shared/PREFECT.md."""

from __future__ import annotations

import os

# Quiet, robust defaults for Prefect (measured in ../shared/PREFECT.md); the user's environment wins.
PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # A flow run's own lines (plan, progress, verdict) reach its Logs tab in the UI; the terminal
    # shows warnings only (it has the progress bar and the summary). Per-task lines stay off.
    "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
    "PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL": "INFO",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "200",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "50",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "500",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_READ_BATCH_SIZE": "50",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
}


def configure_prefect() -> None:
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
