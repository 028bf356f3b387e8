"""Validated inputs of a sample-mode run. No Prefect here: bad input fails fast, before start-up."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from executors.base import ExecutorSettings, HttpExecutor
from executors.batch import batch_client
from executors.errors import InputError
from executors.local import DEFAULT_MODEL as LOCAL_MODEL
from executors.local import weights_origin
from executors.registry import EXECUTORS, usable_executor
from executors.sandbox import checked_isolation
from flows.inputs.ablation import plan_variants
from flows.inputs.files import check_endpoint, skillab_home, writable_file, writable_folder
from flows.inputs.gold import Gold, load_gold
from flows.inputs.options import BenchOptions
from flows.inputs.plan import Target, execution_units
from flows.inputs.samples import BASELINE, Variant, find_samples, load_samples
from flows.inputs.suites import omk
from graders import registry
from graders.judge import vendor_of
from graders.leakage import ARTIFACT_WORDS, case_leaks, sample_fields
from graders.schema import Sample
from graders.validation import GraderFinding, broken_notices, validate_samples, without_broken
from tasks.context import current, handover_key
from tasks.schema import CallPolicy, Unit


def prepared_cache_dir(options: BenchOptions) -> Path:
    return Path(options.cache_dir) if options.cache_dir else skillab_home() / "cache"


def prepared_output_dir(options: BenchOptions) -> Path:
    return Path(options.output_dir) if options.output_dir else skillab_home() / "reports"


@dataclass
class Prepared:
    """Validated inputs of one run: everything is checked before any model call."""

    options: BenchOptions
    samples_path: Path
    samples: list[Sample]
    variants: list[Variant]
    control: str
    target: Target
    judges: list[Target]
    notices: list[str] = field(default_factory=list)
    gold: Gold | None = None
    ablated: dict[str, str] = field(default_factory=dict)  # --ablate: variant -> the heading left out
    graders: list[GraderFinding] = field(default_factory=list)  # tried on the reference answers
    leaks: list[str] = field(default_factory=list)  # cases that repeat an artifact (also in notices)
    _units: tuple[Unit, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def cache_dir(self) -> Path | None:
        return prepared_cache_dir(self.options) if self.options.cache else None

    @property
    def output_dir(self) -> Path:
        return prepared_output_dir(self.options)

    def units(self) -> list[Unit]:
        """Every execution unit of the run, in its seeded interleaved order. Built once: the head
        start, the plan line and the runner each ask (0.25 s of hashing at 10,000 units)."""
        if self._units is None:
            self._units = tuple(self.iter_units())
        return list(self._units)

    def iter_units(self) -> Iterator[Unit]:
        """The same units, as built (``units``), else each made as it is asked for: the head start
        takes its first few hundred while the runner's thread builds them all."""
        if self._units is not None:
            return iter(self._units)
        o = self.options
        return execution_units(
            self.samples,
            self.variants,
            self.target,
            repeat=o.repeat,
            temperature=o.temperature,
            max_tokens=o.max_tokens,
            seed=o.seed,
        )

    def release_units(self) -> None:
        """The calls are made: the units go before the report is built (at 10,000 units, 20 MB at the
        run's peak of memory). Asked again, they are built anew."""
        self._units = None

    def policy(self, target: Target) -> CallPolicy:
        o = self.options
        return CallPolicy(
            timeout_s=o.timeout,
            retries=o.retries,
            backoff_s=o.retry_backoff,
            cache_dir=str(self.cache_dir) if self.cache_dir else None,
            base_url=o.base_url if target is self.target else None,
            prices_file=o.prices,
            prompt_cache=o.prompt_cache,
        )


def make_target(
    executor: str, model: str | None, options: BenchOptions, flag: str, base_url: str | None
) -> Target:
    if model is not None and (not model.strip() or model != model.strip()):
        raise InputError(f"--model: {model!r} is not a model name (empty, or surrounded by spaces)")
    agentic = getattr(EXECUTORS.get(executor), "agentic", False)
    settings = ExecutorSettings(
        base_url=base_url,
        timeout_s=options.timeout,
        prices_file=options.prices,
        isolation=checked_isolation(options.os_sandbox) if agentic else "none",
        allow_network=options.allow_network,
    )
    ex = usable_executor(executor, flag, settings)
    name = ex.name
    model = model or ex.default_model
    if name == "local" and model != LOCAL_MODEL and not Path(model).expanduser().is_file():
        raise InputError(f"--model: GGUF file not found: {model}")
    endpoint = ex.base_url if isinstance(ex, HttpExecutor) else "in-process"
    if isinstance(ex, HttpExecutor):
        check_endpoint(endpoint, "--base-url" if base_url else ex.env_base_url)
    elif base_url:  # an agent CLI's endpoint, reached through the forwarder
        check_endpoint(base_url, "--base-url")
    return Target(ex, model, endpoint)


def batch_notices(options: BenchOptions, target: Target, judges: list[Target]) -> list[str]:
    """--batch needs a provider with a batch API and the cache (results land there); judges
    without one are called live, and the user is told."""
    if not options.batch:
        return []
    if not options.cache:
        raise InputError("--batch: needs the cache (a batch's results land there); drop --no-cache")
    if options.shards > 1:
        raise InputError("--batch: not with --shards (a batch already runs on the provider's machines)")
    if batch_client(target.executor) is None:
        raise InputError(
            f"--batch: the {target.executor.name} executor has no batch API (anthropic and openai have one)"
        )
    return [
        f"--batch: the judge {j.executor.name}:{j.model} has no batch API; its calls run live."
        for j in judges
        if batch_client(j.executor) is None
    ]


