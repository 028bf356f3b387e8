"""The figures of tasks/stats that the report carries, as models: defined once, here, and imported
by the module that computes each and by the report's schema. Kept apart from the computing modules
(numpy, scipy) so that whatever only names a figure (a run's path, the report's models) does not
import them."""

from __future__ import annotations

from pydantic import Field

from tasks.stats.models import Model


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
