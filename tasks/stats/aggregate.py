"""Aggregation: per-variant summaries, per-case statistics, paired comparisons, verdicts, insights.

``aggregate`` is pure (records in, the ``Aggregate`` model of tasks/stats/figures.py out) so every figure is testable without Prefect;
``tasks.aggregate.aggregate_results`` is the thin task around it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from graders.schema import JudgeStatus, Sample
from tasks.schema import Record, Scale, VerdictLabel
from tasks.stats import statistics as st
from tasks.stats.agreement import agreement
from tasks.stats.figures import (
    Aggregate,
    Analysis,
    CaseStats,
    Comparison,
    Insight,
    JudgeSummary,
    Paired,
    PairwiseSummary,
    RepeatStats,
    VariantSummary,
    Verdict,
)

#: Verdicts that leave the question open: the report suggests how many cases would settle it.
UNDECIDED = {VerdictLabel.UNDERPOWERED, VerdictLabel.INCONCLUSIVE, VerdictLabel.INSUFFICIENT_DATA}


FRAME_COLUMNS = (
    "sample_id",
    "cluster",
    "variant",
    "run",
    "ok",
    "error_kind",
    "ungraded",
    "unscored",
    "score",
    "assertion_score",
    "llm_score",
    "duration_ms",
    "total_tokens",
    "cost_usd",
    "gate",
)


def frame(records: list[Record], scale: Scale) -> pd.DataFrame:
    """One row per execution. ``score`` is what comparisons use: an errored run scores the scale
    minimum (failures are data), a run with a grading error is NaN (excluded, counted)."""
    rows = []
    for r in records:
        g = r.grade
        ungraded = r.result.ok and g is not None and g.composite is None
        unscored = r.result.ok and g is not None and not g.scored
        if not r.result.ok:
            score: float = scale.minimum if scale.errors_score_minimum else math.nan
        elif g is None or g.composite is None or unscored:
            score = math.nan
        else:
            score = g.composite
        rows.append(
            {
                "sample_id": r.sample_id,
                "cluster": r.cluster,
                "variant": r.variant,
                "run": r.run,
                "ok": r.result.ok,
                "error_kind": r.result.error_kind,
                "ungraded": ungraded,
                "unscored": unscored,
                "score": score,
                "assertion_score": g.assertion_score if g else None,
                "llm_score": g.judge.score if g and g.judge.status == JudgeStatus.GRADED else None,
                "duration_ms": r.result.latency_ms,
                "total_tokens": r.result.usage.total_tokens,  # cached prompt tokens included
                "cost_usd": r.result.cost_usd,
                "gate": r.gate,
            }
        )
    # The columns and their kinds also when nothing ran (a budget, a pending batch).
    df = pd.DataFrame(rows, columns=FRAME_COLUMNS).astype(
        {"ok": bool, "ungraded": bool, "unscored": bool, "gate": bool, "score": float}
    )
    df["passed"] = (df["score"] >= scale.pass_threshold) & df["gate"]
    return df


def _mean(series: pd.Series) -> float | None:
    s = pd.to_numeric(series, errors="coerce").dropna()
    return float(s.mean()) if len(s) else None


def _round(value: Any, digits: int = 6) -> Any:
    """Significant digits, not decimals: a p-value of 1e-9 must not become 0. NaN becomes None."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: _round(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v, digits) for v in value]
    return value


def rounded(figures: Aggregate, digits: int = 6) -> Aggregate:
    """``figures`` with every float to ``digits`` significant digits; a field never set stays unset
    (the report leaves it out). The per-case figures are rounded as ``case_stats`` makes them: at
    10,000 cases their dump, its rounded copy and their models again were the run's peak of memory."""
    data = _round(figures.model_dump(exclude_unset=True, exclude={"case_stats"}), digits)
    return Aggregate.model_validate(data | {"case_stats": figures.case_stats})


