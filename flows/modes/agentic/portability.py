"""Does the skill travel? Its portability certificate: the lint of the artifact against every agent
CLI's recorded behaviour (graders/portability.py), with what the run measured on the agents it ran,
one line per agent: portable, breaks (why), or not measured (and what the lint forecasts there)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from executors.agent import agent_cli_classes
from executors.errors import InputError
from executors.schema import ListingState
from flows.inputs.skill_config import Skill
from flows.modes.agentic.model import AgenticReport
from flows.report.diagnosis_parts import (
    AgentLift,
    AgentMatrix,
    AgentPortability,
    Portability,
    PortabilityStatus,
)
from graders.portability import Finding, Severity, lint_skill
from tasks.schema import VerdictLabel

#: A plugin's parts a CLI that loads skills alone leaves out, and what that costs.
PLUGIN_PARTS: tuple[tuple[str, Severity], ...] = (
    ("commands", "degrades"),
    ("agents", "degrades"),
    ("hooks", "breaks"),
    ("mcp_servers", "breaks"),
)


def skill_findings(skill: Skill) -> list[Finding]:
    """The lint of the artifact on every agent CLI: its SKILL.md, or each skill of a plugin (named),
    and a plugin's other parts on the CLIs that load its skills alone."""
    every = [(cls.name, cls.support) for cls in agent_cli_classes()]
    plugin = skill.plugin
    if plugin is None:
        return lint_skill(skill.path, every)
    out = [
        f.model_copy(update={"why": f"{name}: {f.why}"})
        for name, folder in plugin.skill_dirs().items()
        for f in lint_skill(folder, every)
    ]
    for cls in agent_cli_classes():
        if cls.loads_plugins:
            continue
        for part, severity in PLUGIN_PARTS:
            if getattr(plugin, part):
                why = f"loads a plugin's skills alone: its {part.replace('_', ' ')} are not loaded there"
                out.append(Finding(agent=cls.name, what=part, severity=severity, why=why))
    return out


def listed(skill: Skill) -> dict[str, str]:
    """agent -> how its listing would carry the artifact's skill(s) in a fresh setup (the worst of a
    plugin's), as each CLI's listing rule models it for its default model."""
    plugin = skill.plugin
    if plugin is None:
        named = [(skill.name, skill.description)]
    else:
        named = [(n, Skill(n, folder).description) for n, folder in plugin.skill_dirs().items()]
    order = list(ListingState)  # full, truncated, dropped, absent: later is worse
    out = {}
    for cls in agent_cli_classes():
        states = cls.support.listing.states(named, None).values()
        out[cls.name] = str(max(states, key=order.index)) if states else str(ListingState.ABSENT)
    return out


@dataclass(frozen=True)
class Measured:
    """What a run found of the skill on one agent."""

    verdict: VerdictLabel | None
    line: str  # the lift in one sentence
    invoked_rate: float | None
    below_reference: str | None = None  # the interaction line, when the lift is clearly below the reference's


def measured_in(matrix: AgentMatrix) -> dict[str, Measured]:
    """Each agent of a cross-agent run, from its row and its interaction with the reference."""
    worse = {i.runner: i.line for i in matrix.interactions if i.differs and (i.paired.mean or 0) < 0}
    return {a.runner: measured_of(a, worse.get(a.runner)) for a in matrix.agents if a.report is not None}


def measured_of(lift: AgentLift, below: str | None = None) -> Measured:
    label = lift.verdict.label if lift.verdict is not None else None
    return Measured(label, lift.line, lift.invoked_rate, below)


def certificate(
    findings: list[Finding],
    measured: Mapping[str, Measured],
    listing: Mapping[str, str],
    required: Sequence[str],
) -> Portability:
    """One line per agent CLI: portable, breaks (why), or not measured (with the lint's forecast)."""
    lines = []
    for cls in agent_cli_classes():
        own = [f for f in findings if f.agent == cls.name]
        breaking = [f.text for f in own if f.severity == "breaks"]
        state = listing.get(cls.name)
        if state == ListingState.ABSENT:
            breaking.append(f"{cls.name}: its listing would not carry the skill (modelled)")
        run = measured.get(cls.name)
        lines.append(_line(cls.name, own, breaking, run, state))
    return Portability(agents=lines, required=list(required))


