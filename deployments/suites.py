"""The one source of truth for scheduled benchmarks: ``deployments.yaml``, turned into Prefect
deployments with ``to_deployment`` and served with ``serve`` (no work pool needed).

    suites:
      - name: demo-nightly          # deployment name (lowercase letters, digits, dashes)
        config: demo/skillab.yaml   # the suite's options; its folder holds the samples and skills
        cron: "0 3 * * *"
        timezone: UTC               # IANA name (default UTC)
        batch: true                 # optional: through the batch API at half price
      - name: triggers-nightly
        mode: trigger               # a trigger suite: config holds `skill triggers run` options
        config: demo/triggers.yaml
        cron: "0 4 * * *"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect.client.schemas.schedules import CronSchedule
from prefect.schedules import Cron
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from executors.errors import InputError
from flows.inputs.files import located, parse_data, read_text, validation_lines
from flows.report.modes import Mode, modes


def nightly_modes() -> dict[str, tuple[Mode, Any]]:
    """The modes a suite can be of, by name: those with a nightly flow, and the flow."""
    return {m.name: (m, flow) for m in modes() if (flow := m.nightly_flow()) is not None}


class SuiteDeployment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    config: str
    mode: str = Field(default_factory=lambda: next(iter(nightly_modes())))
    """the mode of the suite's options file: one with a nightly flow (default: the registry's first)"""
    batch: bool | None = None  # sample suites: through the provider's batch API (overrides the config)
    cron: str
    timezone: str = "UTC"
    description: str | None = None
    paused: bool = False

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        if value not in nightly_modes():
            raise InputError(f"mode {value!r}: one of {', '.join(nightly_modes())}")
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        try:
            CronSchedule(cron=value)  # Prefect's own validation: what it accepts, we accept
        except ValidationError:
            raise InputError(f"invalid cron string {value!r}") from None
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            CronSchedule(cron="0 0 * * *", timezone=value)
        except ValidationError:
            raise InputError(f"invalid timezone {value!r} (an IANA name such as Europe/Paris)") from None
        return value


class DeploymentsFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    suites: list[SuiteDeployment]


def load(path: Path) -> list[SuiteDeployment]:
    """Validate every suite: its name, cron, timezone, and its options file against BenchOptions."""
    data = parse_data(path, read_text(path))
    try:
        spec = DeploymentsFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(
            validation_lines(exc, located(str(path)), list(SuiteDeployment.model_fields))
        ) from None
    problems: list[str] = []
    names = [s.name for s in spec.suites]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{path}: suites: duplicate name {dup!r}")
    for suite in spec.suites:
        config = (path.parent / suite.config).resolve()
        mode, _ = nightly_modes()[suite.mode]
        if suite.batch is not None and not mode.batches:
            batching = ", ".join(m.name for m, _ in nightly_modes().values() if m.batches)
            problems.append(
                f"{path}: suite {suite.name}: batch: only {batching} suites run through a batch API"
            )
        try:
            mode.check_suite(config)
        except InputError as exc:
            problems += [f"{path}: suite {suite.name}: {line}" for line in exc.lines]
    if problems:
        raise InputError(problems)
    return list(spec.suites)


def build(path: Path) -> list[Any]:
    """RunnerDeployments of the nightly flow, one per suite, with absolute config paths."""
    return [
        nightly_modes()[suite.mode][1].to_deployment(
            name=suite.name,
            schedule=Cron(suite.cron, timezone=suite.timezone),
            parameters={"config": str((path.parent / suite.config).resolve()), "suite": suite.name}
            | ({} if suite.batch is None else {"batch": suite.batch}),
            description=suite.description or f"skillab suite {suite.name}",
            tags=["skillab", "nightly", suite.mode, suite.name],
            paused=suite.paused,
        )
        for suite in load(path)
    ]