def variant_summary(df: pd.DataFrame, variant: str, scale: Scale) -> VariantSummary:
    v = df[df["variant"] == variant]
    ok = v[v["ok"]]
    case_means = v.groupby("sample_id")["score"].mean().dropna()
    ci = st.t_interval(case_means.tolist(), bounds=(scale.minimum, scale.maximum))
    runs = int(v["run"].nunique())
    per_case = v.groupby("sample_id").agg(n=("score", "count"), c=("passed", "sum"))
    counts = [(int(n), int(c)) for n, c in zip(per_case["n"], per_case["c"], strict=True) if n > 0]
    pass_at_k, pass_hat_k = st.pass_curves(counts)
    out = VariantSummary(
        # The seed's fields.
        total_samples=int(v["sample_id"].nunique()),
        success_count=int(v["ok"].sum()),
        error_count=int((~v["ok"]).sum()),
        avg_composite_score=_mean(v["score"]),
        avg_assertion_score=_mean(ok["assertion_score"]),
        avg_llm_score=_mean(ok["llm_score"]),
        avg_duration_ms=_mean(ok["duration_ms"]),
        avg_total_tokens=_mean(ok["total_tokens"]),
        total_cost_usd=float(v["cost_usd"].sum()),
        # Beyond the seed.
        runs=runs,
        executions=len(v),
        ungraded_count=int(v["ungraded"].sum()),
        unscored_count=int(v["unscored"].sum()),
        error_rate=float((~v["ok"]).mean()) if len(v) else 0.0,
        ungraded_rate=float(v["ungraded"].mean()) if len(v) else 0.0,
        errors_by_kind={str(k): int(n) for k, n in v.loc[~v["ok"], "error_kind"].value_counts().items()},
        composite_std=ci.sd,
        composite_ci95=[ci.low, ci.high],
        pass_rate=float(v.loc[v["score"].notna(), "passed"].mean()) if v["score"].notna().any() else None,
        pass_at_k=pass_at_k,
        pass_hat_k=pass_hat_k,
    )
    if runs > 1:  # set only here: a single run's summary has no repeat field at all
        run_means = v.groupby("run")["score"].mean().dropna()
        rci = st.t_interval(run_means.tolist(), bounds=(scale.minimum, scale.maximum))
        out.repeat = RepeatStats(
            run_means=[float(x) for x in run_means], mean=rci.mean, std=rci.sd, ci95=[rci.low, rci.high]
        )
    return out


def case_stats(df: pd.DataFrame, scale: Scale) -> dict[str, dict[str, CaseStats]]:
    """Per case and variant, over runs: avg, best, worst, std_dev, pass@k and pass^k (k = runs)."""
    # Whole-column group reductions: a Python loop over 1,000 groups took a third of a second.
    keys = [df["sample_id"], df["variant"]]
    score = df["score"].groupby(keys, sort=False)
    hits = ((df["score"] >= scale.pass_threshold) & df["gate"]).groupby(keys, sort=False).sum()
    table = pd.DataFrame(
        {
            "avg": score.mean(),
            "best": score.max(),
            "worst": score.min(),
            "std": score.std(ddof=1),
            "n": score.count(),
            "passes": hits,
        }
    )
    out: dict[str, dict[str, CaseStats]] = {}
    for (sample_id, variant), avg, best, worst, std, n, passes in table.itertuples(name=None):
        n, passes = int(n), int(passes)
        out.setdefault(str(sample_id), {})[str(variant)] = CaseStats(  # rounded as ``rounded`` would
            avg=_round(float(avg)) if n else None,
            best=_round(float(best)) if n else None,
            worst=_round(float(worst)) if n else None,
            std_dev=_round(float(std)) if n > 1 else (0.0 if n == 1 else None),
            runs=n,
            passes=passes,
            pass_at_k=passes > 0 if n else None,
            pass_hat_k=passes == n if n else None,
        )
    return out


