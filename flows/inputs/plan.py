"""From inputs to units: what to call, in what order, under which cache key."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from executors.base import Executor
from executors.schema import RunRequest
from flows.inputs.samples import Variant
from graders.judge import PROMPT_VERSION, SCORE_SCHEMA_JSON, JudgePrompt
from graders.schema import Sample
from tasks.schema import Unit
from tasks.store.cache import cache_key

CHARS_PER_TOKEN = 4  # rough estimate for the dry-run plan


@dataclass(frozen=True)
class Target:
    """The model under test (or a judge): executor instance, name and model id."""

    executor: Executor
    model: str
    endpoint: str  # part of the cache key: the same model name on another server is another model


def unit_key(target: Target, request: RunRequest, run: int, extra: str = "") -> str:
    return cache_key(
        "call",
        {
            "executor": target.executor.name,
            "executor_version": target.executor.cache_version(),
            "endpoint": target.endpoint,
            "request": request.model_dump(mode="json"),
            "run": run,
            "extra": extra,
        },
    )


def execution_units(
    samples: list[Sample],
    variants: list[Variant],
    target: Target,
    *,
    repeat: int,
    temperature: float | None,
    max_tokens: int | None,
    seed: int,
) -> Iterator[Unit]:
    """One unit per sample x variant x run. Variants of a case sit next to each other in a seeded
    random order, and the (case, run) blocks are shuffled, so drift over time favours no variant.
    The order is drawn first and each unit made as it is asked for: a head start sends its first
    calls before the last of 10,000 keys is hashed."""
    rng = random.Random(seed)
    blocks: list[tuple[int, Sample, list[Variant]]] = []
    for run in range(1, repeat + 1):
        for sample in samples:
            block = list(variants)
            rng.shuffle(block)
            blocks.append((run, sample, block))
    rng.shuffle(blocks)
    for run, sample, block in blocks:
        for variant in block:
            request = RunRequest(
                executor=target.executor.name,
                model=target.model,
                system=variant.artifact,
                prompt=sample.full_prompt,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
            )
            yield Unit(
                kind="execute",
                sample_id=sample.sample_id,
                variant=variant.name,
                run=run,
                request=request,
                key=unit_key(target, request, run),
                label=f"{sample.sample_id} · {variant.name} · run {run}",
            )


@dataclass(frozen=True)
class JudgeJob:
    """One judgement to obtain: which judge, which prompt, about which output."""

    target: Target
    prompt: JudgePrompt
    sample_id: str
    variant: str
    run: int
    repeat: int = 1
    schema_json: str = SCORE_SCHEMA_JSON
    max_tokens: int = 256


def judge_unit(job: JudgeJob, attempt: int) -> Unit:
    """A judge call. The variant only names the task run in the UI; the judge's prompt never has it.
    The attempt is part of the key, so the one retry of a bad judgement is a real new call."""
    request = RunRequest(
        executor=job.target.executor.name,
        model=job.target.model,
        system=job.prompt.system,
        prompt=job.prompt.prompt,
        temperature=0.0,
        max_tokens=job.max_tokens,
        seed=job.repeat,
        response_schema=job.schema_json,
    )
    return Unit(
        kind="judge",
        sample_id=job.sample_id,
        variant=job.variant,
        run=job.run,
        request=request,
        key=unit_key(job.target, request, job.repeat, extra=f"judge-v{PROMPT_VERSION}-attempt{attempt}"),
        label=f"judge {job.prompt.aspect} · {job.sample_id} · {job.variant} · run {job.run}"
        + (f" · repeat {job.repeat}" if job.repeat > 1 else "")
        + (" · retry" if attempt else ""),
    )


def prompt_tokens(unit: Unit) -> int:
    """A unit's prompt and system text in tokens, estimated as characters / 4."""
    return (len(unit.request.prompt) + len(unit.request.system or "")) // CHARS_PER_TOKEN


def estimate_tokens(units: list[Unit], max_tokens: int | None) -> tuple[int, int]:
    """(input, output) token estimates for a dry run: characters / 4, and the output cap (or 256)."""
    return sum(prompt_tokens(u) for u in units), len(units) * (max_tokens or 256)
