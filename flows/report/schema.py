"""The report: a typed model per mode (sample, agentic, trigger) on one common base, version 3.

Files keep the layout of the original tool (camelCase keys, ``meta``/``summary``/``results``/
``analysis``): Python names are snake_case and each field's JSON name is its alias. The figures
computed in ``tasks/stats`` are models defined there (``tasks/stats/figures.py``); each mode's
report builder makes its own run entries (``SampleRun``, ``AgentRun``, ``TriggerRun``) and meta, and
``flows.report.build.assemble`` puts them and the figures together by keyword, as the mode's report
class. Every reader (console, CI outputs, regression, store, server, templates) works on the models;
``load_report`` reads any mode's file as its class (or insists on one), migrating earlier versions.

Its parts live beside it: the results (``entries.py``), the diagnosis (``diagnosis_parts.py``);
``python -m flows.report.json_schema`` writes ``flows/report/report.schema.json``; a test checks that
the file in the repository is current and that every report the tests write validates against it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, overload

from pydantic import Field, TypeAdapter, ValidationError

from flows.report.diagnosis_parts import Ablation, AgentMatrix, Diagnosis, HumanAgreement, JudgeBias
from flows.report.entries import (
    AgentVariantResult,
    CaseResult,
    Regression,
    SampleVariantResult,
    TriggerVariantResult,
    lowered,
)
from tasks.schema import Arm, NotRun, Scale, ShardRun
from tasks.stats.figures import (
    Analysis,
    Comparison,
    JudgeGold,
    JudgeSummary,
    PairwiseSummary,
    VariantSummary,
)
from tasks.stats.models import Model
from tasks.stats.trigger_compare import DescriptionDecision, VariantComparison
from tasks.stats.trigger_stats import ListingShift, TriggerSummary

#: 3: the JSON of version 2; its schema tells the modes apart (each mode's run entries and meta are
#: their own models), so a version 2 file is read as it is.
REPORT_VERSION = 3
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")

Mode = Literal["sample", "agentic", "trigger"]


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
                run["grade"] = {**grade, "status": lowered(grade.get("status", "graded"))}
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