def _line(
    agent: str, own: list[Finding], breaking: list[str], run: Measured | None, state: str | None
) -> AgentPortability:
    status, said = _status(agent, [b.split(": ", 1)[1] for b in breaking], run)
    return AgentPortability(agent=agent, status=status, listed=state, line=said, findings=own)


def _status(agent: str, whys: list[str], run: Measured | None) -> tuple[PortabilityStatus, str]:
    """The agent's status and its line: measured where it ran to a verdict, else the lint's forecast."""
    forecast = f"the lint forecasts it breaks: {'; '.join(whys[:2])}" if whys else ""
    if run is not None and run.verdict in (None, VerdictLabel.INSUFFICIENT_DATA):
        said = f"{agent}: not measured: it ran, but {run.line.split(': ', 1)[-1]}"
        return "not measured", said + (f"; {forecast}" if forecast else "")
    if run is None:
        return "not measured", f"{agent}: not measured; {forecast or 'the lint finds nothing that breaks it'}"
    harm = []
    if run.invoked_rate == 0:
        harm.append("its sessions never loaded the skill")
    if run.verdict == VerdictLabel.WORSE:
        harm.append("the skill makes it worse")
    if run.below_reference:
        harm.append(run.below_reference)
    if harm or (whys and run.verdict != VerdictLabel.BETTER):
        return "breaks", f"{agent}: breaks: {'; '.join([*whys[:2], *harm])} ({run.line})"
    tail = f"; the lint's findings did not stop it: {'; '.join(whys[:2])}" if whys else ""
    return "portable", f"{agent}: portable ({run.line}){tail}"


def with_findings(matrix: AgentMatrix, findings: list[Finding]) -> AgentMatrix:
    """The matrix with each agent's breaking findings beside its row (why its lift may be missing)."""
    rows = [
        a.model_copy(
            update={"findings": [f.text for f in findings if f.agent == a.runner and f.severity == "breaks"]}
        )
        for a in matrix.agents
    ]
    return matrix.model_copy(update={"agents": rows})


def portability_lines(report: AgenticReport) -> list[str]:
    """The certificate's lines as the console and the run's log say them."""
    return [f"portability: {a.line}" for a in (report.portability.agents if report.portability else [])]


def forecast_lines(skill: Skill, runners: Sequence[str]) -> list[str]:
    """Before any session (a dry run's plan): each agent CLI's modelled listing of the skill and
    what the lint finds breaking it there; the agents this run measures first."""
    findings, listing = skill_findings(skill), listed(skill)
    names = [*runners, *(c.name for c in agent_cli_classes() if c.name not in runners)]
    out = []
    for name in names:
        breaking = [f.text.split(": ", 1)[1] for f in findings if f.agent == name and f.severity == "breaks"]
        said = f"breaks: {'; '.join(breaking[:3])}" if breaking else "nothing in the lint breaks it"
        role = "runs here" if name in runners else "not run"
        out.append(f"portability forecast: {name} ({role}): listed {listing.get(name, '?')}; {said}")
    return out


def portability_warnings(skill: Skill, runners: Sequence[str], required: Sequence[str]) -> list[str]:
    """Before the run: --require-portable's names checked (an InputError for one that is no agent CLI),
    and what the lint finds breaking the skill on the agents this run measures."""
    known = [c.name for c in agent_cli_classes()]
    unknown = [a for a in required if a not in known]
    if unknown:
        raise InputError(f"--require-portable: {unknown[0]!r} is no agent CLI ({', '.join(known)})")
    return [
        f"portability: {f.text}"
        for f in skill_findings(skill)
        if f.agent in runners and f.severity == "breaks"
    ]