def judge_targets(
    options: BenchOptions, samples: list[Sample], target: Target, executor: str
) -> tuple[list[Target], list[str]]:
    """The judges the samples need (none with --no-judge), and what the user should know of them."""
    notices: list[str] = []
    judges: list[Target] = []
    needs_judge = any(s.judged or any(registry.is_judged(a) for a in s.assertions) for s in samples)
    if options.judge and needs_judge:
        default_judge = options.judge_executor or (
            "local" if EXECUTORS["local"]().problem() is None else executor
        )
        specs = options.judge_models or ((options.judge_model or ""),)
        for spec in specs:
            exe, _, model = (
                spec.rpartition(":") if ":" in spec and spec.split(":")[0] in EXECUTORS else ("", "", spec)
            )
            exe = exe or default_judge
            judges.append(
                make_target(
                    exe,
                    model or (target.model if exe == executor else None),
                    options,
                    "--judge-executor",
                    None,
                )
            )
        for j in judges:
            if j.executor.name == "local":
                notices.append(
                    f"Judge: the embedded model {j.model} — a 270M model is a weak judge; its scores mean little. "
                    "For real judging pass --judge-executor openai|anthropic|gemini --judge-model NAME."
                )
            if (j.executor.name, j.model) == (target.executor.name, target.model):
                notices.append(
                    f"Warning: the judge {j.model} is the model under test (self-preference bias)."
                )
            elif vendor_of(j.executor.name, j.model) == vendor_of(target.executor.name, target.model):
                notices.append(
                    f"Warning: the judge {j.model} is from the same vendor as the model under test "
                    f"({vendor_of(j.executor.name, j.model)}): judges tend to favour their own family."
                )
    return judges, notices


def choose_variants(options: BenchOptions, cwd: Path) -> tuple[list[Variant], dict[str, str], str]:
    """The variants, the ablated sections (--ablate) and the control. An oh-my-knowledge project
    (eval.yaml, or --control with --treatment) names its variants by role."""
    skill_dir = cwd / options.skill_dir
    if options.project or options.treatment:
        if options.ablate:
            raise InputError("--ablate: not with --treatment or an eval.yaml (it makes its own variants)")
        variants, control = omk.variants_of(
            options.project and str(cwd / options.project),
            options.control,
            options.treatment,
            options.variants,
            cwd,
            skill_dir,
        )
        return variants, {}, control
    variants, ablated = plan_variants(skill_dir, options)
    names = [v.name for v in variants]
    control = names[0] if ablated else options.control or (BASELINE if BASELINE in names else names[0])
    if control not in names:
        raise InputError(f"--control: {control!r} is not among the variants {','.join(names)}")
    return variants, ablated, control


def prepared_for(options: BenchOptions, cwd: Path) -> Prepared:
    """The inputs handed over for exactly these options and folder, else prepared now (a deployment's
    flow run, a re-run in the same process, a shard)."""
    handed: Prepared | None = current().take_handed_over(handover_key(options, cwd))
    return handed or prepare(options, cwd)


def prepare(options: BenchOptions, cwd: Path) -> Prepared:
    samples_path = find_samples(options.samples and str(cwd / options.samples), cwd)
    samples = load_samples(samples_path)
    variants, ablated, control = choose_variants(options, cwd)
    if options.prices:
        if not (cwd / options.prices).is_file():
            raise InputError(f"--prices: file not found: {options.prices}")
        # Absolute: executors are shared per settings in a process (a nightly runs several suites,
        # each from its own folder), so a relative path would name another suite's file.
        options = options.model_copy(update={"prices": str((cwd / options.prices).resolve())})
    writable_folder(prepared_output_dir(options), "--output-dir")
    if options.cache:
        writable_folder(prepared_cache_dir(options), "--cache-dir")
    for flag, ci_file in (("--junit", options.junit), ("--github-summary", options.github_summary)):
        if ci_file:
            writable_file(cwd / ci_file, flag)
    if options.shards > 1 and not options.cache:
        raise InputError(
            "--shards: needs the cache (shards hand their results over through it); drop --no-cache"
        )
    notices: list[str] = []
    executor = options.executor or "local"
    target = make_target(executor, options.model, options, "--executor", options.base_url)
    if options.executor is None:
        notices.append(
            f"No executor configured: using the embedded model {target.model} ({weights_origin(target.model)}). "
            "Pass --executor openai|anthropic|gemini and --model to test a real model."
        )
    notices += omk.notices(options.project and str(cwd / options.project))
    leaks = sample_leaks(samples, variants)
    notices += leaks
    graders = validate_samples(samples)
    notices += broken_notices(graders)
    samples = without_broken(samples, graders)
    judges, judge_notices = judge_targets(options, samples, target, executor)
    notices += judge_notices + batch_notices(options, target, judges)
    gold = load_gold(cwd / options.judge_gold) if options.judge_gold else None
    if gold is not None and not judges:
        raise InputError(
            "--judge-gold: this run has no judge to check (--no-judge, or no sample has a rubric or dimensions)"
        )
    if ablated:
        notices.append(
            f"--ablate {control}: the full artifact against {len(ablated)} variants without a section each"
        )
    prepared = Prepared(options, samples_path, samples, variants, control, target, judges, notices, gold)
    prepared.ablated, prepared.graders, prepared.leaks = ablated, graders, leaks
    return prepared


def sample_leaks(samples: list[Sample], variants: list[Variant]) -> list[str]:
    """Samples that already hold a variant's artifact (graders/leakage.py)."""
    cases = [
        field
        for s in samples
        for field in sample_fields(
            s.sample_id,
            s.prompt,
            s.context,
            [getattr(a, key, None) for a in s.assertions for key in ("value", "reference")],
            s.reference_output,
        )
    ]
    sources = [(f"variant {v.name}'s artifact", v.artifact or "") for v in variants]
    return case_leaks(cases, sources, ARTIFACT_WORDS)
