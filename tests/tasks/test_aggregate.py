"""Aggregation over records: failures are data, UNGRADED is excluded and counted, relabelling flips signs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from executors.schema import RunResult
from graders.registry import parse
from graders.schema import AssertionResult, Grade, JudgeResult, Sample
from tasks.schema import SAMPLE_SCALE, Record
from tasks.stats.aggregate import aggregate


def rec(
    sample: str,
    variant: str,
    score: float | None,
    run: int = 1,
    ok: bool = True,
    cluster: str | None = None,
    passed: tuple[bool, ...] = (True,),
) -> Record:
    if not ok:
        return Record(
            sample_id=sample,
            variant=variant,
            run=run,
            cluster=cluster,
            result=RunResult(ok=False, error="HTTP 500", error_kind="transient"),
        )
    judge = JudgeResult(status="ungraded") if score is None else JudgeResult()
    results = tuple(
        AssertionResult(assertion=parse(dict(type="contains", value="x"), "."), passed=p) for p in passed
    )
    grade = Grade(assertions=results, assertion_score=score, judge=judge, composite=score)
    return Record(
        sample_id=sample,
        variant=variant,
        run=run,
        cluster=cluster,
        result=RunResult(ok=True, output="o", cost_usd=0.001),
        grade=grade,
    )


SAMPLES = [
    Sample(sample_id=f"s{i}", prompt="p", assertions=(parse(dict(type="contains", value="x"), "."),))
    for i in range(6)
]


def test_a_variant_with_every_run_errored() -> None:
    records = [rec(f"s{i}", "a", 4.0) for i in range(6)] + [
        rec(f"s{i}", "b", None, ok=False) for i in range(6)
    ]
    out = aggregate(records, SAMPLES, ["a", "b"], "a", SAMPLE_SCALE, seed=0)
    b = out.summary["b"]
    assert b.error_count == 6 and b.error_rate == 1.0 and b.avg_composite_score == 1.0  # the scale minimum
    assert b.avg_assertion_score is None and b.errors_by_kind == {"transient": 6}
    verdict = out.comparisons[0].verdict
    assert verdict.label == "WORSE"  # failures count: 6 cases all 3 points down
    assert any(i.type == "error_rate" and i.severity == "warning" for i in out.analysis.insights)


def test_errors_over_the_limit_block_a_claim_of_improvement() -> None:
    records = [rec(f"s{i}", "a", 2.0) for i in range(6)]
    records += [rec(f"s{i}", "b", 5.0) for i in range(5)] + [rec("s5", "b", None, ok=False)]
    out = aggregate(records, SAMPLES, ["a", "b"], "a", SAMPLE_SCALE, seed=0)
    assert out.comparisons[0].verdict.label == "INCONCLUSIVE"


def test_ungraded_runs_are_excluded_and_counted() -> None:
    records = [rec(f"s{i}", "a", 3.0) for i in range(6)] + [rec(f"s{i}", "b", 4.0) for i in range(5)]
    records.append(rec("s5", "b", None))
    out = aggregate(records, SAMPLES, ["a", "b"], "a", SAMPLE_SCALE, seed=0, max_error_rate=0.5)
    b = out.summary["b"]
    assert b.ungraded_count == 1 and b.avg_composite_score == 4.0
    comp = out.comparisons[0]
    assert comp.cases == 5 and comp.cases_dropped == 1


def test_repeats_case_stats_pass_curves_and_welch() -> None:
    records = []
    for i in range(4):
        for run, (a, b) in enumerate([(2.0, 4.0), (3.0, 5.0), (2.0, 3.0)], start=1):
            records.append(rec(f"s{i}", "a", a, run=run))
            records.append(rec(f"s{i}", "b", b, run=run))
    out = aggregate(records, SAMPLES[:4], ["a", "b"], "a", SAMPLE_SCALE, seed=0)
    stats = out.case_stats["s0"]["b"].model_dump()
    assert stats == {
        "avg": 4.0,
        "best": 5.0,
        "worst": 3.0,
        "std_dev": 1.0,
        "runs": 3,
        "passes": 2,
        "pass@k": True,
        "pass^k": False,
    }
    # 4 cases, each 3 runs with 2 passes: pass@1 = 2/3, pass@2 = 1 - C(1,2)/C(3,2) = 1
    assert out.summary["b"].pass_at_k == {1: pytest.approx(2 / 3), 2: 1.0, 3: 1.0}
    assert out.summary["b"].pass_hat_k[3] == 0.0
    repeat = out.summary["a"].repeat
    assert repeat is not None and repeat.run_means == [2.0, 3.0, 2.0]
    assert out.comparisons[0].welch_runs is not None and out.comparisons[0].mcnemar is None


def test_single_run_gets_mcnemar_and_three_variants_get_holm() -> None:
    records = []
    for i in range(6):
        records += [
            rec(f"s{i}", "a", 2.0),
            rec(f"s{i}", "b", 4.0 + (i % 2) * 0.5),
            rec(f"s{i}", "c", 2.0 + i * 0.1),
        ]
    out = aggregate(records, SAMPLES, ["a", "b", "c"], "a", SAMPLE_SCALE, seed=0)
    assert out.multiple_comparisons == "holm"
    b, c = out.comparisons
    assert b.mcnemar is not None and b.mcnemar.b_only == 6 and b.mcnemar.p == pytest.approx(2 / 64)
    raw = [b.paired.p_ttest or 1.0, c.paired.p_ttest or 1.0]
    adjusted = [b.paired.p_holm or 1.0, c.paired.p_holm or 1.0]
    assert min(adjusted) == pytest.approx(2 * min(raw), rel=1e-5)


def test_clusters_switch_to_cluster_robust_errors() -> None:
    records = []
    for i in range(6):
        cluster = f"g{i % 3}"
        records += [
            rec(f"s{i}", "a", 2.0, cluster=cluster),
            rec(f"s{i}", "b", 2.5 + i * 0.2, cluster=cluster),
        ]
    out = aggregate(records, SAMPLES, ["a", "b"], "a", SAMPLE_SCALE, seed=0)
    paired = out.comparisons[0].paired
    assert paired.se_method.startswith("cluster") and paired.df == 2


def test_insights_name_their_items() -> None:
    records = []
    for i in range(6):
        records += [
            rec(f"s{i}", "a", 3.0, passed=(True, False)),
            rec(f"s{i}", "b", 3.2, passed=(True, False)),
        ]
    out = aggregate(records, SAMPLES, ["a", "b"], "a", SAMPLE_SCALE, seed=0)
    kinds = {i.type: i for i in out.analysis.insights}
    assert "s0#1 (contains)" in kinds["all_pass_assertions"].items
    assert len(kinds["uniform_scores"].items) == 6


@settings(max_examples=25, deadline=None)
@given(
    hs.lists(
        hs.tuples(hs.sampled_from([1.0, 2.0, 3.0, 4.0, 5.0]), hs.sampled_from([1.0, 2.0, 3.0, 4.0, 5.0])),
        min_size=2,
        max_size=8,
    )
)
def test_relabelling_variants_flips_every_difference(pairs: list[tuple[float, float]]) -> None:
    samples = [Sample(sample_id=f"s{i}", prompt="p") for i in range(len(pairs))]
    records = [r for i, (x, y) in enumerate(pairs) for r in (rec(f"s{i}", "a", x), rec(f"s{i}", "b", y))]
    fwd = aggregate(records, samples, ["a", "b"], "a", SAMPLE_SCALE, seed=3).comparisons[0]
    back = aggregate(records, samples, ["b", "a"], "b", SAMPLE_SCALE, seed=3).comparisons[0]
    for case, d in fwd.per_case.items():
        assert back.per_case[case] == pytest.approx(-d)
    for key in ("p_ttest", "p_wilcoxon", "p_sign"):
        if getattr(fwd.paired, key) is None:
            assert getattr(back.paired, key) is None
        else:
            assert getattr(back.paired, key) == pytest.approx(getattr(fwd.paired, key), abs=1e-6)
    assert back.mcnemar is not None and fwd.mcnemar is not None
    assert back.mcnemar.p == pytest.approx(fwd.mcnemar.p)
