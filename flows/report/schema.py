"""The report: one typed model for every mode (sample, agentic, trigger), version 2.

Files keep the layout of the original tool (camelCase keys, ``meta``/``summary``/``results``/
``analysis``): Python names are snake_case and each field's JSON name is its alias. Figures computed
by ``tasks.aggregate`` arrive as dicts and are validated into these models by the builders in
``flows.report.build``; every reader (console, markdown, JUnit, regression, store, server, templates)
works on the models. ``load_report`` migrates files of earlier versions.

``python -m flows.report.schema`` writes ``flows/report/report.schema.json``; a test checks that the
file in the repository is current and that every report the tests write validates against it.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.schema import Arm, VerdictLabel

REPORT_VERSION = 2
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")

Mode = Literal["sample", "agentic", "trigger"]


class Model(BaseModel):
    """Report parts: JSON names are the aliases; unknown keys are refused so the schema is complete."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", serialize_by_alias=True)


class SessionGradeStatus(StrEnum):
    """How one agentic session was graded."""

    GRADED = "graded"
    UNGRADED = "ungraded"  # the judge failed twice: excluded from scores, counted
    CONTAMINATED = "contaminated"  # the arm saw (or lacked) the skill: excluded, with the reason
    FAILED = "failed"  # the session itself failed: an error, scored as the seed does


def _lower(value: Any) -> Any:
    """Version 1 agentic reports wrote statuses in capitals."""
    return value.lower() if isinstance(value, str) else value


# ---------------------------------------------------------------- statistics


class Paired(Model):
    """The primary comparison: statistics of the per-case differences (treatment minus control)."""

    n: int = Field(description="cases with a score in both variants")
    improved: int = Field(description="cases where the treatment scored higher")
    regressed: int = Field(description="cases where the treatment scored lower")
    unchanged: int = Field(description="cases with no difference")
    mean: float | None = Field(description="mean per-case difference")
    sd: float | None = Field(description="standard deviation of the differences")
    se: float | None = Field(description="standard error of the mean difference")
    ci_low: float | None = Field(description="lower end of the 95% t-interval")
    ci_high: float | None = Field(description="upper end of the 95% t-interval")
    df: float | None = Field(description="degrees of freedom of the interval")
    bootstrap_low: float | None = Field(description="lower end of the seeded paired bootstrap interval")
    bootstrap_high: float | None = Field(description="upper end of the seeded paired bootstrap interval")
    t: float | None = Field(description="paired t statistic")
    p_ttest: float | None = Field(description="paired t-test p-value")
    p_wilcoxon: float | None = Field(description="Wilcoxon signed-rank p-value")
    p_sign: float | None = Field(description="exact sign test p-value")
    d_z: float | None = Field(description="effect size: mean difference / sd of differences")
    se_method: str = Field(description="classical, or cluster-robust (CR1) when cases carry clusters")
    clusters: int | None = Field(description="number of clusters used by the cluster-robust SE")
    p_holm: float | None = Field(default=None, description="Holm-adjusted p over all comparisons")


class Verdict(Model):
    """Is the treatment better, and how sure are we: the label comes from the interval and a margin."""

    label: VerdictLabel = Field(description="BETTER, WORSE, EQUIVALENT, UNDERPOWERED, INCONCLUSIVE, ...")
    reason: str = Field(description="the label in one sentence, with the interval")
    margin: float = Field(description="practical margin on the scale")
    min_effect: float = Field(description="effect the user wants to detect")
    mde: float | None = Field(description="smallest effect detectable at alpha 0.05, power 0.8")
    cases_needed: int | None = Field(description="cases needed to detect min_effect")
    band: str | None = Field(description="the original tool's band (USE .. DON'T USE) from delta_points")
    delta_points: float | None = Field(description="mean difference in points of the scale's range")


class Welch(Model):
    """Welch's t-test over run means (the original tool's test with --repeat)."""

    t: float | None
    p: float | None
    significant: bool


class McNemar(Model):
    """Exact McNemar test on pass/fail of single runs."""

    b_only: int = Field(description="cases only the treatment passed")
    a_only: int = Field(description="cases only the control passed")
    p: float
    significant: bool


class Comparison(Model):
    """One treatment against the control."""

    control: str
    treatment: str
    cases: int = Field(description="cases compared (a score in both variants)")
    cases_dropped: int = Field(alias="casesDropped", description="cases missing in either variant")
    paired: Paired
    per_case: dict[str, float] = Field(alias="perCase", description="sample_id -> difference")
    mcnemar: McNemar | None = None
    welch_runs: Welch | None = Field(default=None, alias="welchRuns")
    verdict: Verdict


