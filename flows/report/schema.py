"""The report: a typed model per mode (sample, agentic, trigger) on one common base, version 3.

Files keep the layout of the original tool (camelCase keys, ``meta``/``summary``/``results``/
``analysis``): Python names are snake_case and each field's JSON name is its alias. The figures
computed in ``tasks/stats`` are models defined there (``tasks/stats/figures.py``); each mode's
report builder makes its own run entries (``SampleRun``, ``AgentRun``, ``TriggerRun``) and meta, and
``flows.report.build.assemble`` puts them and the figures together by keyword, as the mode's report
class. Every reader (console, CI outputs, regression, store, server, templates) works on the models;
``load_report`` reads any mode's file as its class (or insists on one), migrating earlier versions.

``python -m flows.report.schema`` writes ``flows/report/report.schema.json``; a test checks that the
file in the repository is current and that every report the tests write validates against it.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar, get_args, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from tasks.schema import Arm, NotRun, Scale, ShardRun, TranscriptStep
from tasks.stats.figures import (
    Analysis,
    CaseStats,
    Comparison,
    JudgeGold,
    JudgeSummary,
    LengthFigures,
    Paired,
    PairwiseSummary,
    PreferenceFigures,
    RaterAgreement,
    VariantSummary,
    Verdict,
)
from tasks.stats.models import Figures, Model
from tasks.stats.trigger_stats import DescriptionDecision, ListingShift, TriggerSummary, VariantComparison

#: 3: the JSON of version 2; its schema tells the modes apart (each mode's run entries and meta are
#: their own models), so a version 2 file is read as it is.
REPORT_VERSION = 3
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")

Mode = Literal["sample", "agentic", "trigger"]


class SessionGradeStatus(StrEnum):
    """How one agentic session was graded."""

    GRADED = "graded"
    UNGRADED = "ungraded"  # the judge failed twice: excluded from scores, counted
    CONTAMINATED = "contaminated"  # the arm saw (or lacked) the skill: excluded, with the reason
    FAILED = "failed"  # the session itself failed: an error, scored as the seed does


def _lower(value: Any) -> Any:
    """Version 1 agentic reports wrote statuses in capitals."""
    return value.lower() if isinstance(value, str) else value


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


class CriterionScore(Model):
    """One of the four criteria."""

    score: float
    """0-100"""
    reasoning: str = ""
    """the judge's justification"""


class ExpectationResult(Model):
    """One skill-creator expectation as the judge graded it (grading.json's entry)."""

    text: str
    """the expectation, as the eval states it"""
    passed: bool
    """the judge found clear evidence that it holds"""
    evidence: str = ""
    """what the judge quoted or found"""


class ExpectationSummary(Figures):
    """grading.json's summary of a session's expectations."""

    passed: int
    """expectations that passed"""
    failed: int
    """expectations that failed"""
    total: int
    """expectations in all"""
    pass_rate: float
    """passed / total; the session's score is 100 x this"""


class SessionGrade(Figures):
    """The four-criterion judgement of one agentic session, or why there is none."""

    model_config = ConfigDict(extra="allow")  # the four criteria, each {score, reasoning}

    status: SessionGradeStatus = SessionGradeStatus.GRADED
    """graded, ungraded, contaminated or failed"""
    weighted_total: float | None = None
    """the four criteria weighted 40/25/20/15, computed in code"""
    deterministic_checks_passed: bool | None = None
    """every sandbox check passed"""
    summary: str | None = None
    """the judge's summary"""
    reason: str | None = None
    """why there is no judgement"""
    error: str | None = None
    """the judge's last error"""
    raw: str | None = None
    """the judge's last reply, when it could not be parsed"""
    expectations: list[ExpectationResult] | None = None
    """a skill-creator eval: each expectation with its verdict and evidence"""
    expectation_summary: ExpectationSummary | None = None
    """a skill-creator eval: passed, failed, total and pass rate"""

    _status_case = field_validator("status", mode="before")(_lower)


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
    checks: dict[str, Any] | None = None
    """sandbox check totals"""
    check_details: list[dict[str, Any]] | None = None
    """each sandbox check"""
    criteria: dict[str, float] | None = None
    """the four criteria's scores"""
    behavior: dict[str, Any] | None = None
    """transcript analysis"""
    usage: dict[str, Any] | None = None
    """tokens as the CLI reported them"""
    num_turns: int | None = None
    """turns the session took"""
    outputs: str | None = Field(default=None, description="folder of the session's raw outputs")
    reused_from: str | None = Field(
        default=None,
        description="the earlier run this baseline session was taken from (nothing deciding it changed)",
    )

    def plugin_eval(self) -> dict[str, Any]:
        """A plugin eval case's grading of this session (score, graders, pending); {} otherwise."""
        return dict((self.checks or {}).get("plugin_eval") or {})


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


