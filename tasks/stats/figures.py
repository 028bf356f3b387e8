"""The figures of tasks/stats that the report carries, as models: defined once, here, and imported
by the module that computes each and by the report's schema. Kept apart from the computing modules
(numpy, scipy) so that whatever only names a figure (a run's path, the report's models) does not
import them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tasks.schema import Scale, VerdictLabel
from tasks.stats.models import Figures, Model


class Disagreement(Model):
    """One item a judge and a human (or the gold file) scored a star or more apart."""

    item: str = Field(description="the item: 'sample_id · variant', or the gold item's id")
    human: float = Field(description="the human (gold) score, 1-5")
    judge: float = Field(description="the judge's score, 1-5")
    diff: float = Field(description="judge minus human")


class RaterAgreement(Model):
    """A judge against human scores on the same items (judge scores rounded to whole stars)."""

    n: int = Field(description="items scored by both")
    krippendorff_alpha_ordinal: float | None = Field(
        description="ordinal Krippendorff's alpha, human vs judge"
    )
    alpha_ci95: list[float | None] = Field(
        description="seeded percentile bootstrap interval of alpha over items"
    )
    spearman: float | None = Field(description="Spearman's rho of the raw scores")
    spearman_p: float | None = Field(description="its p-value")
    mean_abs_diff: float | None = Field(description="mean absolute difference")
    confusion: list[list[int]] = Field(description="rows: human 1-5 stars, columns: judge 1-5 stars")
    disagreements: list[Disagreement] = Field(description="items a star or more apart, largest first")
    seed: int = Field(description="seed of the bootstrap")
    draws: int = Field(description="bootstrap draws")


class JudgePair(Model):
    """Agreement of two judges of an ensemble."""

    judges: list[str]
    """the two judges"""
    mean_abs_diff: float | None
    """mean absolute difference of their scores"""
    pearson: float | None
    """Pearson correlation of their scores"""
    n: int
    """outputs both scored"""


class JudgeAgreement(Model):
    """How far an ensemble's judges agree (ordinal Krippendorff's alpha over all of them)."""

    judges: list[str]
    """judges of the ensemble"""
    pairs: list[JudgePair]
    """agreement of each pair"""
    krippendorff_alpha_ordinal: float | None
    """ordinal Krippendorff's alpha over all judges"""


class JudgeGold(Model):
    """--judge-gold: the judge checked against human-scored outputs before the run."""

    file: str = Field(description="the gold file")
    sha256: str = Field(description="its SHA-256")
    items: int = Field(description="gold items")
    ungraded: int = Field(description="gold items the judge left UNGRADED (excluded)")
    min_alpha: float = Field(description="--min-judge-alpha")
    reliable: bool = Field(description="alpha reached min_alpha")
    agreement: RaterAgreement = Field(description="the judge layer (as it scores the run) vs the gold")
    per_judge: dict[str, RaterAgreement] = Field(
        default_factory=dict, description="each judge of an ensemble vs the gold"
    )
    message: str = Field(description="the finding in one sentence")
    scores: dict[str, float | None] = Field(
        default_factory=dict,
        description="item -> the judge layer's score on this run (the canaries: a suite's nights compare them)",
    )


class LengthFigures(Figures):
    """The judge score's partial correlation with output length, holding the assertion score fixed."""

    n: int = Field(description="judged outputs used")
    partial_r: float | None = Field(description="partial correlation (Pearson on residuals)")
    p: float | None = Field(description="two-sided p-value (t on n - 3 df, n - 2 with nothing held fixed)")
    points_per_1000_chars: float | None = Field(
        description="judge points per 1,000 characters, the assertion score held fixed"
    )
    controlled_for: str = Field(description="what was held fixed")


class PreferenceFigures(Figures):
    """Same-vendor minus other-vendor judge score per case, over the cases both kinds scored."""

    n: int = Field(description="cases scored by both kinds")
    mean_diff: float | None = Field(description="same-vendor minus other-vendor score, mean over cases")
    ci_low: float | None = Field(description="lower end of its 95% t-interval")
    ci_high: float | None = Field(description="upper end of its 95% t-interval")
    p: float | None = Field(description="paired t-test p-value")


# ---------------------------------------------------------------- comparisons


class Paired(Figures):
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