class RepeatStats(Model):
    """With --repeat: the per-run means and their interval."""

    run_means: list[float] = Field(alias="runMeans")
    mean: float | None
    std: float | None
    ci95: list[float | None]


class VariantSummary(Model):
    """Per-variant figures: the original tool's fields, then the ones beyond it."""

    total_samples: int = Field(alias="totalSamples")
    success_count: int = Field(alias="successCount", description="executions that did not error")
    error_count: int = Field(alias="errorCount")
    avg_composite_score: float | None = Field(
        alias="avgCompositeScore", description="mean score (errors at minimum)"
    )
    avg_assertion_score: float | None = Field(alias="avgAssertionScore")
    avg_llm_score: float | None = Field(alias="avgLlmScore")
    avg_duration_ms: float | None = Field(alias="avgDurationMs")
    avg_total_tokens: float | None = Field(alias="avgTotalTokens")
    total_cost_usd: float = Field(alias="totalCostUSD")
    runs: int
    executions: int
    ungraded_count: int = Field(alias="ungradedCount")
    error_rate: float = Field(alias="errorRate")
    ungraded_rate: float = Field(alias="ungradedRate")
    errors_by_kind: dict[str, int] = Field(alias="errorsByKind")
    composite_std: float | None = Field(alias="compositeStd", description="sd of the case means")
    composite_ci95: list[float | None] = Field(
        alias="compositeCI95", description="95% t-interval of the mean"
    )
    pass_rate: float | None = Field(alias="passRate")
    pass_at_k: dict[int, float] = Field(alias="pass@k", description="unbiased pass@k by k")
    pass_hat_k: dict[int, float] = Field(alias="pass^k", description="unbiased pass^k by k")
    repeat: RepeatStats | None = None


class CaseStats(Model):
    """One case and variant over its runs."""

    avg: float | None
    best: float | None
    worst: float | None
    std_dev: float | None
    runs: int
    passes: int
    pass_at_k: bool | None = Field(alias="pass@k", description="at least one run passed")
    pass_hat_k: bool | None = Field(alias="pass^k", description="every run passed")


class Insight(Model):
    """One finding of the auto-analysis, naming what it concerns."""

    type: str
    severity: Literal["info", "warning"]
    items: list[str]
    message: str
    variant: str | None = None


class Analysis(Model):
    insights: list[Insight] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)


class Scale(Model):
    """The score scale of the mode."""

    name: str
    minimum: float
    maximum: float
    pass_threshold: float
    margin: float
    min_effect: float


class JudgePair(Model):
    judges: list[str]
    mean_abs_diff: float | None = Field(alias="meanAbsDiff")
    pearson: float | None
    n: int


class JudgeAgreement(Model):
    """How far an ensemble's judges agree (ordinal Krippendorff's alpha over all of them)."""

    judges: list[str]
    pairs: list[JudgePair]
    krippendorff_alpha_ordinal: float | None = Field(alias="krippendorffAlphaOrdinal")


class JudgeSummary(Model):
    """Each judge's mean per variant and, for an ensemble, how far the judges agree."""

    judges: list[str]
    mean_by_variant: dict[str, dict[str, float | None]] = Field(alias="meanByVariant")
    agreement: JudgeAgreement | None = None


class PairwiseSummary(Model):
    """--pairwise: wins, ties and losses over cases with an exact sign test."""

    control: str
    treatment: str
    wins: int
    ties: int
    losses: int
    unresolved: int
    p_sign: float
    per_case: dict[str, int] = Field(alias="perCase")


class RegressionVariant(Model):
    cases: int
    cases_added: int = Field(alias="casesAdded")
    cases_removed: int = Field(alias="casesRemoved")
    mean_before: float | None = Field(alias="meanBefore")
    mean_after: float | None = Field(alias="meanAfter")
    paired: Paired
    verdict: Verdict
    per_case: dict[str, float] = Field(alias="perCase")


class Regression(Model):
    """This run of a suite against its previous run on the same model."""

    previous: str = Field(description="id of the previous run")
    previous_timestamp: str | None = Field(alias="previousTimestamp")
    per_variant: dict[str, RegressionVariant] = Field(alias="perVariant")
    regressed: list[str] = Field(description="variants whose verdict against the previous run is WORSE")


# ---------------------------------------------------------------- results


class Feedback(Model):
    """A human's rating of one output, from the report server."""

    rating: int = Field(ge=1, le=5)
    comment: str = ""
    at: str


