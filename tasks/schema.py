"""What crosses the tasks' boundary: a unit of work and the policy it runs under."""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field

from executors.base import ExecutorSettings
from executors.schema import Frozen, RunRequest, RunResult
from graders.schema import Grade
from tasks.stats.models import Figures, Model


class UnitKind(StrEnum):
    EXECUTE = "execute"  # the model under test answers a case
    JUDGE = "judge"  # a judge scores an answer
    SESSION = "session"  # an agent session (agentic and trigger mode)


class Arm(StrEnum):
    """The two arms of agentic mode."""

    WITH_SKILL = "with-skill"
    BASELINE = "baseline"


class VerdictLabel(StrEnum):
    """The answer to "is B better than A, and how sure are we?" (see tasks.stats.statistics.verdict)."""

    BETTER = "BETTER"
    WORSE = "WORSE"
    EQUIVALENT = "EQUIVALENT"
    UNDERPOWERED = "UNDERPOWERED"
    INCONCLUSIVE = "INCONCLUSIVE"
    INSUFFICIENT_DATA = "INSUFFICIENT DATA"


class Unit(Frozen):
    """One model call: an execution (sample x variant x run) or a judgement."""

    kind: UnitKind
    sample_id: str
    variant: str
    run: int
    request: RunRequest
    key: str  # the cache key: a hash of everything that determines the call
    label: str  # what the Prefect UI shows for this task run


class CallPolicy(Frozen):
    timeout_s: float = 120.0
    retries: int = 3
    backoff_s: float = 1.0
    max_retry_after_s: float = 120.0
    cache_dir: str | None = None
    base_url: str | None = None
    prices_file: str | None = None
    prompt_cache: bool = True

    def settings(self) -> ExecutorSettings:
        return ExecutorSettings(
            base_url=self.base_url,
            timeout_s=self.timeout_s,
            prices_file=self.prices_file,
            prompt_cache=self.prompt_cache,
        )


class Record(Frozen):
    """One execution with its grade: the row aggregation works on."""

    sample_id: str
    variant: str
    run: int
    cluster: str | None = None
    result: RunResult
    grade: Grade | None = None
    gate: bool = Field(default=True, description="False: never a pass, whatever the score (a failed check)")


class Scale(Frozen):
    """The score scale of a mode: 1-5 composite in sample mode, 0-100 weighted total in agentic mode."""

    name: str = Field(description="the scale's name")
    minimum: float = Field(description="lowest score (in sample mode an errored execution scores this)")
    maximum: float = Field(description="highest score")
    pass_threshold: float = Field(description="a run passes at or above this")
    margin: float = Field(description="default practical margin of the verdict")
    min_effect: float = Field(description="default effect to detect")
    errors_score_minimum: bool = Field(
        default=True,
        description="an errored execution scores the minimum (sample mode: failures are data); False: "
        "it is excluded from scores and only counted (agentic mode: a failed session is no 0 score)",
    )

    @property
    def points_per_unit(self) -> float:
        """Conversion of a score difference to points on 0-100, for the seed's verdict bands."""
        return 100.0 / (self.maximum - self.minimum)


SAMPLE_SCALE = Scale(
    name="composite 1-5", minimum=1.0, maximum=5.0, pass_threshold=3.5, margin=0.1, min_effect=0.3
)
#: Trigger mode: rates from 0 to 1. A query "passes" when its rate meets the target (recall 1, or no
#: false fire); margin and effect are the A/B comparison's defaults (tasks.stats.trigger_stats).
TRIGGER_SCALE = Scale(
    name="trigger rates 0-1",
    minimum=0.0,
    maximum=1.0,
    pass_threshold=1.0,
    margin=0.05,
    min_effect=0.10,
    errors_score_minimum=False,
)
AGENTIC_SCALE = Scale(
    name="weighted total 0-100",
    minimum=0.0,
    maximum=100.0,
    pass_threshold=70.0,
    margin=2.0,
    min_effect=5.0,
    errors_score_minimum=False,
)


class NotRunReason(StrEnum):
    BUDGET = "budget"  # --max-calls or --budget-usd reached
    BATCH = "batch pending"  # in a provider batch that has not ended (--no-batch-wait): re-run to collect


class NotRun(Figures):
    """A unit this run did not complete: a budget kept it from running, or its batch is pending."""

    model_config = ConfigDict(frozen=True)

    sample_id: str
    """the case"""
    variant: str
    """the variant"""
    run: int
    """the run"""
    kind: UnitKind
    """execute, judge or session"""
    reason: NotRunReason = NotRunReason.BUDGET
    """budget (--max-calls, --budget-usd reached) or batch pending (re-run to collect it)"""


class Seen(Frozen):
    """What the units' answers said of the world they ran in: the model ids the responses reported
    (per unit kind: the model under test, the judge), per variant the tools and the skills the
    agent CLI offered its sessions, and the fleet's images. Sorted, so two runs compare by equality."""

    models: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    tools: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    listed: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    images: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """work pool -> the container images its sessions ran in (as each container named its own)"""

    def merged(self, other: Seen) -> Seen:
        def union(a: dict[str, tuple[str, ...]], b: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
            return {k: tuple(sorted({*a.get(k, ()), *b.get(k, ())})) for k in sorted({*a, *b})}

        return Seen(
            models=union(self.models, other.models),
            tools=union(self.tools, other.tools),
            listed=union(self.listed, other.listed),
            images=union(self.images, other.images),
        )


class RunStats(Frozen):
    """What a run's runner did (model calls or agent sessions), frozen for the report: calls made or
    sessions started, cache hits, spend, units not run."""

    calls: int = 0
    cache_hits: int = 0
    spent_by_kind: dict[str, float] = Field(default_factory=dict)
    not_run: tuple[NotRun, ...] = ()
    cache_errors: int = 0
    cache_error: str | None = Field(default=None, description="the first reason a result was not cached")
    warm_up_calls: int = Field(
        default=0, description="calls that put a shared prefix in the provider's cache"
    )
    batched_calls: int = Field(default=0, description="calls answered through a provider's batch API")
    seen: Seen = Field(default_factory=Seen, description="what the answers said of the world they ran in")

    def with_judge(self, judge: RunStats) -> RunStats:
        """These figures with what a separate judge runner saw (its answers' model ids)."""
        return self.model_copy(update={"seen": self.seen.merged(judge.seen)})


class TranscriptStep(Figures):
    """One step of an agent session, as the report shows it."""

    kind: str
    """init, text, tool_use, tool_result, error or result"""
    tool: str | None
    """the tool, for tool steps"""
    text: str
    """the text or the tool input, shortened"""
    is_error: bool
    """the step reported an error"""


class ShardRun(Model):
    """One shard of a sharded sample run: the flow run a work pool's worker ran it in."""

    shard: int
    """the shard's index"""
    flow_run: str
    """its flow run's id"""
    state: str | None
    """how that flow run ended"""