class Verdict(Figures):
    """Is the treatment better, and how sure are we: the label comes from the interval and a margin."""

    label: VerdictLabel = Field(description="BETTER, WORSE, EQUIVALENT, UNDERPOWERED, INCONCLUSIVE, ...")
    reason: str = Field(description="the label in one sentence, with the interval")
    margin: float = Field(description="practical margin on the scale")
    min_effect: float = Field(description="effect the user wants to detect")
    mde: float | None = Field(
        description="smallest true effect that reads BETTER (the interval above the margin) with power "
        "0.8 at alpha 0.05, at this run's cases"
    )
    cases_needed: int | None = Field(description="cases a BETTER verdict needs at min_effect (power 0.8)")
    band: str | None = Field(description="the original tool's band (USE .. DON'T USE) from delta_points")
    delta_points: float | None = Field(description="mean difference in points of the scale's range")
    band_note: str | None = Field(
        default=None, description="why the band is withheld (a verdict other than BETTER/WORSE)"
    )
    procedure: str | None = Field(
        default=None,
        description="what produced the label when not the fixed-N paired interval (--sequential)",
    )
    judge_caveat: str | None = Field(
        default=None,
        description="set when --judge-gold found the judge below --min-judge-alpha: the verdict rests "
        "on an unreliable judge",
    )

    def band_text(self) -> str:
        """The band beside a settled verdict; nothing otherwise (a withheld band is no advice, so no
        band word is shown)."""
        return f"band: {self.band}" if self.band else ""

    def headline(self) -> str:
        """The label as every summary line shows it: its band where one is given, and what decided
        it where that was not the plain fixed-N interval (a --sequential run says which rule did)."""
        band = f" ({self.band_text()})" if self.band else ""
        decided = f" [decided by the {self.procedure}]" if self.procedure else ""
        return f"{self.label}{band}{decided}"


class Welch(Model):
    """Welch's t-test over run means (the original tool's test with --repeat)."""

    t: float | None
    """Welch's t statistic"""
    p: float | None
    """two-sided p-value"""
    significant: bool
    """p < 0.05"""
    note: str | None = None
    """why the test is undefined, when it is"""


class McNemar(Figures):
    """Exact McNemar test on pass/fail of single runs."""

    b_only: int = Field(description="cases only the treatment passed")
    a_only: int = Field(description="cases only the control passed")
    p: float
    """exact two-sided p-value"""
    significant: bool
    """p < 0.05"""


class Sequential(Model):
    """An anytime-valid confidence sequence on the paired case differences, updated after every wave."""

    procedure: str = Field(description="the method")
    reference: str = Field(description="where it is described")
    alpha: float = Field(description="error rate, valid at every look")
    margin: float = Field(description="practical margin the sequence was held against")
    bounds: tuple[float, float] = Field(description="range of a paired difference on the scale")
    bets: str = Field(description="the betting strategy")
    wave_size: int = Field(description="cases per wave")
    waves: int = Field(description="waves run")
    cases_used: int = Field(description="cases fed to the sequence")
    cases_available: int | None = Field(description="cases in the samples file")
    stopped_early: bool = Field(description="decided before the cases ran out")
    decision: str | None = Field(
        description="BETTER, WORSE or EQUIVALENT, or None when the cases ran out first"
    )
    lower: float = Field(description="the sequence's lower end at the stop")
    upper: float = Field(description="its upper end")
    final_look: str | None = Field(description="what decided when the cases ran out")
    assumption: str = Field(description="what the guarantee assumes")
    calls_used: int = Field(description="executions made, all variants")
    calls_fixed_n: int = Field(description="executions the fixed-N run would make")


class Comparison(Model):
    """One treatment against the control."""

    control: str
    """the variant compared against"""
    treatment: str
    """the variant under comparison"""
    cases: int = Field(description="cases compared (a score in both variants)")
    cases_dropped: int = Field(description="cases missing in either variant")
    paired: Paired
    """the paired per-case statistics (the primary comparison)"""
    per_case: dict[str, float] = Field(description="sample_id -> difference")
    mcnemar: McNemar | None = None
    """with single runs: McNemar on pass/fail"""
    welch_runs: Welch | None = None
    """with --repeat: Welch's t-test over run means"""
    verdict: Verdict
    """the verdict and its reason"""
    sequential: Sequential | None = None
    """with --sequential: the confidence sequence that stopped the run (or ran out of cases)"""


class RepeatStats(Model):
    """With --repeat: the per-run means and their interval."""

    run_means: list[float]
    """mean score of each run"""
    mean: float | None
    """mean of the run means"""
    std: float | None
    """sd of the run means"""
    ci95: list[float | None]
    """95% t-interval of the mean of run means"""


