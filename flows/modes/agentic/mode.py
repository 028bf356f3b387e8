"""Agentic mode to the shared layers (flows/report/modes.py). Light on import: its commands are
imported when asked for."""

from __future__ import annotations

from typing import Any

from flows.report.modes import BaseMode


class AgenticMode(BaseMode):
    name = "agentic"
    report = "flows.modes.agentic.model:AgenticReport"
    group = "skill"

    def add_commands(self, sub: Any) -> None:
        from flows.modes.agentic.cli import add_commands

        add_commands(sub)


MODE = AgenticMode()