def case_differences(
    df: pd.DataFrame, control: str, treatment: str, seed: int
) -> tuple[Paired, dict[str, float], int]:
    """The paired statistics over cases present (with a score) in both variants, the per-case
    differences (treatment minus control), and how many cases were dropped for missing in either."""
    per_case = df.groupby(["sample_id", "variant"])["score"].mean().unstack("variant")
    # an arm whose every run was excluded has no column: compare it as empty (insufficient data)
    per_case = per_case.reindex(columns=list(dict.fromkeys([*per_case.columns, control, treatment])))
    both = per_case[[control, treatment]].dropna()
    clusters_map = df.drop_duplicates("sample_id").set_index("sample_id")["cluster"]
    clusters = [clusters_map.get(s) for s in both.index]
    use_clusters = all(c is not None for c in clusters) and len(set(clusters)) > 1
    diffs = (both[treatment] - both[control]).tolist()
    paired = st.paired(diffs, seed=seed, clusters=[str(c) for c in clusters] if use_clusters else None)
    differences = {str(s): float(d) for s, d in zip(both.index, diffs, strict=True)}
    return paired, differences, int(len(per_case) - len(both))


def compare(
    df: pd.DataFrame,
    control: str,
    treatment: str,
    differences: tuple[Paired, dict[str, float], int],
    verdict: Verdict,
) -> Comparison:
    """One treatment against the control: the paired analysis (``case_differences``), and McNemar on
    single runs or Welch over run means with repeats."""
    paired, per_case, dropped = differences
    out = Comparison(
        control=control,
        treatment=treatment,
        cases=len(per_case),
        cases_dropped=dropped,
        paired=paired,
        per_case=per_case,
        verdict=verdict,
    )
    if int(df["run"].nunique()) <= 1:  # 0: nothing ran (a budget, a pending batch): McNemar on no pairs
        passed = df.groupby(["sample_id", "variant"])["passed"].first().unstack("variant")
        scored = passed.reindex(index=list(per_case), columns=[control, treatment])
        out.mcnemar = st.mcnemar_exact(
            scored[control].astype(bool).tolist(), scored[treatment].astype(bool).tolist()
        )
    else:
        run_means = df.groupby(["variant", "run"])["score"].mean()
        out.welch_runs = st.welch(
            run_means.loc[control].dropna().tolist(), run_means.loc[treatment].dropna().tolist()
        )
    return out


def assertion_insights(
    samples: list[Sample], variants: list[str], details: dict[tuple[str, str, int], list[bool | None]]
) -> tuple[list[Insight], list[str], list[str]]:
    """Assertions that pass everywhere, fail everywhere, or never tell variants apart."""
    by_assertion: dict[tuple[str, int], dict[str, list[bool]]] = {}
    for (sample_id, variant, _run), passes in details.items():
        for i, passed in enumerate(passes):
            if passed is not None:
                by_assertion.setdefault((sample_id, i), {}).setdefault(variant, []).append(passed)
    low_disc, all_pass, all_fail = [], [], []
    types = {s.sample_id: [a.type for a in s.assertions] for s in samples}
    for (sample_id, i), per_variant in sorted(by_assertion.items()):
        if set(per_variant) != set(variants):
            continue
        flat = [p for ps in per_variant.values() for p in ps]
        kinds = types.get(sample_id, [])
        name = f"{sample_id}#{i + 1} ({kinds[i] if i < len(kinds) else '?'})"
        if all(flat):
            all_pass.append(name)
        elif not any(flat):
            all_fail.append(name)
        elif len({tuple(ps) for ps in per_variant.values()}) == 1:
            low_disc.append(name)
    kinds_found = (
        (
            "all_pass_assertions",
            "info",
            all_pass,
            "pass in every variant and run: too loose to tell variants apart",
        ),
        ("all_fail_assertions", "warning", all_fail, "fail in every variant and run: too strict, or broken"),
        ("low_discrimination", "info", low_disc, "give the same results in every variant"),
    )
    found = [
        Insight(type=kind, severity=severity, items=items, message=f"{len(items)} assertion(s) {said}")
        for kind, severity, items, said in kinds_found
        if items
    ]
    return found, all_pass, all_fail