class AssertionDetail(Model):
    """One assertion as configured (its parameters) and how it came out."""

    type: str
    passed: bool
    weight: float
    message: str | None = None
    score: float | None = None
    value: Any = None
    values: list[str] | None = None
    pattern: str | None = None
    flags: str | None = None
    reference: str | None = None
    threshold: float | None = None
    fn: str | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    negate: bool | None = Field(default=None, alias="not")


class AssertionSummary(Model):
    passed: int
    total: int
    score: float | None
    details: list[AssertionDetail]


class TranscriptStep(Model):
    kind: str
    tool: str | None
    text: str
    is_error: bool


class CriterionScore(Model):
    score: float
    reasoning: str = ""


class SessionGrade(Model):
    """The four-criterion judgement of one agentic session, or why there is none."""

    model_config = ConfigDict(extra="allow")  # the four criteria, each {score, reasoning}

    status: SessionGradeStatus = SessionGradeStatus.GRADED
    weighted_total: float | None = None
    deterministic_checks_passed: bool | None = None
    summary: str | None = None
    reason: str | None = None
    error: str | None = None
    raw: str | None = None

    _status_case = field_validator("status", mode="before")(_lower)


class RunEntry(Model):
    """One execution of a case and variant (sample mode) or one session (agentic mode)."""

    run: int
    ok: bool
    composite_score: float | None = Field(alias="compositeScore")
    output: str = ""
    error: str | None = None
    duration_ms: float | None = Field(default=None, alias="durationMs")
    cost_usd: float = Field(default=0.0, alias="costUSD")
    # sample mode
    assertions: AssertionSummary | None = None
    llm_score: float | None = Field(default=None, alias="llmScore")
    llm_reason: str | None = Field(default=None, alias="llmReason")
    judge_status: str | None = Field(default=None, alias="judgeStatus")
    input_tokens: int | None = Field(default=None, alias="inputTokens")
    output_tokens: int | None = Field(default=None, alias="outputTokens")
    total_tokens: int | None = Field(default=None, alias="totalTokens")
    output_preview: str | None = Field(default=None, alias="outputPreview")
    error_kind: str | None = Field(default=None, alias="errorKind")
    attempts: int | None = None
    cached: bool | None = None
    dimension_scores: dict[str, float] | None = Field(default=None, alias="dimensionScores")
    judge_scores: dict[str, float] | None = Field(default=None, alias="judgeScores")
    judge_raw: str | None = Field(default=None, alias="judgeRaw")
    # agentic mode
    status: str | None = None
    grade: SessionGrade | None = None
    contaminated: str | None = None
    checks: dict[str, Any] | None = None
    check_details: list[dict[str, Any]] | None = Field(default=None, alias="checkDetails")
    criteria: dict[str, float] | None = None
    behavior: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    num_turns: int | None = Field(default=None, alias="numTurns")
    transcript: list[TranscriptStep] | None = None
    outputs: str | None = Field(default=None, description="folder of the session's raw outputs")


class VariantResult(RunEntry):
    """A case's entry for one variant: the first run's fields, the case mean, and every run."""

    case_stats: CaseStats | dict[str, Any] = Field(default_factory=dict, alias="caseStats")
    runs: list[RunEntry] | None = None
    feedback: list[Feedback] = Field(default_factory=list)


class CaseResult(Model):
    """One case (a sample or a task) with each variant's result."""

    sample_id: str
    prompt: str
    tags: list[str] = Field(default_factory=list)
    rubric: str | None = None
    dimensions: dict[str, str] | None = None
    cluster: str | None = None
    # agentic tasks
    name: str | None = None
    type: str | None = None
    difficulty: str | None = None
    category: str | None = None
    variants: dict[str, VariantResult]


# ---------------------------------------------------------------- the report


class NotRunUnit(Model):
    sample_id: str
    variant: str
    run: int
    kind: str


class Contamination(Model):
    task: str
    mode: Arm
    run: int
    reason: str


