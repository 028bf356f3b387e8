"""A mode is a type: the ``Mode`` protocol every shared layer loops over, and the registry of modes.

A mode (flows/modes/<folder>/) is one object, its ``MODE``, named by one line of the registry
(``flows/modes/registry.py``). The command line, the nightly deployments and the report's readers
ask it, or its report class, what is their own; none of them names a mode. The shared layers never
import a mode, so this module loads the registry by its module name (the one place that does, on
first use); a test checks that every mode folder is in it.

What a mode does to a finished report (its verdicts, certificate lines, gates, charts, JUnit cases,
console lines) its report class does, overriding ``flows.report.schema.Report``; this module is light
(a command imports it before its first model call), so a mode names its report class by where it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

REGISTRY = "flows.modes.registry"


class Mode(Protocol):
    """What a mode is to the shared layers."""

    @property
    def name(self) -> str:
        """the report's ``mode``: how a report says which mode made it"""

    @property
    def report(self) -> str:
        """its report class, as ``module:Class`` (it lives in the mode's folder; imported when read)"""

    @property
    def group(self) -> str | None:
        """the command its commands sit under (``skill``); None: the top level"""

    @property
    def words(self) -> Mapping[str, str]:
        """at the top level: each command it adds, with its one line of help"""

    @property
    def batches(self) -> bool:
        """its nightly suites may run through a provider's batch API"""

    def add_commands(self, sub: Any) -> None:
        """Add its commands (``words``, or those of its group) to argparse's subparsers ``sub``."""

    def nightly_flow(self) -> Any | None:
        """The Prefect flow a scheduled suite of this mode runs (parameters config and suite, and
        batch where ``batches``); None: no nightly suites."""

    def check_suite(self, config: Path) -> None:
        """Validate a nightly suite's options file (InputError naming what is wrong)."""


class BaseMode:
    """The defaults of a mode; a mode's ``MODE`` subclasses it and sets what is its own (its name, its
    report class and its ``add_commands``, which every mode has)."""

    name: str
    report: str
    group: str | None = None
    words: Mapping[str, str] = MappingProxyType({})
    batches = False

    def nightly_flow(self) -> Any | None:
        return None

    def check_suite(self, config: Path) -> None:
        return None


def modes() -> tuple[Mode, ...]:
    """Every mode, in the registry's order."""
    return tuple(importlib.import_module(REGISTRY).MODES)


def mode_named(name: str) -> Mode:
    """The mode whose reports say ``name``; ValueError naming the known ones when none does."""
    for mode in modes():
        if mode.name == name:
            return mode
    raise ValueError(f"unknown mode {name!r} (known: {', '.join(m.name for m in modes())})")


def resolved(pointer: str) -> Any:
    """The object ``module:name`` points at."""
    module, _, name = pointer.partition(":")
    return getattr(importlib.import_module(module), name)
