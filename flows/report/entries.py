"""A report's results: one entry per case, per variant and per run (each mode's run its own model),
its human feedback and assertion details, and how a suite changed since its previous run.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import Field

from executors.schema import Utterance
from graders.grades import Behavior, CheckDetail, CheckResults, PluginEvalPart, SessionGrade
from tasks.schema import TranscriptStep
from tasks.stats.figures import (
    CaseStats,
    Paired,
    Verdict,
)
from tasks.stats.models import Figures, Model


class RegressionVariant(Model):
    """One variant of this run against the same variant of the previous run."""

    cases: int
    """cases in both runs"""
    cases_added: int
    """cases new in this run"""
    cases_removed: int
    """cases gone since"""
    mean_before: float | None
    """mean over shared cases, previous run"""
    mean_after: float | None
    """mean over shared cases, this run"""
    paired: Paired
    """paired statistics of this run minus the previous"""
    verdict: Verdict
    """WORSE is a regression"""
    per_case: dict[str, float]
    """sample_id -> change (unchanged cases left out)"""


class ArtifactChange(Model):
    """A variant whose artifact is not the one the previous run measured (its SHA-256 differs)."""

    before: str | None
    """SHA-256 of the previous run's artifact (None: it had none)"""
    after: str | None
    """SHA-256 of this run's artifact (None: it has none)"""
    bytes_before: int | None = None
    """its size then, in bytes of UTF-8 (None: not recorded by that run)"""
    bytes_after: int | None = None
    """its size now"""


NightOutcome = Literal["the skill regressed", "the world changed", "both", "neither"]


def night_outcome_of(skill: bool, world: bool) -> NightOutcome:
    """What a night with a same-night control found, from whether the skill and the world moved."""
    if skill:
        return "both" if world else "the skill regressed"
    return "the world changed" if world else "neither"


class ControlVerdict(Model):
    """A same-night control: a changed variant against its last known good artifact run the same night
    (the candidate verdict: the world cancels), and that control against its own night (the drift)."""

    control_night: str
    """the run whose artifact is the control (the last night that passed)"""
    candidate: RegressionVariant
    """tonight's variant against tonight's control, paired by case: WORSE is the skill's regression"""
    drift: RegressionVariant | None
    """tonight's control against the same artifact on its own night: WORSE or BETTER is the world's change"""
    outcome: NightOutcome
    """what the night found"""
    rule: str
    """how the outcome was decided, with the figures"""


class Regression(Model):
    """This run of a suite against its previous run on the same model."""

    previous: str = Field(description="id of the previous run")
    previous_timestamp: str | None
    """when the previous run started"""
    per_variant: dict[str, RegressionVariant]
    """the comparison per variant"""
    regressed: list[str] = Field(description="variants whose verdict against the previous run is WORSE")
    artifact_changes: dict[str, ArtifactChange] = Field(default_factory=dict)
    """variant -> how its artifact changed since the previous run (unchanged variants left out)"""
    world_changes: list[str] = Field(default_factory=list)
    """what else changed since the previous run (its fingerprint against this one's), one line each"""
    controls: dict[str, ControlVerdict] = Field(default_factory=dict)
    """variant -> its same-night control (a night that ran the last known good artifact beside it)"""
    canaries: list[str] = Field(default_factory=list)
    """the gold items (--judge-gold) whose judged score moved since the previous run: the grading changed"""


# ---------------------------------------------------------------- results


class Feedback(Model):
    """A human's rating of one output, from the report server."""

    rating: int = Field(ge=1, le=5)
    """1-5 stars"""
    comment: str = ""
    """free text"""
    at: str
    """when, ISO 8601 UTC"""


class AssertionDetail(Model):
    """One assertion as configured (its parameters) and how it came out."""

    type: str
    """assertion type"""
    passed: bool
    """whether it passed (after negation)"""
    weight: float
    """its weight in the assertion score"""
    message: str | None = None
    """why it failed, or what it found"""
    score: float | None = None
    """a custom check's own score"""
    value: Any = None
    """the expected value"""
    values: list[str] | None = None
    """the expected values"""
    pattern: str | None = None
    """the regular expression"""
    flags: str | None = None
    """regex flags"""
    reference: str | None = None
    """the reference text"""
    threshold: float | None = None
    """the similarity threshold"""
    fn: str | None = None
    """the custom check's file"""
    json_schema: dict[str, Any] | None = None
    """the JSON Schema"""
    negate: bool | None = None
    """true: the assertion is negated"""
    n: int | None = None
    """rouge_n_min: the n-gram size"""
    mode: str | None = None
    """assert-set: any or all"""
    children: list[dict[str, Any]] | None = None
    """assert-set: its assertions, as configured"""
    error: bool | None = None
    """the check could not decide: a grading error"""


class AssertionSummary(Model):
    """The assertions of one execution."""

    passed: int
    """assertions that passed"""
    total: int
    """assertions in all"""
    score: float | None
    """1 + 4 x passed weight / total weight"""
    details: list[AssertionDetail]
    """each assertion"""


class RunEntry(Model):
    """One execution of a case and variant: a model call (sample mode) or an agent session (agentic
    and trigger mode). The fields every mode writes; each mode's subclass adds its own."""

    run: int
    """run index, from 1"""
    ok: bool
    """the execution (or session) succeeded"""
    composite_score: float | None
    """the score on the mode's scale (a case's mean over runs at the variant level)"""
    output: str = ""
    """the full output"""
    error: str | None = None
    """the error, when it failed"""
    duration_ms: float | None = None
    """latency"""
    cost_usd: float = 0.0
    """cost"""