class Meta(Model):
    """What was run, on what, when, with which inputs (their hashes), and what it cost."""

    variants: list[str]
    control: str
    model: str
    executor: str
    judge_model: str | None = Field(alias="judgeModel")
    sample_count: int = Field(alias="sampleCount", description="cases")
    task_count: int = Field(alias="taskCount", description="executions (cases x variants x runs)")
    total_cost_usd: float = Field(alias="totalCostUSD")
    timestamp: str = Field(description="start, ISO 8601 UTC")
    cli_version: str = Field(alias="cliVersion")
    seed: int
    repeat: int = 1
    suite: str | None = None
    blind: bool = False
    # sample mode
    judge_cost_usd: float | None = Field(default=None, alias="judgeCostUSD")
    python_version: str | None = Field(default=None, alias="pythonVersion")
    skill_hashes: dict[str, str | None] | None = Field(default=None, alias="skillHashes")
    concurrency: int | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, alias="maxTokens")
    samples_file: str | None = Field(default=None, alias="samplesFile")
    samples_sha256: str | None = Field(default=None, alias="samplesSha256")
    calls: int | None = Field(default=None, description="model calls made (cache hits excluded)")
    cache_hits: int | None = Field(default=None, alias="cacheHits")
    not_run: list[NotRunUnit] = Field(
        default_factory=list, alias="notRun", description="units a budget stopped"
    )
    duration_s: float | None = Field(default=None, alias="durationS")
    notices: list[str] = Field(default_factory=list)
    shards: list[dict[str, Any]] | None = None
    # agentic mode
    skill: str | None = None
    skill_path: str | None = Field(default=None, alias="skillPath")
    skill_sha256: str | None = Field(default=None, alias="skillSha256")
    runs: int | None = None
    max_turns: int | None = Field(default=None, alias="maxTurns")
    suite_sha256: str | None = Field(default=None, alias="suiteSha256")
    results_dir: str | None = Field(default=None, alias="resultsDir")
    contaminated: list[Contamination] = Field(default_factory=list)


class BehaviorSummary(Model):
    """Transcript analysis of one arm, averaged over its sessions."""

    avg_tool_calls: float = Field(alias="avgToolCalls")
    avg_turns: float = Field(alias="avgTurns")
    thrashing: int
    sessions: int
    avg_duration_s: float = Field(alias="avgDurationS")
    avg_cost_usd: float = Field(alias="avgCostUSD")
    total_cost_usd: float = Field(alias="totalCostUSD")
    skill_invoked: int = Field(alias="skillInvoked")
    errors_encountered: int = Field(alias="errorsEncountered")
    errors_recovered: int = Field(alias="errorsRecovered")
    max_turns_hit: int = Field(alias="maxTurnsHit")
    permission_denials: int = Field(alias="permissionDenials")


class Report(Model):
    """A benchmark run: what ran, the figures, every case's results, and the analysis."""

    version: int = Field(REPORT_VERSION, description="report format version; older files are migrated")
    id: str = Field(description="run id; also the file name")
    mode: Mode
    meta: Meta
    summary: dict[str, VariantSummary] = Field(default_factory=dict)
    comparisons: list[Comparison] = Field(default_factory=list)
    multiple_comparisons: str | None = Field(default=None, alias="multipleComparisons")
    judge: JudgeSummary | None = None
    pairwise: list[PairwiseSummary] | None = None
    scale: Scale
    guide: dict[str, str] | None = Field(default=None, description="plain-language notes for readers")
    results: list[CaseResult] = Field(default_factory=list)
    analysis: Analysis = Field(default_factory=Analysis)
    regression: Regression | None = None
    blind_mapping: dict[str, str] | None = Field(default=None, alias="blindMapping")
    # agentic mode
    criteria: dict[str, dict[str, float | None]] | None = None
    deterministic_pass_rate: dict[str, float | None] | None = Field(
        default=None, alias="deterministicPassRate"
    )
    negative_controls: list[CaseResult] | None = Field(default=None, alias="negativeControls")
    behavior: dict[str, BehaviorSummary] | None = None

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict, keeping the file's layout (fields never set are left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def variant_name(self, label: str) -> str:
        """The real variant behind a label (a blind label is resolved)."""
        return (self.blind_mapping or {}).get(label, label)


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a report of an earlier version to the current shape."""
    version = data.get("version", 1)
    if version == 1 and data.get("mode") == "agentic":
        data = {**data, "version": REPORT_VERSION}
        for case in [*data.get("results", []), *(data.get("negativeControls") or [])]:
            for entry in case.get("variants", {}).values():
                for run in [entry, *(entry.get("runs") or [])]:
                    if run.get("status") == "contaminated" or not isinstance(run.get("grade"), dict):
                        continue
                    run["grade"] = {**run["grade"], "status": _lower(run["grade"].get("status", "graded"))}
    return {**data, "version": REPORT_VERSION}


def parse_report(data: Any) -> Report:
    """A report from decoded JSON, migrated from earlier versions; ValueError when it is not one."""
    if not isinstance(data, dict) or "id" not in data or "meta" not in data:
        raise ValueError("not a skillab report")
    return Report.model_validate(migrate(data))


def load_report(path: Path) -> Report:
    """Read a report file; ValueError (with the reason) when it is unreadable or not a report."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable: {exc}") from exc
    return parse_report(data)


def json_schema() -> dict[str, Any]:
    return Report.model_json_schema(by_alias=True, mode="serialization")


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