def case_insights(df: pd.DataFrame, variants: list[str], scale: Scale) -> list[Insight]:
    """Cases where the variants barely differ, and cases that cost far more than the others."""
    found = []
    per_case = df.groupby(["sample_id", "variant"])["score"].mean().unstack("variant")
    present = [v for v in variants if v in per_case.columns]  # an arm may have no session at all
    if len(present) > 1 and not per_case.empty:
        width = 0.5 * (scale.maximum - scale.minimum) / 4
        spread = per_case[present].max(axis=1) - per_case[present].min(axis=1)
        uniform = [str(s) for s, d in spread.items() if pd.notna(d) and d < width]
        if uniform:
            found.append(
                Insight(
                    type="uniform_scores",
                    severity="info",
                    items=uniform,
                    message=f"{len(uniform)}/{len(per_case)} samples show score difference < {width:g} between variants",
                )
            )
    case_cost = df.groupby("sample_id")["cost_usd"].mean()
    median = float(case_cost.median()) if len(case_cost) else 0.0  # once: not once per case
    if len(case_cost) >= 3 and median > 0:
        high = [str(s) for s, c in case_cost.items() if c > 3 * median]
        if high:
            found.append(
                Insight(
                    type="high_cost",
                    severity="info",
                    items=high,
                    message=f"{len(high)} sample(s) cost over 3x the median sample (${median:.5f})",
                )
            )
    return found


def failure_insights(df: pd.DataFrame, variants: list[str], max_error_rate: float) -> list[Insight]:
    """Per variant: the runs that errored, that had a grading error, and that no criterion scored."""
    found = []
    for variant in variants:
        v = df[df["variant"] == variant]
        if not len(v):
            continue
        unscored = sorted(set(v.loc[v["unscored"].astype(bool), "sample_id"].astype(str)))
        if unscored:
            found.append(
                Insight(
                    type="unscored_cases",
                    severity="warning",
                    items=unscored,
                    message=f"{variant}: {len(unscored)} case(s) have no criterion in this run (no assertion, and no "
                    "judge or --no-judge): the original tool's composite 0 is kept in the results but "
                    "excluded from every statistic and verdict",
                    variant=variant,
                )
            )
        for kind, mask, label in (
            ("error_rate", ~v["ok"], "errored"),
            ("ungraded_rate", v["ungraded"].astype(bool), "could not be graded (a grading error)"),
        ):
            count = int(mask.sum())
            if count:
                rate = count / len(v)
                items = sorted(set(v.loc[mask, "sample_id"].astype(str)))
                severity = "warning" if rate > max_error_rate else "info"
                message = f"{variant}: {count}/{len(v)} runs {label} ({rate:.0%})"
                found.append(
                    Insight(type=kind, severity=severity, items=items, message=message, variant=variant)
                )
    return found


def analysis(
    df: pd.DataFrame,
    samples: list[Sample],
    variants: list[str],
    scale: Scale,
    details: dict[tuple[str, str, int], list[bool | None]],
    comparisons: list[Comparison],
    max_error_rate: float,
) -> Analysis:
    """The auto-analysis of STATISTICS.md, each insight naming the samples or assertions concerned."""
    found, all_pass, all_fail = assertion_insights(samples, variants, details)
    found += case_insights(df, variants, scale) + failure_insights(df, variants, max_error_rate)
    suggestions: list[str] = []
    for comp in comparisons:
        verdict = comp.verdict
        if verdict.label in UNDECIDED and verdict.cases_needed:
            suggestions.append(
                f"{comp.treatment} vs {comp.control}: about {verdict.cases_needed} cases are needed for "
                f"a BETTER verdict at a difference of {verdict.min_effect:g} with the margin "
                f"{verdict.margin:g} (you have {comp.cases}); add cases (more cases help more than "
                "more repeats)."
            )
    if all_fail:
        suggestions.append("Review the assertions that fail everywhere: " + ", ".join(all_fail[:5]))
    if all_pass:
        suggestions.append(
            "Tighten or replace the assertions that pass everywhere: " + ", ".join(all_pass[:5])
        )
    return Analysis(insights=found, suggestions=suggestions)


