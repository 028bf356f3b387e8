"""Sample mode to the shared layers (flows/report/modes.py). Light on import: its commands and
nightly flow are imported when asked for."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

from flows.report.modes import BaseMode


class SampleMode(BaseMode):
    name = "sample"
    report = "flows.modes.sample.model:SampleReport"
    batches = True
    words = MappingProxyType(
        {
            "run": "benchmark artifact variants on a samples file",
            "ci": "run, then exit 1 when a variant is below --threshold or the gate fails",
            "validate": "try every grader on the cases' reference answers and their mutants (no model "
            "call); exit 1 when one is broken",
        }
    )

    def add_commands(self, sub: Any) -> None:
        from flows.modes.sample.cli import add_commands

        add_commands(sub, self.words)

    def nightly_flow(self) -> Any:
        from flows.modes.sample.nightly import nightly_bench

        return nightly_bench

    def check_suite(self, config: Path) -> None:
        from flows.inputs.samples import load_config

        load_config(config)


MODE = SampleMode()
