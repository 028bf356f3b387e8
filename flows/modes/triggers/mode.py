"""Trigger mode to the shared layers (flows/report/modes.py). Light on import: its commands and
nightly flow are imported when asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows.report.modes import BaseMode


class TriggerMode(BaseMode):
    name = "trigger"
    report = "flows.modes.triggers.model:TriggerReport"
    group = "skill"

    def add_commands(self, sub: Any) -> None:
        from flows.modes.triggers.cli import add_commands
        from flows.modes.triggers.tune import add_command

        add_command(add_commands(sub))

    def nightly_flow(self) -> Any:
        from flows.modes.triggers.nightly import nightly_triggers

        return nightly_triggers

    def check_suite(self, config: Path) -> None:
        from flows.modes.triggers.plan import load_trigger_config

        load_trigger_config(config)


MODE = TriggerMode()