# ---------------------------------------------------------------- the report


class PromptCaching(Model):
    """What prompt caching saved over the run's successful executions, priced from one table."""

    uncached_usd: float
    """the same calls with every prompt token at the input price"""
    actual_usd: float
    """with cache writes and reads at their prices"""
    saved_usd: float
    """uncached minus actual (negative when cache writes cost more than reads saved)"""
    cache_write_tokens: int
    """prompt tokens written to the provider's cache"""
    cache_read_tokens: int
    """prompt tokens read from it"""
    unpriced: int = 0
    """results with cache tokens whose model has no price (left out of both sums)"""


class Contamination(Model):
    """A session excluded because its arm saw (or lacked) the skill."""

    task: str
    """the task"""
    mode: Arm
    """the arm"""
    run: int
    """the run"""
    reason: str
    """what the init event or the session showed"""


class Meta(Model):
    """What was run, on what, when, with which inputs (their hashes), and what it cost: what every
    mode records; each mode's subclass adds its own."""

    variants: list[str]
    """variant names (labels when blind)"""
    control: str
    """the variant others are compared with"""
    model: str
    """the model under test"""
    executor: str
    """the executor or agent CLI"""
    judge_model: str | None
    """judge ids (executor:model)"""
    sample_count: int = Field(description="cases")
    task_count: int = Field(description="executions (cases x variants x runs)")
    total_cost_usd: float
    """cost of the executions"""
    timestamp: str = Field(description="start, ISO 8601 UTC")
    cli_version: str
    """skillab's version"""
    seed: int
    """seed of shuffling, the bootstrap and the model"""
    repeat: int = 1
    """runs per case"""
    suite: str | None = None
    """suite name (regression history)"""
    blind: bool = False
    """variants are labelled Variant A/B/..."""
    judge_cost_usd: float | None = None
    """cost of the judge calls"""
    skill_hashes: dict[str, str | None] | None = None
    """variant -> SHA-256 of its artifact"""
    prefect_flow_run: str | None = None
    """the Prefect UI's page of the flow run that made this report, when a UI was known"""
    calls: int | None = Field(
        default=None, description="model calls made, or agent sessions started (cache hits excluded)"
    )
    cache_hits: int | None = None
    """units taken from the cache"""
    warm_up_calls: int | None = None
    """calls that put a variant's artifact in the provider's prompt cache before the fan-out"""
    batched_calls: int | None = None
    """calls answered through a provider's batch API (--batch)"""
    not_run: list[NotRun] = Field(default_factory=list, description="units a budget stopped")
    agent_cli_version: str | None = None
    """the agent CLI and its version as its sessions reported it (e.g. claude 2.1.330)"""
    notices: list[str] = Field(default_factory=list)
    """what the user was told before the run"""


class SampleMeta(Meta):
    """Sample mode's run: the samples file, the call settings, caching and shards."""

    python_version: str | None = None
    """Python's version"""
    skill_bytes: dict[str, int | None] | None = None
    """variant -> its artifact's size in bytes of UTF-8"""
    concurrency: int | None = None
    """calls in flight at once"""
    temperature: float | None = None
    """sampling temperature passed through"""
    max_tokens: int | None = None
    """output token limit passed through"""
    samples_file: str | None = None
    """the samples file"""
    samples_sha256: str | None = None
    """its SHA-256"""
    prompt_caching: PromptCaching | None = None
    """what prompt caching saved (None when no call read or wrote the cache)"""
    duration_s: float | None = None
    """wall time of the run"""
    shards: list[ShardRun] | None = None
    """the shard flow runs, when sharded"""