class SampleRun(RunEntry):
    """One model call of a sample and variant, graded by its assertions and the judge."""

    assertions: AssertionSummary | None = None
    """the assertions and their results"""
    llm_score: float | None = None
    """the judge's score (rubric, or mean of dimensions)"""
    llm_reason: str | None = None
    """the judge's reason"""
    judge_status: str | None = None
    """graded, ungraded or skipped"""
    input_tokens: int | None = None
    """input tokens"""
    output_tokens: int | None = None
    """output tokens"""
    total_tokens: int | None = None
    """input + output tokens"""
    cache_write_tokens: int | None = None
    """prompt tokens written to the provider's cache"""
    cache_read_tokens: int | None = None
    """prompt tokens read from the provider's cache"""
    batched: bool | None = None
    """answered through a provider's batch API (priced at its discount)"""
    output_preview: str | None = None
    """the output's first 200 characters"""
    error_kind: str | None = None
    """why it failed (transient, permanent, timeout, ... or how a session ended)"""
    attempts: int | None = None
    """calls made, retries included"""
    cached: bool | None = None
    """taken from the result cache"""
    dimension_scores: dict[str, float] | None = None
    """per dimension, when the sample has dimensions"""
    judge_scores: dict[str, float] | None = None
    """per judge, for an ensemble"""
    judge_raw: str | None = None
    """the judge's reply, when UNGRADED"""
    grading_error: str | None = None
    """the assertions that could not decide (raised, hung, over budget): the run is ungraded"""


class SessionRun(RunEntry):
    """One agent session (agentic and trigger mode)."""

    status: str | None = None
    """how the session ended, or contaminated"""
    transcript: list[TranscriptStep] | None = None
    """the session's steps"""


class AgentRun(SessionRun):
    """One agentic session of a task in one arm: its checks, its judgement, its behaviour."""

    input_tokens: int | None = None
    """input tokens"""
    grade: SessionGrade | None = None
    """the session's judgement"""
    contaminated: str | None = None
    """why the session was excluded"""
    checks: CheckResults | None = None
    """sandbox check totals"""
    check_details: list[CheckDetail] | None = None
    """each sandbox check"""
    criteria: dict[str, float] | None = None
    """the four criteria's scores"""
    behavior: Behavior | None = None
    """transcript analysis"""
    usage: dict[str, Any] | None = None
    """tokens as the CLI reported them"""
    num_turns: int | None = None
    """turns the session took"""
    conversation: list[Utterance] | None = None
    """a case with a user or a permission policy: who said what, in order (the prompt, the agent's
    questions, the user's answers, each permission decision)"""
    outputs: str | None = Field(default=None, description="folder of the session's raw outputs")
    reused_from: str | None = Field(
        default=None,
        description="the earlier run this baseline session was taken from (nothing deciding it changed)",
    )

    def plugin_eval(self) -> PluginEvalPart | None:
        """A plugin eval case's grading of this session (score, graders, pending)."""
        return self.checks.plugin_eval if self.checks is not None else None


class TriggerRun(SessionRun):
    """One trigger session of a query under one variant: what fired, when, and what was listed."""

    cached: bool | None = None
    """taken from the result cache"""
    fired: list[str] | None = None
    """the skills that fired, in order"""
    first_turns: dict[str, int] | None = None
    """the turn in which each skill first fired"""
    listed: list[str] | None = None
    """the skills the CLI listed to the model"""


R = TypeVar("R", bound=RunEntry)


class VariantEntry(Model, Generic[R]):
    """What a case's entry for one variant adds to its first run's fields."""

    case_stats: CaseStats | dict[str, Any] = Field(default_factory=dict)
    """the case over its runs"""
    runs: list[R] | None = None
    """every run, when there are several"""
    feedback: list[Feedback] = Field(default_factory=list)
    """human ratings from the report server"""


class SampleVariantResult(VariantEntry[SampleRun], SampleRun):
    """A sample's entry for one variant: the first run's fields, the case mean, and every run."""


class AgentVariantResult(VariantEntry[AgentRun], AgentRun):
    """A task's entry for one arm: the first session's fields, the case mean, and every session."""


class TriggerVariantResult(VariantEntry[TriggerRun], TriggerRun):
    """A query's entry for one variant: the first session's fields and every session."""


#: A case's entry for one variant, in any mode.
VariantResult = SampleVariantResult | AgentVariantResult | TriggerVariantResult
V = TypeVar("V", SampleVariantResult, AgentVariantResult, TriggerVariantResult)


class CaseResult(Figures, Generic[V]):
    """One case (a sample, a task or a query) with each variant's result."""

    sample_id: str
    """the case's id"""
    prompt: str
    """what the model received"""
    tags: list[str] = Field(default_factory=list)
    """the case's tags"""
    rubric: str | None = None
    """the judge's rubric"""
    dimensions: dict[str, str] | None = None
    """the judge's dimensions"""
    cluster: str | None = None
    """the case's cluster (cluster-robust statistics)"""
    # agentic tasks
    name: str | None = None
    """the task's name"""
    type: str | None = None
    """positive or negative-control"""
    difficulty: str | None = None
    """easy, medium or hard"""
    category: str | None = None
    """the task's domain"""
    variants: dict[str, V]
    """variant -> result"""
    expect: str | None = None
    """the skill that should fire, or none (trigger mode; agentic mode: whether the task expects the
    artifact to be used, absent when it does not say)"""
