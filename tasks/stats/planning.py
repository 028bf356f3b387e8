"""Power planning from a pilot: how many cases, how many runs per case, and what it costs.

A pilot gives, per case, a few runs of each of two variants. The variance of a case's mean
difference D_i = mean_r B_ir - mean_r A_ir splits into two parts (paired arms, r runs each):

    Var(D_i) = s_between^2 + 2 * s_within^2 / r

* s_within^2: run-to-run variance of one variant on one case (pooled over cases and variants);
  only cases with at least 2 runs of a variant say anything about it.
* s_between^2: variance of the *true* per-case differences (cases differ in how much the artifact
  helps). Method of moments: var(D) minus the within part the pilot's runs put into it, truncated
  at 0. The case's difficulty cancels in the pairing and does not appear.

For a target effect (the smallest difference worth finding), alpha 0.05 and power 0.8, the cases
needed at r runs come from the paired t-test's power (``tasks.stats.statistics.cases_needed``) with
sd = sqrt(s_between^2 + 2 s_within^2 / r). Calls are 2 * r * cases. In calls, more runs never beat
more cases while s_between^2 > 0 (calls grow like r * s_between^2 + 2 s_within^2): repeats pay
only when the supply of cases is the limit, which ``available_cases`` states.

Cost per call (Anthropic's published ratios, checked in their docs: a 5-minute cache write costs
1.25x the input price, a cache read 0.1x, the Message Batches API halves every token price and
stacks with caching): the artifact is the system prompt, cached per variant, so the first call of
each variant (per wave, when waves are minutes apart) writes it and every other call reads it.
A prefix shorter than the model's minimum cacheable length (1,024 tokens on Sonnet and Opus) is
not cached at all. Batches are best-effort for cache hits, so "caching + batch" is an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from executors.parsing import JsonObject
from executors.pricing import ANTHROPIC_RATIOS, PriceTable
from tasks.stats import statistics as st

RUN_OPTIONS = (1, 2, 3, 5)


# ---------------------------------------------------------------- prices and cost


@dataclass(frozen=True)
class Prices:
    """USD per 1M tokens, and the multipliers of caching and batching on them."""

    input: float
    output: float
    cache_read: float = 0.1  # x input, a cache hit
    cache_write: float = 1.25  # x input, a 5-minute cache write
    batch: float = 0.5  # x every price, Message Batches API
    min_cacheable: int = 1024  # a shorter prefix is not cached

    @classmethod
    def for_model(cls, model: str, table: PriceTable | None = None) -> Prices:
        """The model's prices; cache ratios from the table (Anthropic's when none is given)."""
        price = (table or PriceTable(ratios=ANTHROPIC_RATIOS)).price(model)
        if price is None:
            raise ValueError(f"model: no price known for {model!r} (give one with --prices)")
        if not price.input:
            return cls(input=0.0, output=price.output)
        ratio = round(price.cache_read / price.input, 9), round(price.cache_write / price.input, 9)
        return cls(input=price.input, output=price.output, cache_read=ratio[0], cache_write=ratio[1])

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write", "batch"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: must be a number >= 0, got {value!r}")


@dataclass(frozen=True)
class CallShape:
    """Tokens of one execution call: the artifact (system prompt), the case's prompt, the answer."""

    artifact_tokens: int
    prompt_tokens: int
    output_tokens: int
    artifact_variants: int = 2  # how many of the two compared variants carry an artifact

    def __post_init__(self) -> None:
        for name in ("artifact_tokens", "prompt_tokens", "output_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if self.artifact_variants not in (0, 1, 2):
            raise ValueError(f"artifact_variants: must be 0, 1 or 2, got {self.artifact_variants}")


@dataclass(frozen=True)
class Cost:
    """USD for a number of calls, four ways."""

    calls: int
    plain: float
    cached: float
    batch: float
    cached_batch: float


def cost(
    calls_per_variant: int,
    shape: CallShape,
    prices: Prices,
    *,
    variants: int = 2,
    cache_writes_per_variant: int = 1,
) -> Cost:
    """What ``calls_per_variant`` calls of each of ``variants`` variants cost.

    ``cache_writes_per_variant``: calls per variant that write the cache rather than read it (one
    per wave when the flow sends one call per variant first and the rest once it has returned;
    concurrent first calls each write).
    """
    if calls_per_variant < 0 or variants < 0 or cache_writes_per_variant < 0:
        raise ValueError("calls, variants and cache writes must be >= 0")
    calls = calls_per_variant * variants
    per_m = 1e-6
    fixed = calls * (shape.prompt_tokens * prices.input + shape.output_tokens * prices.output) * per_m
    with_artifact = min(shape.artifact_variants, variants) * calls_per_variant
    artifact_plain = with_artifact * shape.artifact_tokens * prices.input * per_m
    plain = fixed + artifact_plain
    if shape.artifact_tokens >= prices.min_cacheable and with_artifact:
        writes = min(cache_writes_per_variant, calls_per_variant) * min(shape.artifact_variants, variants)
        reads = with_artifact - writes
        artifact_cached = (
            shape.artifact_tokens
            * prices.input
            * per_m
            * (writes * prices.cache_write + reads * prices.cache_read)
        )
        cached = fixed + artifact_cached
    else:
        cached = plain
    return Cost(calls, plain, cached, plain * prices.batch, cached * prices.batch)


def caching_break_even_output(shape: CallShape, prices: Prices, ratio: float) -> float | None:
    """Largest output length (tokens) at which caching costs at most ``ratio`` of plain.

    Steady state (cache writes ignored), one artifact variant's call. None when no output length
    reaches the ratio.
    """
    a, p = shape.artifact_tokens, shape.prompt_tokens
    if a < prices.min_cacheable:
        return None
    # (a*read + p)*in + o*out <= ratio * ((a + p)*in + o*out)
    room = prices.input * (ratio * (a + p) - (a * prices.cache_read + p))
    per_output = prices.output * (1 - ratio)
    if room < 0 or per_output <= 0:
        return None
    return room / per_output


# ---------------------------------------------------------------- the pilot


@dataclass(frozen=True)
class Pilot:
    """Variance components estimated from a pilot of two variants."""

    cases: int  # paired cases (runs of both variants)
    runs: float  # mean runs per case and variant
    mean_diff: float | None
    var_diff: float | None  # variance of the per-case mean differences (ddof 1)
    within: float | None  # s_within^2: run-to-run variance, pooled
    between: float | None  # s_between^2: variance of the true per-case differences
    notes: tuple[str, ...] = field(default=())


def _clean_runs(values: Sequence[float], where: str) -> tuple[list[float], int]:
    kept, ungraded = [], 0
    for r, v in enumerate(values, start=1):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{where}, run {r}: score {v!r} is not a number") from None
        if math.isnan(f):
            ungraded += 1
        elif not math.isfinite(f):
            raise ValueError(f"{where}, run {r}: score {v!r} is not a finite number")
        else:
            kept.append(f)
    return kept, ungraded


def _case_ids(
    control: Sequence[Sequence[float]], treatment: Sequence[Sequence[float]], case_ids: Sequence[str] | None
) -> list[str]:
    if len(control) != len(treatment):
        raise ValueError(
            f"pilot: control has {len(control)} cases and treatment {len(treatment)}; "
            "give the same cases in the same order"
        )
    ids = list(case_ids) if case_ids is not None else [str(i + 1) for i in range(len(control))]
    if len(ids) != len(control):
        raise ValueError(f"case_ids: {len(ids)} ids for {len(control)} cases")
    return ids


def pilot_from_runs(
    control: Sequence[Sequence[float]],
    treatment: Sequence[Sequence[float]],
    case_ids: Sequence[str] | None = None,
) -> Pilot:
    """Variance components from per-case lists of run scores (NaN = ungraded: left out, counted)."""
    ids = _case_ids(control, treatment, case_ids)
    notes: list[str] = []
    diffs: list[float] = []
    inverse_runs: list[float] = []  # 1/r_A + 1/r_B per paired case
    run_counts: list[int] = []
    within_ss, within_df = 0.0, 0
    ungraded, unpaired = 0, 0
    for cid, a_runs, b_runs in zip(ids, control, treatment, strict=True):
        a, ua = _clean_runs(a_runs, f"case {cid}, control")
        b, ub = _clean_runs(b_runs, f"case {cid}, treatment")
        ungraded += ua + ub
        if not a or not b:
            unpaired += 1
            continue
        diffs.append(float(np.mean(b) - np.mean(a)))
        inverse_runs.append(1 / len(a) + 1 / len(b))
        run_counts += [len(a), len(b)]
        for arm in (a, b):
            if len(arm) > 1:
                within_ss += float(np.var(arm, ddof=1)) * (len(arm) - 1)
                within_df += len(arm) - 1
    if ungraded:
        notes.append(f"{ungraded} ungraded run(s) left out")
    if unpaired:
        notes.append(f"{unpaired} case(s) without a scored run in both variants left out")
    n = len(diffs)
    runs = float(np.mean(run_counts)) if run_counts else 0.0
    if n == 0:
        return Pilot(0, runs, None, None, None, None, (*notes, "no paired case: nothing to plan from"))
    mean = float(np.mean(diffs))
    within = within_ss / within_df if within_df else None
    if within is None:
        notes.append(
            "every case has one run per variant: run-to-run variance cannot be told apart from "
            "case-to-case variance (repeat the pilot with at least 2 runs)"
        )
    if n < 2:
        notes.append("one paired case: the spread of differences needs at least 2 cases")
        return Pilot(n, runs, mean, None, within, None, tuple(notes))
    var_diff = float(np.var(diffs, ddof=1))
    between: float | None = None
    if within is not None:
        raw = var_diff - within * float(np.mean(inverse_runs))
        between = max(0.0, raw)
        if raw < 0:
            notes.append(
                "the differences vary less than run-to-run noise predicts: between-case variance "
                "set to 0 (method of moments, truncated)"
            )
    return Pilot(n, runs, mean, var_diff, within, between, tuple(notes))


def pilot_from_frame(
    df: pd.DataFrame,
    control: str,
    treatment: str,
    *,
    case: str = "sample_id",
    variant: str = "variant",
    score: str = "score",
) -> Pilot:
    """Variance components from a long frame (one row per execution, as ``aggregate.frame``)."""
    missing = [c for c in (case, variant, score) if c not in df.columns]
    if missing:
        raise ValueError(f"pilot: column(s) {', '.join(missing)} missing")
    present = set(df[variant].astype(str))
    for name in (control, treatment):
        if name not in present:
            raise ValueError(f"pilot: variant {name!r} has no runs (have: {', '.join(sorted(present))})")
    ids = sorted({str(c) for c in df[case]})
    groups = {
        (str(k[0]), str(k[1])): list(g)
        for k, g in df.groupby([df[case].astype(str), df[variant].astype(str)])[score]
    }
    return pilot_from_runs(
        [groups.get((c, control), []) for c in ids],
        [groups.get((c, treatment), []) for c in ids],
        ids,
    )


def frame_from_report(report: JsonObject, *, minimum: float = 1.0) -> pd.DataFrame:
    """One row per execution of a sample-mode report (``results[].variants[name]`` or its ``runs``).

    Scored as the aggregation scores: an errored run counts the scale ``minimum``, a run without a
    composite score (ungraded) is NaN. Token counts come along, for the cost of the plan.
    """
    rows: list[JsonObject] = []
    results = report.get("results")
    if not isinstance(results, list):
        raise ValueError("report: field 'results' missing or not a list")
    for i, case in enumerate(results):
        sample_id = str(case.get("sample_id", i + 1))
        variants = case.get("variants")
        if not isinstance(variants, dict):
            raise ValueError(f"report: case {sample_id}: field 'variants' missing or not a mapping")
        for name, entry in variants.items():
            for run in entry.get("runs") or [entry]:
                score = run.get("compositeScore")
                rows.append(
                    {
                        "sample_id": sample_id,
                        "variant": str(name),
                        "run": int(run.get("run", 1)),
                        "score": minimum
                        if not run.get("ok", True)
                        else (math.nan if score is None else score),
                        "input_tokens": run.get("inputTokens"),
                        "output_tokens": run.get("outputTokens"),
                    }
                )
    return pd.DataFrame(
        rows, columns=["sample_id", "variant", "run", "score", "input_tokens", "output_tokens"]
    )


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Option:
    """One way to run the benchmark: r runs per case."""

    runs: int
    sd: float | None  # sd of a case's mean difference at this r
    cases: int | None  # cases for a BETTER verdict: the interval clears the margin with 80% power
    cases_significant: int | None  # cases for the paired t-test to find the effect against 0 only
    calls: int | None  # both variants, every run, at ``cases``
    feasible: bool  # within the available cases
    cost: Cost | None


@dataclass(frozen=True)
class Plan:
    pilot: Pilot
    effect: float
    margin: float
    alpha: float
    power: float
    available_cases: int | None
    options: tuple[Option, ...]
    best: Option | None  # the feasible option with the fewest calls
    lever: str  # "more cases", "more runs" or "unknown"
    reason: str
    #: the smallest true effect that reads BETTER with 80% power at the pilot's own cases and runs
    #: (None below the cases any verdict needs, or without a spread)
    smallest_better: float | None = None

    def as_dict(self) -> dict[str, object]:
        """The plan, its pilot and options included, for ``skillab plan --json``."""
        return asdict(self)


def _sd_at(pilot: Pilot, runs: int) -> float | None:
    if pilot.var_diff is None:
        return None
    if runs == round(pilot.runs) and pilot.within is None:
        return math.sqrt(pilot.var_diff)  # the pilot's own design: measured directly
    if pilot.between is None or pilot.within is None:
        return None
    return math.sqrt(pilot.between + 2 * pilot.within / runs)


def plan(
    pilot: Pilot,
    *,
    effect: float,
    margin: float = 0.0,
    runs: Sequence[int] = RUN_OPTIONS,
    available_cases: int | None = None,
    shape: CallShape | None = None,
    prices: Prices | None = None,
    cache_writes_per_variant: int = 1,
) -> Plan:
    """Cases needed at each number of runs per case, the cheaper lever, and the cost."""
    if not (math.isfinite(effect) and effect > 0):
        raise ValueError(f"min_effect: must be a number > 0, got {effect!r}")
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin: must be a number >= 0, got {margin!r}")
    if any(r < 1 for r in runs):
        raise ValueError(f"runs: every option must be at least 1, got {list(runs)}")
    if available_cases is not None and available_cases < 1:
        raise ValueError(f"available_cases: must be at least 1, got {available_cases}")
    options = []
    for r in sorted(set(runs)):
        sd = _sd_at(pilot, r)
        n = st.cases_for_better(sd, effect, margin) if sd is not None else None
        n_zero = st.cases_needed(sd, effect) if sd is not None else None
        calls = None if n is None else 2 * r * n
        feasible = n is not None and (available_cases is None or n <= available_cases)
        price = (
            cost(r * n, shape, prices, cache_writes_per_variant=cache_writes_per_variant)
            if n is not None and shape is not None and prices is not None
            else None
        )
        options.append(Option(r, sd, n, n_zero, calls, feasible, price))
    known = [o for o in options if o.calls is not None]
    usable = [o for o in known if o.feasible]
    best = min(usable, key=lambda o: (o.calls or 0, o.runs)) if usable else None
    lever, reason = _lever(pilot, options, best, available_cases)
    sd_pilot = _sd_at(pilot, max(1, round(pilot.runs)))
    mde = st.minimum_detectable_effect(sd_pilot, pilot.cases) if sd_pilot is not None else None
    smallest = None if mde is None or pilot.cases < st.MIN_SETTLED_CASES else mde + margin
    return Plan(
        pilot,
        effect,
        margin,
        st.ALPHA,
        st.POWER,
        available_cases,
        tuple(options),
        best,
        lever,
        reason,
        smallest,
    )


def _lever(
    pilot: Pilot, options: list[Option], best: Option | None, available: int | None
) -> tuple[str, str]:
    if pilot.var_diff is None:
        return "unknown", "; ".join(pilot.notes) or "the pilot has fewer than 2 paired cases"
    if pilot.var_diff == 0 and not pilot.within:
        return "more cases", (
            "every case moved by the same amount and runs do not vary: the exact sign test needs 6 "
            "cases, whatever the runs"
        )
    if pilot.within is None:
        one = options[0]
        return "unknown", (
            f"at {one.runs} run(s) per case {one.cases} cases are needed; whether repeats would be "
            "cheaper cannot be told from a pilot with one run per case (repeat it with 2 runs)"
        )
    if best is None:
        return "unknown", (
            f"no option reaches the effect within {available} cases; the smallest need is "
            f"{min((o.cases for o in options if o.cases), default=None)} cases"
        )
    share = pilot.between / (pilot.between + 2 * pilot.within) if pilot.between is not None else 0.0
    if best.runs == min(o.runs for o in options):
        return "more cases", (
            f"{best.cases} cases x {best.runs} run(s) = {best.calls} calls is the fewest; case-to-case "
            f"variance is {share:.0%} of a single-run difference's, and repeats only shrink the rest"
        )
    return "more runs", (
        f"{best.cases} cases x {best.runs} runs = {best.calls} calls is the fewest that fits"
        + (f" in the {available} available cases" if available is not None else "")
        + f"; run-to-run noise is {1 - share:.0%} of a single-run difference's variance"
    )