class SessionMeta(Meta):
    """A run of agent sessions (agentic and trigger mode): their limits and their OS sandbox."""

    max_turns: int | None = None
    """turn limit per session"""
    isolation: str | None = None
    """OS sandbox of the agent sessions and task checks: bubblewrap, or none (--no-os-sandbox)"""
    sandbox_version: str | None = None
    """the sandbox's version (e.g. bubblewrap 0.8.0)"""
    network: str | None = None
    """what the agent sessions could reach: the model endpoint only, or the host's network"""
    fleet_pool: str | None = None
    """the Prefect Docker work pool whose containers ran the agent sessions (--fleet-pool); None: here"""
    plugin: str | None = None
    """the artifact is a whole plugin: what it holds and whether its MCP servers ran"""


class AgenticMeta(SessionMeta):
    """Agentic mode's run: the skill, its task suite, and the sessions excluded."""

    skill: str | None = None
    """the skill under test"""
    skill_path: str | None = None
    """its folder"""
    skill_sha256: str | None = None
    """SHA-256 of its files"""
    runs: int | None = None
    """sessions per task and arm"""
    suite_sha256: str | None = None
    """SHA-256 of the task suite"""
    results_dir: str | None = None
    """the run's results tree"""
    contaminated: list[Contamination] = Field(default_factory=list)
    """sessions excluded as contaminated"""
    warnings: list[str] = Field(default_factory=list)
    """what the run could not do as its suite asked (a field run without, a grader bound to fail)"""
    case_settings: dict[str, str] | None = None
    """a plugin suite's cases that set their own model, turns, timeout or runs: case -> what ran"""
    reused_sessions: int | None = None
    """baseline sessions taken from earlier runs instead of run again (only the skill changed)"""
    reused_from: list[str] | None = None
    """the runs (results folders) they came from"""


class TriggerMeta(SessionMeta):
    """Trigger mode's run (the variants' skills are hashed in ``skill_hashes``)."""

    environment: dict[str, Any] | None = None
    """the user's setup every session ran in (--environment): its source, hash and what it holds"""
    context_fill: float | None = None
    """share of the context window a neutral earlier turn took in the filled variants"""
    context_window: int | None = None
    """the window (tokens) that share is of"""


class BehaviorSummary(Model):
    """Transcript analysis of one arm, averaged over its sessions."""

    avg_tool_calls: float
    """tool calls per session"""
    avg_turns: float
    """turns per session"""
    thrashing: int
    """sessions that repeated themselves"""
    sessions: int
    """sessions counted"""
    avg_duration_s: float
    """seconds per session"""
    avg_cost_usd: float
    """cost per session"""
    total_cost_usd: float
    """cost of the arm"""
    skill_invoked: int
    """sessions that invoked the skill"""
    errors_encountered: int
    """tool errors"""
    errors_recovered: int
    """tool errors followed by a success"""
    max_turns_hit: int
    """sessions that hit the turn limit"""
    permission_denials: int
    """tool calls the CLI denied"""
    skills_called: dict[str, int] | None = None
    """skill name as called -> sessions that called it (which of a plugin's skills fired)"""


class TriggerFigures(Model):
    """Trigger mode: per variant, rates per query and per skill with intervals, routing; A/B comparisons."""

    candidates: list[str]
    """the skills installed and detected"""
    queries_file: str
    """the fixed queries file"""
    queries_sha256: str
    """its SHA-256"""
    split: dict[str, Any] | None = None
    """the holdout split (fraction, seed, which query in which part)"""
    summaries: list[TriggerSummary]
    """one per variant"""
    comparisons: list[VariantComparison] = Field(default_factory=list)
    """each variant against the first, paired by query"""
    neighbours: list[VariantComparison] = Field(default_factory=list)
    """in an environment: each installed skill's recall and false-fire rate without and with the
    skill under test, paired by query (who steals from whom)"""
    warnings: list[str] = Field(default_factory=list)
    """what makes a figure mean less than its label says (a filled window of another size than asked)"""
    decisions: list[DescriptionDecision] = Field(default_factory=list)
    """an A/B of one skill's descriptions with a holdout: each variant kept over the first or not, and why"""
    listing_shifts: list[ListingShift] = Field(default_factory=list)
    """installed skills whose description the listing kept without the skill under test and cut or
    dropped with it"""


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


