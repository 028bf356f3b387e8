"""Every option of a sample-mode benchmark: one model for the CLI, skillab.yaml and deployments."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from executors.errors import InputError
from executors.registry import AGENT_CLIS, EXECUTORS
from executors.sandbox import ALLOW_NETWORK_HELP, OS_SANDBOX_HELP
from tasks.schema import SAMPLE_SCALE

FLEET_SESSIONS_HELP = (
    "at most this many agent sessions and judge calls at once across every run on this Prefect server "
    "(all the workers of a pool), per provider and API account: a Prefect global concurrency limit"
)
FLEET_RPM_HELP = (
    "at most this many agent sessions and judge calls started a minute across every run on this Prefect "
    "server, per provider and API account (a global concurrency limit with slot decay); a 429 from any of "
    "them makes every run wait a minute's starts"
)
FLEET_POOL_HELP = (
    "run every agent session in a container of this Prefect Docker work pool (its workers on this machine "
    "or others); register it once with `python -m deployments --register-fleet POOL --fleet-storage URL`"
)


def fleet_sandbox(pool: str | None, os_sandbox: bool, allow_network: bool) -> None:
    """Sessions in the fleet's containers keep bubblewrap and the model endpoint alone: the
    container shares its machine's network and holds what bubblewrap needs (exit 2 otherwise)."""
    if pool and (not os_sandbox or allow_network):
        flag = "--no-os-sandbox" if not os_sandbox else "--allow-network"
        raise InputError(
            f"--fleet-pool: not with {flag} (a session in the fleet's containers always runs in "
            "bubblewrap, reaching only its model)"
        )


REQUIRE_VALID_HELP = (
    "CI gate: exit 1 unless the report's validity certificate has no FAIL (broken graders, too many "
    "errors or grading errors, too little power, an unreliable judge, a contaminated baseline)"
)

#: The shard flow and its deployment, as ``run_deployment`` names it: "<flow>/<deployment>".
SHARD_FLOW = "bench-shard"
SHARD_DEPLOYMENT_NAME = "skillab-shard"
SHARD_DEPLOYMENT = f"{SHARD_FLOW}/{SHARD_DEPLOYMENT_NAME}"


class RunOptions(BaseModel):
    """What the options of every mode share: the budget, the sandbox, the certificate's limits, where
    the report goes. A mode's options subclass it, redefining a field where its default or its words
    are its own."""

    # NaN and infinity are refused everywhere: `--threshold nan` would pass every gate.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    base_url: str | None = Field(None, description="override the provider endpoint")
    concurrency: int = Field(4, ge=1, description="units in flight at once")
    timeout: float = Field(120.0, gt=0, description="seconds per unit")
    seed: int = Field(0, description="seed for shuffling and the bootstrap")
    os_sandbox: bool = Field(True, description=OS_SANDBOX_HELP)
    allow_network: bool = Field(False, description=ALLOW_NETWORK_HELP)
    max_error_rate: float = Field(0.1, ge=0, le=1, description="failed share of the runs that blocks a claim")
    require_valid: bool = Field(False, description=REQUIRE_VALID_HELP)
    output_dir: str | None = Field(
        None, description="also write the report JSON here (for the report server)"
    )
    suite: str | None = Field(None, description="suite name, recorded in the report")
    dry_run: bool = Field(False, description="print the plan; run nothing")
    budget_usd: float | None = Field(None, gt=0, description="stop starting units past this spend")
    max_calls: int | None = Field(None, ge=1, description="stop starting units past this count")


class NightControl(BaseModel):
    """A suite's same-night control (sample and trigger suites)."""

    model_config = RunOptions.model_config

    same_night_control: bool = Field(
        False,
        description="a suite's night runs each variant changed since the last night that passed beside that "
        "night's artifact (<name>@good), reading no cache: the skill's regression told from the world's change",
    )
    control_every: int = Field(1, ge=1, description="with --same-night-control: the control every N nights")


