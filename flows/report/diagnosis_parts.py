"""The report's answers to "why did it score that way?": the judge's biases, the failures grouped,
each section's effect (ablation), and an agentic suite's lift and interactions across agents.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from graders.portability import Finding
from tasks.stats.agents import PooledLift
from tasks.stats.diagnosis import FailureGroup
from tasks.stats.figures import (
    LengthFigures,
    Paired,
    PreferenceFigures,
    RaterAgreement,
    Verdict,
)
from tasks.stats.models import Figures, Model

# ---------------------------------------------------------------- why did it score that way?


class HumanAgreement(RaterAgreement):
    """The run's judge against the report server's star ratings, recomputed on every rating."""

    rated: int = Field(description="case x variant items with a rating (the latest rating counts)")
    judged: str = Field(description="which judge score is compared with the rating")
    updated_at: str = Field(description="when it was computed, ISO 8601 UTC")


class PositionBias(Model):
    """--pairwise: how often the judge's preference follows the position, not the answer."""

    pairs: int = Field(description="pairs judged in both orders")
    flips: int = Field(description="pairs where the same position won in both orders")
    share: float | None = Field(description="flips / pairs")
    line: str = Field(description="the finding in one line, with its figure")


class LengthBias(LengthFigures):
    """The judge score's partial correlation with output length, holding the assertion score fixed."""

    detected: bool = Field(description="positive and p < 0.05")
    line: str = Field(description="the finding in one line, with its figure")


class SelfPreference(PreferenceFigures):
    """A judge of the model's own vendor against judges of other vendors, on the same outputs."""

    vendor: str = Field(description="the model's vendor")
    same_vendor: list[str] = Field(description="judges of that vendor")
    other_vendor: list[str] = Field(description="judges of other vendors")
    line: str = Field(description="the finding in one line, with its figure")


class JudgeBias(Model):
    """Probes of the judge's biases, each a line with its figure; absent where it cannot be measured."""

    position: PositionBias | None = Field(default=None, description="position bias (--pairwise)")
    length: LengthBias | None = Field(default=None, description="length bias")
    self_preference: SelfPreference | None = Field(
        default=None, description="self-preference (same-vendor judge)"
    )
    lines: list[str] = Field(default_factory=list, description="every probe's line")


class VariantDiagnosis(Model):
    """One variant's failing cases, grouped."""

    variant: str = Field(description="the variant")
    cases: int = Field(description="cases of the variant")
    failing_cases: int = Field(description="cases with at least one failing run")
    groups: list[FailureGroup] = Field(description="by what failed, then by the judge's reasons")


class Diagnosis(Model):
    """Why runs failed: per variant, groups of failing cases, each with an optional LLM suggestion."""

    variants: list[VariantDiagnosis] = Field(description="one per variant")
    suggestions: bool = Field(description="LLM suggestions were asked for (false with --no-diagnose)")
    note: str = Field(description="how to read the suggestions")


class SectionEffect(Figures):
    """One section of the artifact: the full artifact against the artifact without it."""

    section: str = Field(description="the section's heading")
    variant: str = Field(description="the variant without the section")
    contribution: float | None = Field(description="full minus without, mean over cases: > 0 helps")
    ci_low: float | None = Field(description="lower end of the 95% interval")
    ci_high: float | None = Field(description="upper end of the 95% interval")
    p_holm: float | None = Field(description="Holm-adjusted p over the sections")
    mde: float | None = Field(description="smallest effect detectable at this N")
    input_tokens: float | None = Field(
        alias="inputTokens",
        description="input tokens the section costs per call, per agent session in agentic mode (full minus without)",
    )
    finding: Literal["helps", "hurts", "no detectable effect"] = Field(description="the finding")
    line: str = Field(description="the finding in one line")


class Ablation(Model):
    """--ablate: leave-one-section-out variants run paired against the full artifact."""

    artifact: str = Field(description="the ablated artifact's file")
    full: str = Field(description="the variant with the full artifact (the control)")
    cases: int = Field(description="cases compared")
    sections: list[SectionEffect] = Field(description="one per section removed")


class AgentLift(Model):
    """One agent CLI of a cross-agent run: what the skill did for it, paired by task."""

    runner: str = Field(description="the agent CLI (--runner)")
    model: str = Field(description="the model its sessions asked for")
    agent_cli_version: str | None = Field(
        default=None, description="the CLI and version its sessions reported"
    )
    report: str | None = Field(description="id of this agent's own report (every session, check and grade)")
    paired: Paired | None = Field(description="with-skill minus baseline per task; None when it did not run")
    verdict: Verdict | None = Field(description="the with-skill vs baseline verdict on this agent")
    invoked_rate: float | None = Field(
        description="share of with-skill sessions that loaded the skill, as each CLI shows it (a skill "
        "tool call; Codex: the $name that forces it); told to load it, an agent may still not"
    )
    sessions: int = Field(description="sessions of both arms")
    errors: int = Field(description="sessions that failed (excluded from the scores)")
    line: str = Field(description="the lift in one sentence, with its interval")
    findings: list[str] = Field(
        default_factory=list, description="what the portability lint found breaking on this agent"
    )


class AgentInteraction(Model):
    """Does the skill help one agent more than another? The difference of their lifts, task by task."""

    runner: str = Field(description="the agent compared")
    reference: str = Field(description="the agent it is compared with (the first --runner)")
    paired: Paired = Field(description="per task: this agent's lift minus the reference's")
    differs: bool = Field(description="the 95% interval of the difference excludes 0")
    line: str = Field(description="the difference in one sentence, with its interval")


class AgentMatrix(Model):
    """--runner A,B,...: the same suite on each agent, with and without the skill."""

    reference: str = Field(description="the first --runner: interactions are against it")
    agents: list[AgentLift] = Field(description="one per --runner, in order")
    interactions: list[AgentInteraction] = Field(description="each other agent against the reference")
    pooled: PooledLift | None = Field(
        default=None, description="the lift pooled across agents, and the agent x skill interaction test"
    )


PortabilityStatus = Literal["portable", "breaks", "not measured"]


class AgentPortability(Model):
    """The certificate's line for one agent CLI: does the skill travel to it?"""

    agent: str = Field(description="the agent CLI (--runner name)")
    status: PortabilityStatus = Field(
        description="portable: run, and nothing breaks it; breaks: the lint or the run shows it does not "
        "work as written there; not measured: not run (the lint's forecast is in the line)"
    )
    listed: str | None = Field(
        default=None, description="the skill's listing there as modelled: full, truncated, dropped, absent"
    )
    line: str = Field(description="the status with why, in one line")
    findings: list[Finding] = Field(default_factory=list, description="the lint's findings on this agent")


class Portability(Model):
    """Does the skill travel? The lint of the skill against every agent CLI's recorded behaviour, with
    what the run measured on the agents it ran."""

    agents: list[AgentPortability] = Field(description="every agent CLI skillab knows, in its order")
    required: list[str] = Field(
        default_factory=list, description="the agents --require-portable named: a gate on their lines"
    )