class FailureGroup(Model):
    """Failing runs of one variant that share what failed (or the judge's reason)."""

    key: str = Field(description="what failed, e.g. 'assertion contains: Paris' or 'judge: rubric'")
    kind: Literal["assertion", "check", "judge", "error", "reason"] = Field(description="the kind of failure")
    cases: list[str] = Field(description="the cases concerned")
    runs: int = Field(description="failing runs in the group")
    share: float = Field(description="cases in the group / cases of the variant")
    examples: list[str] = Field(default_factory=list, description="messages or judge reasons, up to 3")
    suggestion: str | None = Field(
        default=None, description="an LLM's paragraph on what went wrong and what to change: a suggestion"
    )
    suggestion_by: str | None = Field(default=None, description="the model that wrote it")


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


# ---------------------------------------------------------------- can the verdict be believed?


class CheckStatus(StrEnum):
    """One line of the validity certificate."""

    PASS = "PASS"
    WARN = "WARN"  # worth a reviewer's look; the verdict stands
    FAIL = "FAIL"  # a BETTER or WORSE verdict is not certified


class ValidityCheck(Model):
    """One line of the certificate: what was checked, how it came out, with its figure."""

    check: str = Field(
        description="graders, errors, grading errors, power, judge, discrimination, baseline, listing or leakage"
    )
    status: CheckStatus = Field(description="PASS, WARN or FAIL")
    value: float | None = Field(default=None, description="the figure checked")
    limit: float | None = Field(default=None, description="the figure's limit")
    line: str = Field(description="the finding in one sentence, with its figure")
    items: list[str] = Field(default_factory=list, description="the graders, cases or comparisons concerned")


class GraderCheck(Model):
    """One grader of one case, tried on the case's reference answer and its mutants before the run."""

    grader: str = Field(description="case#N (type)")
    status: Literal["ok", "broken", "untested"] = Field(
        description="ok; broken: fails the reference or passes its violation (its results are left out); "
        "untested: passes an empty output and no violation could be derived"
    )
    reason: str = Field(description="why, in one sentence")


class Validity(Model):
    """Can the verdict be believed? The graders, the errors, the power, the judge and the design,
    each a PASS, WARN or FAIL line; any FAIL leaves a BETTER or WORSE verdict not certified."""

    certified: bool = Field(description="no line FAILs")
    line: str = Field(description="the certificate in one sentence")
    checks: list[ValidityCheck] = Field(description="one line per check")
    not_certified: list[str] = Field(
        default_factory=list, description="the BETTER or WORSE verdicts a FAIL leaves not certified"
    )
    graders: list[GraderCheck] = Field(
        default_factory=list, description="each grader tried on the reference answers (empty without any)"
    )