class BenchOptions(NightControl, RunOptions):
    """The parameters of a sample-mode run. Flags override ``skillab.yaml``, which overrides these
    defaults."""

    samples: str | None = Field(None, description="samples file; default eval-samples.json/.yaml/.yml")
    skill_dir: str = Field("skills", description="folder of the artifact variants")
    variants: tuple[str, ...] = Field(("v1", "v2"), description="variant names; 'baseline' = no artifact")
    control: str | None = Field(
        None, description="the variant others are compared with (default: baseline, else the first)"
    )
    treatment: tuple[str, ...] = Field(
        (),
        description="oh-my-knowledge naming: the variants compared with --control (names in --skill-dir, "
        "paths, or baseline); replaces --variants",
    )
    project: str | None = Field(
        None,
        description="an oh-my-knowledge eval.yaml: its samples, variants and options (--config eval.yaml "
        "sets it)",
    )
    executor: str | None = Field(
        None,
        description=f"{' | '.join(n for n in EXECUTORS if n not in AGENT_CLIS)}, or an agent CLI answering "
        f"each case in its sandbox: {' | '.join(AGENT_CLIS)} (default: local)",
    )
    model: str | None = Field(None, description="model under test (default: the executor's default)")
    temperature: float | None = Field(None, ge=0, le=2, description="sampling temperature, passed through")
    max_tokens: int | None = Field(None, ge=1, description="output token limit, passed through")
    seed: int = Field(0, description="seed for the model (where supported), shuffling and bootstrap")
    judge: bool = Field(True, description="grade with the LLM judge; --no-judge: skip the LLM judge")
    judge_executor: str | None = Field(
        None, description="executor of the judge (default: local if installed)"
    )
    judge_model: str | None = Field(None, description="judge model")
    judge_models: tuple[str, ...] = Field(
        (), description="ensemble of judge models (executor:model or model)"
    )
    judge_repeat: int = Field(1, ge=1, description="independent judgements per output, averaged")
    pairwise: bool = Field(
        False, description="also let the judge pick the better output of each pair, both orders"
    )
    judge_gold: str | None = Field(
        None, description="human-scored outputs (YAML/JSON) to check the judge against before the run"
    )
    min_judge_alpha: float = Field(
        0.667,
        ge=0,
        le=1,
        description="with --judge-gold: below this Krippendorff's alpha the verdict is marked as resting "
        "on an unreliable judge (and ci fails)",
    )
    diagnose: bool = Field(
        True,
        description="ask an LLM for suggestions on grouped failures; --no-diagnose: group failures without asking",
    )
    ablate: str | None = Field(
        None,
        description="a variant whose markdown artifact is run with each section left out, paired against "
        "the full artifact (--variants is not used)",
    )
    ablate_sections: tuple[str, ...] = Field(
        (), description="with --ablate: only these sections (headings, any level)"
    )
    output_dir: str | None = Field(
        None, description="reports folder (default ~/.skillab/reports or $SKILLAB_HOME/reports)"
    )
    cache_dir: str | None = Field(None, description="result cache (default ~/.skillab/cache)")
    cache: bool = Field(
        True,
        description="reuse cached calls and cache new ones; --no-cache: neither read nor write the cache",
    )
    dry_run: bool = Field(False, description="print the plan, call nothing")
    os_sandbox: bool = Field(True, description=f"agent CLI executors: {OS_SANDBOX_HELP}")
    allow_network: bool = Field(False, description=f"agent CLI executors: {ALLOW_NETWORK_HELP}")
    prompt_cache: bool = Field(
        True,
        description="mark the artifact for the provider's prompt cache and warm it once per variant "
        "before the fan-out; --no-prompt-cache: no cache marker and no warm-up call",
    )
    head_start: bool = Field(
        True,
        description="send the first calls while Prefect starts, each its task run's first attempt; "
        "--no-head-start: the first calls only from task runs",
    )
    batch: bool = Field(
        False, description="send calls through the provider's batch API (Anthropic, OpenAI: half price)"
    )
    batch_wait: bool = Field(
        True, description="wait for batches to end; --no-batch-wait: poll once, a re-run collects the rest"
    )
    batch_poll: float = Field(60.0, gt=0, description="seconds between polls of a pending batch")
    sequential: bool = Field(
        False,
        description="run cases in waves and stop once an anytime-valid confidence sequence settles "
        "every comparison against --margin",
    )
    wave: int = Field(20, ge=2, description="cases per wave with --sequential")
    blind: bool = Field(False, description="label variants Variant A/B/... in the report")
    concurrency: int = Field(4, ge=1, description="model calls in flight at once")
    repeat: int = Field(1, ge=1, description="real, independent runs per sample and variant")
    timeout: float = Field(120.0, gt=0, description="seconds per model call")
    retries: int = Field(3, ge=0, description="retries of a transient failure (429, 5xx, timeout)")
    retry_backoff: float = Field(1.0, ge=0, description="first retry delay in seconds, doubling each retry")
    prices: str | None = Field(
        None, description="YAML/JSON price overrides: {model: {input, output}} USD per 1M tokens"
    )
    margin: float | None = Field(
        None, ge=0, description="practical margin for the verdict (default 0.1 on 1-5)"
    )
    min_effect: float | None = Field(
        None, gt=0, description="effect the user wants to detect (default 0.3 on 1-5)"
    )
    max_error_rate: float = Field(
        0.1, ge=0, le=1, description="errored+ungraded share above which no improvement is claimed"
    )
    threshold: float = Field(3.5, ge=1, le=5, description="ci: minimum average composite score per variant")
    require: Literal["none", "better", "not-worse"] = Field(
        "none", description="ci: also gate on the verdict"
    )
    suite: str | None = Field(None, description="suite name for regression history")
    history_url: str | None = Field(
        None,
        description="a team's one history: a folder or s3:// URL where every machine's reports of the suite "
        "are kept; a run compares with the newest earlier night in it and adds its own",
    )
    budget_usd: float | None = Field(None, gt=0, description="stop scheduling new calls past this spend")
    max_calls: int | None = Field(None, ge=1, description="stop scheduling new calls past this count")
    shards: int = Field(1, ge=1, description="split execution over this many flow runs on a work pool")
    shard_deployment: str = Field(SHARD_DEPLOYMENT, description="deployment that runs a shard")
    junit: str | None = Field(None, description="write a JUnit XML file")
    github_summary: str | None = Field(None, description="write a GitHub job summary (markdown)")

    @property
    def practical_margin(self) -> float:
        """--margin, or the sample scale's own (0.1 on 1-5)."""
        return SAMPLE_SCALE.margin if self.margin is None else self.margin