class VariantSummary(Model):
    """Per-variant figures: the original tool's fields, then the ones beyond it."""

    total_samples: int
    """cases with at least one execution"""
    success_count: int = Field(description="executions that did not error")
    error_count: int
    """executions that errored"""
    avg_composite_score: float | None = Field(description="mean score (errors at minimum)")
    avg_assertion_score: float | None
    """mean assertion score of successful executions"""
    avg_llm_score: float | None
    """mean judge score of graded executions"""
    avg_duration_ms: float | None
    """mean latency of successful executions"""
    avg_total_tokens: float | None
    """mean tokens (in + out) of successful executions"""
    total_cost_usd: float
    """cost of the executions (judging excluded)"""
    runs: int
    """runs per case (--repeat)"""
    executions: int
    """executions in all"""
    ungraded_count: int
    """executions whose grading failed (the judge gave no usable score, a check raised, hung or ran over
    its budget): excluded from means, counted apart from the model's errors"""
    unscored_count: int = 0
    """executions no criterion scored (excluded from every statistic)"""
    error_rate: float
    """errored share of executions"""
    ungraded_rate: float
    """share of executions with a grading error"""
    errors_by_kind: dict[str, int]
    """errored executions per cause"""
    composite_std: float | None = Field(description="sd of the case means")
    composite_ci95: list[float | None] = Field(description="95% t-interval of the mean")
    pass_rate: float | None
    """share of scored executions at or above the pass threshold"""
    pass_at_k: dict[int, float] = Field(description="unbiased pass@k by k")
    pass_hat_k: dict[int, float] = Field(description="unbiased pass^k by k")
    repeat: RepeatStats | None = None
    """with --repeat: the run means and their interval"""

    @property
    def interval(self) -> tuple[float | None, float | None]:
        """The 95% interval's ends; (None, None) where it was not computed (older reports)."""
        low, high = [*self.composite_ci95, None, None][:2]
        return low, high

    @property
    def pass_shown(self) -> str:
        """The pass rate as a reader sees it: a percentage, or a dash when nothing was scored."""
        return "—" if self.pass_rate is None else f"{self.pass_rate:.0%}"


class CaseStats(Figures):
    """One case and variant over its runs."""

    avg: float | None
    """mean score over runs"""
    best: float | None
    """best run"""
    worst: float | None
    """worst run"""
    std_dev: float | None
    """sd over runs"""
    runs: int
    """runs with a score"""
    passes: int
    """runs that passed"""
    pass_at_k: bool | None = Field(description="at least one run passed")
    pass_hat_k: bool | None = Field(description="every run passed")


class Insight(Model):
    """One finding of the auto-analysis, naming what it concerns."""

    type: str
    """what kind of finding"""
    severity: Literal["info", "warning"]
    """info or warning"""
    items: list[str]
    """the cases or assertions concerned"""
    message: str
    """the finding in one sentence"""
    variant: str | None = None
    """the variant concerned, when one is"""


class Analysis(Model):
    """The auto-analysis: findings naming their items, and suggestions."""

    insights: list[Insight] = Field(default_factory=list)
    """findings of the auto-analysis"""
    suggestions: list[str] = Field(default_factory=list)
    """what to change in the suite"""


class JudgeSummary(Model):
    """Each judge's mean per variant and, for an ensemble, how far the judges agree."""

    judges: list[str]
    """judge ids (executor:model)"""
    mean_by_variant: dict[str, dict[str, float | None]]
    """judge -> variant -> mean score"""
    agreement: JudgeAgreement | None = None
    """for an ensemble: how far the judges agree"""


class PairwiseSummary(Figures):
    """--pairwise: wins, ties and losses over cases with an exact sign test."""

    control: str
    """the control variant"""
    treatment: str
    """the treatment variant"""
    wins: int
    """cases the treatment won"""
    ties: int
    """cases tied (a preference that flips with the order is a tie)"""
    losses: int
    """cases the control won"""
    unresolved: int
    """judgements that failed"""
    p_sign: float
    """exact sign test on wins vs losses"""
    per_case: dict[str, int] = Field(alias="perCase")
    """sample_id -> net wins"""
    pairs: int = Field(default=0, description="judgements with a winner in both orders")
    flips: int = Field(
        default=0, description="of those, the same position won in both orders (position bias)"
    )


class Aggregate(Model):
    """What ``tasks.stats.aggregate.aggregate`` computes from a run's graded records: the figures the
    report's top level carries, rounded to six significant digits."""

    scale: Scale
    """the scale the scores are on"""
    summary: dict[str, VariantSummary]
    """variant -> its figures"""
    case_stats: dict[str, dict[str, CaseStats]]
    """sample_id -> variant -> its figures over runs"""
    comparisons: list[Comparison]
    """each treatment against the control"""
    multiple_comparisons: Literal["holm"] | None
    """the adjustment of p over several comparisons"""
    judge: JudgeSummary | None
    """each judge's means, and an ensemble's agreement"""
    analysis: Analysis
    """the auto-analysis"""
    pairwise: list[PairwiseSummary] | None = None
    """--pairwise: the judges' head-to-head preferences"""
