"""Cost to a verdict: a sequential benchmark (waves of cases, stop when the answer is clear) against
the fixed-N one, on simulated 1-5 scores. Runs in seconds; prints every figure and its target.

    .venv/bin/python -m benchmarks.cost_to_verdict                 # 2,000 simulated runs, seed 7
    .venv/bin/python -m benchmarks.cost_to_verdict --sims 1000 --seed 1 --wave 20

The simulated scores: case i has a difficulty (normal, sd 0.8) shared by both variants, the
treatment moves each case by the planted shift plus a case-specific part (sd 0.3: an artifact
helps some cases more than others), every run adds noise (sd 0.7: model and judge), and the result
is rounded and clipped to 1..5. The shift is solved so that the *expected observed* difference is
exactly the planted effect (rounding and clipping shrink a latent shift). A/A runs have no
treatment at all: both variants draw from the same distribution.

Procedures compared (margin 0.1, min effect 0.3 unless told otherwise; 200 cases, waves of 20):
* fixed N: ``tasks.stats.statistics.verdict`` on all 200 cases (vectorised here; checked equal to
  ``paired`` + ``verdict`` on the first runs of every scenario).
* naive: the 95% t-interval after every wave, stop as soon as it lies beyond the margin.
* sequential: the betting confidence sequence of ``tasks.stats.sequential`` after every wave, stop on
  BETTER / WORSE / EQUIVALENT; when the cases run out, "CS only" reports no decision, and
  "CS + final look" takes the fixed-N verdict on all cases (a Haybittle-Peto-style design: the
  interim looks are anytime-valid, the last one is the ordinary test).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from tasks.schema import SAMPLE_SCALE
from tasks.stats import statistics as st
from tasks.stats.planning import CallShape, Cost, Prices, caching_break_even_output, cost
from tasks.stats.sequential import confidence_paths, decide_paths

NONE = ""  # no decision: INCONCLUSIVE / UNDERPOWERED


@dataclass(frozen=True)
class Model:
    base: float = 3.0
    sd_case: float = 0.8
    sd_effect: float = 0.3
    sd_noise: float = 0.7
    runs: int = 1

    def expected(self, shift: float, treated: bool) -> float:
        """E[score] of clip(round(latent), 1, 5), latent normal: 1 + sum_k P(latent >= k + 1/2)."""
        s = math.sqrt(self.sd_case**2 + self.sd_noise**2 + (self.sd_effect**2 if treated else 0.0))
        mu = self.base + shift
        return 1 + sum(float(stats.norm.sf((k + 0.5 - mu) / s)) for k in range(1, 5))

    def shift_for(self, effect: float) -> float:
        """Latent shift whose expected observed difference is ``effect``."""
        if effect == 0:
            return 0.0
        a = self.expected(0.0, False)
        return float(optimize.brentq(lambda x: self.expected(x, True) - a - effect, -4, 4, xtol=1e-10))

    def diffs(self, rng: np.random.Generator, sims: int, cases: int, effect: float | None) -> np.ndarray:
        """sims x cases per-case differences; ``effect`` None is an A/A run (no treatment)."""
        difficulty = rng.normal(0, self.sd_case, (sims, cases, 1))
        noise = rng.normal(0, self.sd_noise, (2, sims, cases, self.runs))
        a = np.clip(np.rint(self.base + difficulty + noise[0]), 1, 5)
        if effect is None:
            b = np.clip(np.rint(self.base + difficulty + noise[1]), 1, 5)
        else:
            own = rng.normal(0, self.sd_effect, (sims, cases, 1))
            b = np.clip(np.rint(self.base + difficulty + self.shift_for(effect) + own + noise[1]), 1, 5)
        out: np.ndarray = b.mean(axis=2) - a.mean(axis=2)
        return out


# ---------------------------------------------------------------- the procedures


def t_bounds(d: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, 95% t-interval and two-sided p of the mean after each of ``ends`` cases (runs x looks)."""
    cs1 = np.cumsum(d, axis=1)[:, ends - 1]
    cs2 = np.cumsum(d * d, axis=1)[:, ends - 1]
    n = ends.astype(float)
    mean = cs1 / n
    var = np.maximum(cs2 - n * mean**2, 0) / (n - 1)
    se = np.sqrt(var / n)
    q = stats.t.ppf(1 - st.ALPHA / 2, ends - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(se > 0, 2 * stats.t.sf(np.abs(mean / se), ends - 1), np.where(mean == 0, 1.0, 0.0))
    return mean, mean - q * se, mean + q * se, p


def fixed_labels(d: np.ndarray, margin: float) -> np.ndarray:
    """The class of ``tasks.stats.statistics.verdict`` on all cases (no errors, n >= 6), per run."""
    n = np.array([d.shape[1]])
    _, low, high, p = (a[:, 0] for a in t_bounds(d, n))
    out = np.full(d.shape[0], NONE, dtype=object)
    out[(low >= -margin) & (high <= margin)] = "EQUIVALENT"
    out[(high < -margin) & (p < st.ALPHA)] = "WORSE"
    out[(low > margin) & (p < st.ALPHA)] = "BETTER"
    return out


def verdict_class(d: np.ndarray, margin: float, min_effect: float, seed: int) -> str:
    comparison = st.paired(d, seed=seed)
    v = st.verdict(
        st.VerdictInputs(
            comparison=comparison,
            margin=margin,
            min_effect=min_effect,
            p_value=comparison.p_ttest,
            points_per_unit=SAMPLE_SCALE.points_per_unit,
            error_rates=(0.0, 0.0),
            max_error_rate=0.1,
        )
    )
    label = str(v.label)
    return label if label in ("BETTER", "WORSE", "EQUIVALENT") else NONE


def first_stop(labels: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label and cases used at the first look with a decision (runs x looks of labels)."""
    decided = labels != NONE
    any_stop = decided.any(axis=1)
    first = np.where(any_stop, decided.argmax(axis=1), labels.shape[1] - 1)
    rows = np.arange(labels.shape[0])
    return np.where(any_stop, labels[rows, first], NONE), ends[first]


@dataclass
class Outcome:
    label: np.ndarray
    cases: np.ndarray


def naive(d: np.ndarray, wave: int, margin: float) -> Outcome:
    ends = np.array([*range(wave, d.shape[1], wave), d.shape[1]])
    _, low, high, _ = t_bounds(d, ends)
    labels = np.full(low.shape, NONE, dtype=object)
    labels[high < -margin] = "WORSE"
    labels[low > margin] = "BETTER"
    return Outcome(*first_stop(labels, ends))


@dataclass
class Sequential:
    cs_only: Outcome
    final_look: Outcome


@dataclass
class Paths:
    lower: np.ndarray
    upper: np.ndarray
    ends: np.ndarray


def cs_paths(d: np.ndarray, wave: int, *, alpha: float, horizon: int | None, c: float) -> Paths:
    lo, hi = -4.0, 4.0  # a paired difference on the 1-5 scale
    return Paths(*confidence_paths(d, lo, hi, wave=wave, alpha=alpha, horizon=horizon, c=c))


def sequential(paths: Paths, margin: float, fixed: np.ndarray) -> Sequential:
    label, cases = first_stop(decide_paths(paths.lower, paths.upper, margin), paths.ends)
    hybrid = np.where(label == NONE, fixed, label)
    return Sequential(Outcome(label, cases), Outcome(hybrid, cases))


# ---------------------------------------------------------------- the report


def check_fixed(d: np.ndarray, margin: float, min_effect: float, fixed: np.ndarray, k: int) -> int:
    """Compare the vectorised fixed-N classes with the real verdict on the first k runs."""
    for i in range(min(k, d.shape[0])):
        real = verdict_class(d[i], margin, min_effect, seed=i)
        if real != fixed[i]:
            raise SystemExit(f"vectorised fixed-N verdict differs from tasks.stats.statistics on run {i}")
    return min(k, d.shape[0])


def expected_cost(cases: np.ndarray, wave: int, runs: int, shape: CallShape, prices: Prices) -> Cost:
    """Mean cost over simulated runs (each writes the cache once per wave and variant)."""
    used, counts = np.unique(cases, return_counts=True)
    each = [cost(int(n) * runs, shape, prices, cache_writes_per_variant=math.ceil(n / wave)) for n in used]
    w = counts / counts.sum()
    return Cost(
        calls=round(float(sum(c.calls * k for c, k in zip(each, w, strict=True)))),
        plain=float(sum(c.plain * k for c, k in zip(each, w, strict=True))),
        cached=float(sum(c.cached * k for c, k in zip(each, w, strict=True))),
        batch=float(sum(c.batch * k for c, k in zip(each, w, strict=True))),
        cached_batch=float(sum(c.cached_batch * k for c, k in zip(each, w, strict=True))),
    )


def met(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=2000, help="simulated runs per scenario (>= 1000)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--wave", type=int, default=20)
    ap.add_argument("--margin", type=float, default=SAMPLE_SCALE.margin)
    ap.add_argument("--alpha", type=float, default=0.05, help="alpha of the confidence sequence")
    ap.add_argument("--bets", choices=["anytime", "horizon"], default="anytime")
    ap.add_argument("--truncation", type=float, default=0.5)
    ap.add_argument("--sd-case", type=float, default=Model.sd_case, help="case difficulty sd")
    ap.add_argument("--sd-effect", type=float, default=Model.sd_effect, help="sd of the effect across cases")
    ap.add_argument("--sd-noise", type=float, default=Model.sd_noise, help="run-to-run sd")
    ap.add_argument("--runs", type=int, default=1, help="runs per case and variant")
    ap.add_argument("--check", type=int, default=10, help="runs per scenario checked against verdict()")
    ap.add_argument("--artifact-tokens", type=int, default=2000)
    ap.add_argument("--prompt-tokens", type=int, default=200)
    ap.add_argument("--output-tokens", type=int, default=100)
    ap.add_argument("--e2e", type=int, default=100, help="cases of the end-to-end runs (0: skip them)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    model = Model(sd_case=args.sd_case, sd_effect=args.sd_effect, sd_noise=args.sd_noise, runs=args.runs)
    horizon = args.cases if args.bets == "horizon" else None
    min_effect = SAMPLE_SCALE.min_effect
    shape = CallShape(args.artifact_tokens, args.prompt_tokens, args.output_tokens)
    prices = Prices.for_model("claude-sonnet-4")
    print(
        f"{args.sims} simulated runs per scenario, seed {args.seed}; {args.cases} cases in waves of "
        f"{args.wave}; margin {args.margin:g}; CS alpha {args.alpha:g}, bets {args.bets}, truncation "
        f"{args.truncation:g}"
    )
    print(
        f"scores: round/clip(3 + case N(0,{model.sd_case}) [+ shift + N(0,{model.sd_effect})] + run "
        f"N(0,{model.sd_noise})) to 1..5, {model.runs} run(s) per case and variant"
    )

    # ------------------------------------------------ A/A
    print("\nA/A (no difference): share of runs ending BETTER or WORSE (false verdicts)")
    d = model.diffs(rng, args.sims, args.cases, None)
    paths = cs_paths(d, args.wave, alpha=args.alpha, horizon=horizon, c=args.truncation)
    aa_rows = []
    for margin in sorted({0.0, args.margin}):
        fixed = fixed_labels(d, margin)
        checked = check_fixed(d, margin, min_effect, fixed, args.check)
        seq = sequential(paths, margin, fixed)
        nv = naive(d, args.wave, margin)
        outcomes = {
            "fixed N": fixed,
            "naive t every wave": nv.label,
            "sequential, CS only": seq.cs_only.label,
            "sequential, CS + final look": seq.final_look.label,
        }
        rates = {k: float(np.isin(v, ("BETTER", "WORSE")).mean()) for k, v in outcomes.items()}
        equivalent = {k: float(np.mean(v == "EQUIVALENT")) for k, v in outcomes.items()}
        aa_rows.append((margin, rates))
        print(f"  margin {margin:g}:  " + "   ".join(f"{k} {v:.1%}" for k, v in rates.items()))
        if any(equivalent.values()):
            print(
                "    (EQUIVALENT, correct here: "
                + ", ".join(f"{k} {v:.1%}" for k, v in equivalent.items())
                + ")"
            )
    print(f"  (fixed-N labels checked equal to tasks.stats.statistics.verdict on {checked} runs per margin)")
    by_margin = dict(aa_rows)
    at_margin, at_zero = by_margin[args.margin], by_margin[0.0]
    worst_seq = max(at_margin["sequential, CS only"], at_margin["sequential, CS + final look"])
    print(
        f"  target sequential <= 5% at margin {args.margin:g}: {met(worst_seq <= 0.05)} (CS only "
        f"{at_margin['sequential, CS only']:.1%}, CS + final look {at_margin['sequential, CS + final look']:.1%})"
    )
    print(
        f"  at margin 0 (any difference): CS only {met(at_zero['sequential, CS only'] <= 0.05)} "
        f"({at_zero['sequential, CS only']:.1%}); CS + final look {at_zero['sequential, CS + final look']:.1%} "
        f"= the final fixed-N test's own ~5% plus the early stops"
    )
    naive_high = at_zero["naive t every wave"] > 2 * max(at_zero["sequential, CS + final look"], 0.01)
    print(
        f"  naive visibly higher: {met(naive_high)} at margin 0 ({at_zero['naive t every wave']:.1%}); at "
        f"margin {args.margin:g} the margin itself shields it ({at_margin['naive t every wave']:.1%})"
    )
    aa_cases = sequential(paths, args.margin, fixed_labels(d, args.margin)).cs_only.cases

    # ------------------------------------------------ planted effects
    print(
        f"\nPlanted effects (margin {args.margin:g}): same verdict as fixed N, and calls used "
        "(median share of fixed N)"
    )
    print(
        f"  {'effect':>6}  {'fixed N: BETTER/none':>20}  {'CS only: same':>13}  {'early stops (agree)':>19}  "
        f"{'calls med/mean':>14}  {'CS+final: same':>14}  {'naive: same':>11}"
    )
    planted = {}
    for effect in (0.3, 0.5, 1.0):
        d = model.diffs(rng, args.sims, args.cases, effect)
        fixed = fixed_labels(d, args.margin)
        check_fixed(d, args.margin, min_effect, fixed, args.check)
        paths = cs_paths(d, args.wave, alpha=args.alpha, horizon=horizon, c=args.truncation)
        seq = sequential(paths, args.margin, fixed)
        nv = naive(d, args.wave, args.margin)
        share = seq.cs_only.cases / args.cases
        same_cs = float(np.mean(seq.cs_only.label == fixed))
        same_final = float(np.mean(seq.final_look.label == fixed))
        same_naive = float(np.mean(nv.label == fixed))
        early = (seq.cs_only.label != NONE) & (seq.cs_only.cases < args.cases)
        early_agree = float(np.mean(seq.cs_only.label[early] == fixed[early])) if early.any() else 1.0
        planted[effect] = (same_cs, same_final, float(np.median(share)), seq.cs_only.cases)
        print(
            f"  {effect:>6g}  {np.mean(fixed == 'BETTER'):>9.1%} / {np.mean(fixed == NONE):>6.1%}  "
            f"{same_cs:>13.1%}  {np.mean(early):>9.1%} ({early_agree:>6.1%})  "
            f"{np.median(share):>6.0%} / {np.mean(share):>5.0%}  {same_final:>14.1%}  "
            f"{same_naive:>11.1%}"
        )
    print("  (CS + final look agrees by construction when the cases run out: the early stops are its test)")
    worst_final = min(v[1] for v in planted.values())
    worst_cs = min(v[0] for v in planted.values())
    print(
        f"  target same verdict >= 95% at every effect: CS + final look {met(worst_final >= 0.95)} "
        f"(worst {worst_final:.1%}); CS only {met(worst_cs >= 0.95)} (worst {worst_cs:.1%})"
    )
    print(f"  target <= 50% of calls at 1.0: {met(planted[1.0][2] <= 0.5)} (median {planted[1.0][2]:.0%})")

    # ------------------------------------------------ dollars
    print(
        f"\nDollars per verdict: claude-sonnet-4 ${prices.input:g}/${prices.output:g} per 1M, cache write "
        f"{prices.cache_write:g}x, read {prices.cache_read:g}x, batch {prices.batch:g}x; artifact "
        f"{shape.artifact_tokens} tokens in both variants, prompt {shape.prompt_tokens}, output "
        f"{shape.output_tokens}; one cache write per variant per wave"
    )
    print(f"  {'':<26}{'calls':>7}{'plain':>10}{'caching':>10}{'cache+batch':>13}{'caching/plain':>15}")
    rows = [("fixed N", cost(args.cases * model.runs, shape, prices, cache_writes_per_variant=1))]
    scenarios = [("A/A", aa_cases)] + [(f"effect {e:g}", v[3]) for e, v in planted.items()]
    for label, cases in scenarios:
        rows.append((f"sequential, {label}", expected_cost(cases, args.wave, model.runs, shape, prices)))
    for name, c in rows:
        print(
            f"  {name:<26}{c.calls:>7}{c.plain:>10.3f}{c.cached:>10.3f}{c.cached_batch:>13.3f}"
            f"{c.cached / c.plain:>15.0%}"
        )
    worst_ratio = max(c.cached / c.plain for _, c in rows)
    even = caching_break_even_output(shape, prices, 0.4)
    print(
        f"  target caching <= 40% of plain: {met(worst_ratio <= 0.4)} (worst {worst_ratio:.0%}; holds while "
        f"output <= {even:.0f} tokens per call at this artifact and prompt; a sequential run writes "
        f"the cache once per wave and variant)"
        if even is not None
        else f"  target caching <= 40% of plain: {met(worst_ratio <= 0.4)} (worst {worst_ratio:.0%})"
    )
    for out in (50, 200, 400):
        alt = cost(args.cases, CallShape(shape.artifact_tokens, shape.prompt_tokens, out), prices)
        print(f"    at {out} output tokens, fixed N: caching/plain {alt.cached / alt.plain:.0%}")
    if args.e2e:
        end_to_end(args.e2e, args.seed)
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


WORDS = ("alpha", "beta", "gamma", "delta")


def word_project(root: Path, cases: int, artifact_repeat: int = 1) -> None:
    """A samples file whose cases each assert the WORDS, and variants v1 and v2 (the artifact's
    sentence repeated to a cacheable length where the run measures caching)."""
    samples = [
        {
            "sample_id": f"c{i:03d}",
            "prompt": f"Case {i}",
            "assertions": [{"type": "contains", "value": w} for w in WORDS],
        }
        for i in range(cases)
    ]
    (root / "eval-samples.json").write_text(json.dumps(samples))
    (root / "skills").mkdir(exist_ok=True)
    for name in ("v1", "v2"):
        (root / "skills" / f"{name}.md").write_text(
            f"Variant {name}. " + "Name the words you know. " * artifact_repeat
        )


def end_to_end(cases: int, seed: int) -> None:
    """The same comparison through the whole command against the scripted server: fixed N, then
    --sequential, then --batch; calls, verdict and dollars from each report (Anthropic prices, a
    ~2,000-token artifact in both variants, cached after one warm-up call per variant)."""
    import random
    import tempfile

    from flows.cli.main import main as cli
    from tests.fakes.provider import FakeProvider

    def model(system: str, prompt: str) -> str:
        coin = random.Random(f"{seed}:{prompt}:{'v2' in system}")
        words = coin.randint(0, 2) + ("v2" in system)  # v2 names one more word: +1 point on 1-5
        return " ".join(WORDS[:words]) or "nothing"

    with tempfile.TemporaryDirectory() as tmp, FakeProvider(model) as server:
        root = Path(tmp)
        word_project(root, cases, artifact_repeat=320)
        os.environ |= {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_BASE_URL": server.url}
        os.chdir(root)
        base = ["run", "--executor", "anthropic", "--model", "claude-3-7-sonnet", "--quiet", "--no-cache"]
        base += ["--concurrency", "16", "--seed", str(seed)]
        print(
            f"\nEnd to end on the scripted server ({cases} cases, planted effect 1.0, {len(WORDS)} contains assertions):"
        )
        print(f"  {'':<22}{'calls':>7}{'verdict':>14}{'plain $':>10}{'paid $':>10}")
        for label, extra in (
            ("fixed N", []),
            ("--sequential", ["--sequential", "--wave", "10"]),
            ("fixed N, --batch", ["--batch", "--batch-poll", "0.05", "--cache-dir", "batch-cache"]),
        ):
            out = root / label.replace(" ", "").replace(",", "").replace("-", "")
            flags = [f for f in base if not (extra and "--batch" in extra and f == "--no-cache")]
            with contextlib.redirect_stdout(io.StringIO()):  # the table below says it
                code = cli([*flags, *extra, "--output-dir", str(out)])
            if code != 0:
                print(f"  {label}: the run failed")
                continue
            report = json.loads(next(out.glob("*.json")).read_text())
            meta, (comp,) = report["meta"], report["comparisons"]
            caching = meta.get("promptCaching") or {}
            plain = caching.get("uncachedUSD", meta["totalCostUSD"]) / (
                0.5 if meta.get("batchedCalls") else 1
            )
            print(
                f"  {label:<22}{meta['calls']:>7}{comp['verdict']['label']:>14}{plain:>10.4f}{meta['totalCostUSD']:>10.4f}"
            )


if __name__ == "__main__":
    sys.exit(main())