class Report(Model):
    """A benchmark run: what ran, the figures, every case's results, and the analysis."""

    version: int = Field(REPORT_VERSION, description="report format version; older files are migrated")
    id: str = Field(description="run id; also the file name")
    mode: Mode
    """sample, agentic or trigger"""
    meta: Meta
    """what ran, on what, when"""
    summary: dict[str, VariantSummary] = Field(default_factory=dict)
    """variant -> figures"""
    comparisons: list[Comparison] = Field(default_factory=list)
    """each treatment against the control"""
    multiple_comparisons: str | None = None
    """holm, when several comparisons were adjusted"""
    judge: JudgeSummary | None = None
    """per-judge figures"""
    pairwise: list[PairwiseSummary] | None = None
    """--pairwise results"""
    scale: Scale
    """the score scale"""
    guide: dict[str, str] | None = Field(default=None, description="plain-language notes for readers")
    results: list[CaseResult[Any]] = Field(default_factory=list)
    """every case with each variant's result"""
    analysis: Analysis = Field(default_factory=Analysis)
    """insights and suggestions"""
    regression: Regression | None = None
    """against the suite's previous run"""
    blind_mapping: dict[str, str] | None = None
    """label -> variant, for the reveal"""
    human_agreement: HumanAgreement | None = Field(
        default=None, description="the judge against the report server's ratings"
    )
    judge_gold: JudgeGold | None = Field(
        default=None, description="--judge-gold: the judge checked before the run"
    )
    judge_bias: JudgeBias | None = Field(default=None, description="judge bias probes")
    diagnosis: Diagnosis | None = Field(default=None, description="failing cases grouped, with suggestions")
    ablation: Ablation | None = Field(default=None, description="--ablate: each section's contribution")
    validity: Validity | None = Field(
        default=None, description="can the verdict be believed: the certificate"
    )

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict, keeping the file's layout (fields never set are left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def variant_name(self, label: str) -> str:
        """The real variant behind a label (a blind label is resolved)."""
        return (self.blind_mapping or {}).get(label, label)

    def all_cases(self) -> list[CaseResult[Any]]:
        """Every case with results, the report's other lists of them included."""
        return list(self.results)


class SampleReport(Report):
    """A sample-mode run."""

    mode: Literal["sample"]
    meta: SampleMeta
    results: list[CaseResult[SampleVariantResult]] = Field(default_factory=list)


class AgenticReport(Report):
    """An agentic-mode run: the figures of every run, and the sessions' own."""

    mode: Literal["agentic"]
    meta: AgenticMeta
    results: list[CaseResult[AgentVariantResult]] = Field(default_factory=list)
    criteria: dict[str, dict[str, float | None]] | None = None
    """arm -> mean of each criterion"""
    deterministic_pass_rate: dict[str, float | None] | None = None
    """arm -> share of sessions whose checks all passed"""
    negative_controls: list[CaseResult[AgentVariantResult]] | None = None
    """the negative-control tasks"""
    behavior: dict[str, BehaviorSummary] | None = None
    """arm -> transcript analysis"""
    matrix: AgentMatrix | None = Field(
        default=None, description="--runner A,B,...: the skill's lift per agent and between agents"
    )

    def all_cases(self) -> list[CaseResult[Any]]:
        return [*self.results, *(self.negative_controls or [])]


class TriggerReport(Report):
    """A trigger-mode run."""

    mode: Literal["trigger"]
    meta: TriggerMeta
    results: list[CaseResult[TriggerVariantResult]] = Field(default_factory=list)
    triggers: TriggerFigures | None = None
    """trigger mode's figures"""


RP = TypeVar("RP", bound=Report)

#: Any mode's report, told apart by its ``mode``.
AnyReport = Annotated[SampleReport | AgenticReport | TriggerReport, Field(discriminator="mode")]
REPORTS: TypeAdapter[SampleReport | AgenticReport | TriggerReport] = TypeAdapter(AnyReport)


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a report of an earlier version to the current shape (version 1 agentic files wrote
    statuses in capitals; version 2 is read as it is). A part of another shape is left for the
    validation to name; a version newer than this one is refused."""
    version = data.get("version", 1)
    if not isinstance(version, int) or not 1 <= version <= REPORT_VERSION:
        raise ValueError(f"report version {version!r}: this skillab reads versions 1 to {REPORT_VERSION}")
    if version == 1 and data.get("mode") == "agentic":
        data = {**data}
        for run in _runs_of(data):
            grade = run.get("grade")
            if run.get("status") != "contaminated" and isinstance(grade, dict):
                run["grade"] = {**grade, "status": _lower(grade.get("status", "graded"))}
    return {**data, "version": REPORT_VERSION}


def _runs_of(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every run entry of a decoded report (the variant entries and their runs), skipping whatever is
    not shaped as one."""
    cases = [
        c for key in ("results", "negativeControls") if isinstance(data.get(key), list) for c in data[key]
    ]
    for case in cases:
        variants = case.get("variants") if isinstance(case, dict) else None
        for entry in variants.values() if isinstance(variants, dict) else []:
            runs = entry.get("runs") if isinstance(entry, dict) else None
            for run in [entry, *(runs if isinstance(runs, list) else [])]:
                if isinstance(run, dict):
                    yield run


