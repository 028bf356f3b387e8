"""The modes, one line each: what every shared layer loops over (flows/report/modes.py loads this
module by name). A new mode is its folder and its line here."""

from __future__ import annotations

from flows.modes.agentic.mode import MODE as AGENTIC
from flows.modes.sample.mode import MODE as SAMPLE
from flows.modes.triggers.mode import MODE as TRIGGER
from flows.report.modes import Mode

MODES: list[Mode] = [SAMPLE, AGENTIC, TRIGGER]
