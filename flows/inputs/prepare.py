"""Validated inputs of a sample-mode run. No Prefect here: bad input fails fast, before start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from executors.base import ExecutorSettings, HttpExecutor
from executors.errors import InputError
from executors.local import DEFAULT_MODEL as LOCAL_MODEL
from executors.local import weights_origin
from executors.registry import EXECUTORS, usable_executor
from flows.inputs.options import BenchOptions
from flows.inputs.plan import Target, execution_units
from flows.inputs.samples import BASELINE, Variant, find_samples, load_samples, load_variants
from graders import registry
from graders.judge import vendor_of
from graders.schema import Sample
from tasks.schema import CallPolicy, Unit


def skillab_home() -> Path:
    return Path(os.environ.get("SKILLAB_HOME") or Path.home() / ".skillab")


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

    @property
    def cache_dir(self) -> Path | None:
        if not self.options.cache:
            return None
        return Path(self.options.cache_dir) if self.options.cache_dir else skillab_home() / "cache"

    @property
    def output_dir(self) -> Path:
        return Path(self.options.output_dir) if self.options.output_dir else skillab_home() / "reports"

    def units(self) -> list[Unit]:
        """Every execution unit of the run, in its seeded interleaved order."""
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

    def policy(self, target: Target) -> CallPolicy:
        o = self.options
        return CallPolicy(
            timeout_s=o.timeout,
            retries=o.retries,
            backoff_s=o.retry_backoff,
            cache_dir=str(self.cache_dir) if self.cache_dir else None,
            base_url=o.base_url if target is self.target else None,
            prices_file=o.prices,
        )


def make_target(
    executor: str, model: str | None, options: BenchOptions, flag: str, base_url: str | None
) -> Target:
    settings = ExecutorSettings(base_url=base_url, timeout_s=options.timeout, prices_file=options.prices)
    ex = usable_executor(executor, flag, settings)
    name = ex.name
    model = model or ex.default_model
    if name == "local" and model != LOCAL_MODEL and not Path(model).expanduser().is_file():
        raise InputError(f"--model: GGUF file not found: {model}")
    endpoint = ex.base_url if isinstance(ex, HttpExecutor) else "in-process"
    return Target(ex, model, endpoint)


def prepare(options: BenchOptions, cwd: Path) -> Prepared:
    samples_path = find_samples(options.samples and str(cwd / options.samples), cwd)
    samples = load_samples(samples_path)
    variants = load_variants(cwd / options.skill_dir, options.variants)
    names = [v.name for v in variants]
    control = options.control or (BASELINE if BASELINE in names else names[0])
    if control not in names:
        raise InputError(f"--control: {control!r} is not among the variants {','.join(names)}")
    if options.prices and not (cwd / options.prices).is_file():
        raise InputError(f"--prices: file not found: {options.prices}")
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
    return Prepared(options, samples_path, samples, variants, control, target, judges, notices)