def aggregate(
    records: list[Record],
    samples: list[Sample],
    variants: list[str],
    control: str,
    scale: Scale,
    *,
    seed: int,
    margin: float | None = None,
    min_effect: float | None = None,
    max_error_rate: float = 0.1,
) -> Aggregate:
    df = frame(records, scale)
    margin = scale.margin if margin is None else margin
    min_effect = scale.min_effect if min_effect is None else min_effect
    summary = {v: variant_summary(df, v, scale) for v in variants}
    differences = {t: case_differences(df, control, t, seed) for t in variants if t != control}
    adjusted = st.holm([paired.p_ttest for paired, _, _ in differences.values()])
    comparisons = []
    for (treatment, found), p_adj in zip(differences.items(), adjusted, strict=True):
        paired = found[0]
        paired.p_holm = p_adj if len(differences) > 1 else paired.p_ttest
        rates = [summary[v].error_rate + summary[v].ungraded_rate for v in (control, treatment)]
        verdict = st.verdict(
            st.VerdictInputs(
                comparison=paired,
                margin=margin,
                min_effect=min_effect,
                p_value=paired.p_holm,
                points_per_unit=scale.points_per_unit,
                error_rates=(rates[0], rates[1]),
                max_error_rate=max_error_rate,
            )
        )
        comparisons.append(compare(df, control, treatment, found, verdict))
    details: dict[tuple[str, str, int], list[bool | None]] = {}
    for r in records:
        if r.result.ok and r.grade is not None:
            # an assertion that could not decide is no pass and no failure: left out of the insights
            details[(r.sample_id, r.variant, r.run)] = [
                None if a.error else a.passed for a in r.grade.assertions
            ]
    judge = judge_summary(records, variants)
    out = rounded(
        Aggregate(
            scale=scale,
            summary=summary,
            case_stats=case_stats(df, scale),
            comparisons=comparisons,
            multiple_comparisons="holm" if len(comparisons) > 1 else None,
            judge=judge,
            analysis=analysis(df, samples, variants, scale, details, comparisons, max_error_rate),
        )
    )
    if out.judge is not None and judge is not None and judge.agreement is not None:
        out.judge.agreement = judge.agreement  # the judges' agreement as computed, unrounded
    return out


def pairwise_summary(
    control: str, treatment: str, case_score: dict[str, int], unresolved: int
) -> PairwiseSummary:
    """Win / tie / loss over cases (the case is the unit) with an exact sign test on wins vs losses."""
    return PairwiseSummary(
        control=control,
        treatment=treatment,
        wins=sum(1 for v in case_score.values() if v > 0),
        ties=sum(1 for v in case_score.values() if v == 0),
        losses=sum(1 for v in case_score.values() if v < 0),
        unresolved=unresolved,
        p_sign=st.sign_test([float(v) for v in case_score.values()]),
        per_case=dict(sorted(case_score.items())),
    )


def judge_summary(records: list[Record], variants: list[str]) -> JudgeSummary | None:
    """Each judge's mean per variant and, for an ensemble, the judges' agreement."""
    graded = [(r, r.grade.judge.judges) for r in records if r.grade is not None and r.grade.judge.judges]
    if not graded:
        return None
    judges = sorted({j for _, scores in graded for j in scores})
    per_judge: dict[str, dict[str, float | None]] = {}
    for judge in judges:
        per_judge[judge] = {}
        for variant in variants:
            vals = [scores.get(judge) for r, scores in graded if r.variant == variant]
            present = [v for v in vals if v is not None]
            per_judge[judge][variant] = float(np.mean(present)) if present else None
    out = JudgeSummary(judges=judges, mean_by_variant=per_judge)
    if len(judges) > 1:  # set only for an ensemble
        out.agreement = agreement({j: [scores.get(j) for _, scores in graded] for j in judges})
    return out