def parse_report(data: Any) -> Report:
    """A report from decoded JSON, as its mode's class, migrated from earlier versions; ValueError
    (with the first problem, where it is) when it is not one."""
    if not isinstance(data, dict) or "id" not in data or "meta" not in data:
        raise ValueError("not a skillab report")
    try:
        return REPORTS.validate_python(migrate(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the report"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ValueError(f"not a valid report: {where}: {first['msg']}{more}") from None


@overload
def load_report(path: Path) -> Report: ...
@overload
def load_report(path: Path, kind: type[RP]) -> RP: ...
def load_report(path: Path, kind: type[Report] = Report) -> Report:
    """Read a report file (``kind``: the mode's class it must be); ValueError (with the reason) when
    it is unreadable, not a report, or of another mode."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: unreadable: {exc}") from exc
    try:
        report = parse_report(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not isinstance(report, kind):
        raise ValueError(f"{path}: {spelled(report.mode)} report, not {spelled(mode_of(kind))} one")
    return report


def mode_of(kind: type[Report]) -> str:
    """The mode a mode's report class is for (its ``mode`` field's one value)."""
    (mode,) = get_args(kind.model_fields["mode"].annotation)
    return str(mode)


def spelled(mode: str) -> str:
    """ "a sample", "an agentic"."""
    return ("an " if mode[0] in "aeiou" else "a ") + mode


def json_schema() -> dict[str, Any]:
    """The report's JSON schema; a field described by the docstring under it gets that description."""
    schema = REPORTS.json_schema(by_alias=True, mode="serialization")
    docs = docstrings()
    for model in report_models():
        # a generic part's name, CaseResult[SampleRun], is CaseResult_SampleRun_ in the schema
        part = schema["$defs"].get(re.sub(r"[^\w]", "_", model.__name__), {})
        origin = model.__pydantic_generic_metadata__["origin"]
        if part and origin is not None and origin.__doc__:
            part.setdefault("description", inspect.cleandoc(origin.__doc__))
        for name, field in model.model_fields.items():
            text = field_docstring(model, name, docs)
            prop = part.get("properties", {}).get(field.alias or name)
            if text and prop is not None and "description" not in prop:
                # where pydantic writes a description: just before the title (the file stays as it was)
                keys = list(prop)
                at = keys.index("title") if "title" in keys else len(keys)
                entries = [*prop.items()]
                prop.clear()
                prop.update([*entries[:at], ("description", text), *entries[at:]])
    return schema


def report_models() -> list[type[Model]]:
    """Every report part: the subclasses of ``Model``, here and where their figures are computed."""
    found: list[type[Model]] = []
    todo = [Model]
    while todo:
        found += (children := todo.pop().__subclasses__())
        todo += children
    return found


def docstrings() -> dict[str, dict[str, str]]:
    """Per report part: field name -> the docstring under it, read from the part's own module."""
    docs: dict[str, dict[str, str]] = {}
    for source in sorted({inspect.getsourcefile(m) or "" for m in report_models()}):
        docs |= field_docstrings(Path(source))
    return docs


def field_docstring(model: type[BaseModel], name: str, docs: dict[str, dict[str, str]]) -> str | None:
    """The docstring under the field ``name`` in ``model`` or the nearest base class that has one."""
    return next((text for base in model.__mro__ if (text := docs.get(base.__name__, {}).get(name))), None)


def field_docstrings(source: Path) -> dict[str, dict[str, str]]:
    """Per class defined in ``source``: field name -> the string literal written under the field."""
    docs: dict[str, dict[str, str]] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            docs[node.name] = {
                field.target.id: inspect.cleandoc(text.value.value)
                for field, text in itertools.pairwise(node.body)
                if isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(text, ast.Expr)
                and isinstance(text.value, ast.Constant)
                and isinstance(text.value.value, str)
            }
    return docs


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
