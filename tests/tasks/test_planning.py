"""Power planning from a pilot: hand-worked variance components, the formula, degenerate pilots, cost."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tasks.stats import statistics as st
from tasks.stats.planning import (
    CallShape,
    Prices,
    caching_break_even_output,
    cost,
    frame_from_report,
    pilot_from_frame,
    pilot_from_runs,
    plan,
)

# Three cases, two runs per variant (worked by hand below).
CONTROL = [[3, 4], [2, 2], [4, 5]]
TREATMENT = [[4, 5], [3, 3], [4, 4]]


def formula_cases(sd: float, effect: float) -> int:
    """Smallest n with (t_{0.975, n-1} + t_{0.8, n-1}) * sd / sqrt(n) <= effect, counted one by one."""
    n = 2
    while (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * sd / math.sqrt(n) > effect:
        n += 1
    return n


def no_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(no_nan(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(no_nan(v) for v in value)
    return True


def test_variance_components_by_hand() -> None:
    p = pilot_from_runs(CONTROL, TREATMENT)
    # means A 3.5, 2, 4.5; B 4.5, 3, 4 -> D = 1, 1, -0.5: mean 0.5, var (0.25 + 0.25 + 1) / 2 = 0.75
    assert p.cases == 3 and p.runs == 2
    assert p.mean_diff == pytest.approx(0.5) and p.var_diff == pytest.approx(0.75)
    # within: run pairs differ by 1 in three cells (var 0.5, 1 df each), 0 in three: 1.5 / 6 df
    assert p.within == pytest.approx(0.25)
    # between: 0.75 - 0.25 * (1/2 + 1/2)
    assert p.between == pytest.approx(0.5)


def test_cases_needed_follow_the_formula_at_every_run_count() -> None:
    result = plan(pilot_from_runs(CONTROL, TREATMENT), effect=0.5, margin=0.1)
    by_runs = {o.runs: o for o in result.options}
    assert sorted(by_runs) == [1, 2, 3, 5]
    for r, o in by_runs.items():
        sd = math.sqrt(0.5 + 2 * 0.25 / r)
        assert o.sd == pytest.approx(sd)
        # a BETTER verdict needs the interval above the margin: power against effect - margin
        assert o.cases == max(formula_cases(sd, 0.4), 6) == st.cases_for_better(sd, 0.5, 0.1)
        assert o.cases_significant == formula_cases(sd, 0.5) == st.cases_needed(sd, 0.5)
        assert o.calls == 2 * r * o.cases
    assert by_runs[1].cases == formula_cases(1.0, 0.4)
    # between-case variance dominates: one run per case is the fewest calls
    assert result.best is by_runs[1] and result.lever == "more cases"
    assert result.alpha == 0.05 and result.power == 0.8


def test_repeats_win_only_when_cases_run_out() -> None:
    noisy = pilot_from_runs([[1, 5, 3], [2, 4, 3], [5, 1, 3]], [[4, 2, 3], [1, 5, 3], [3, 3, 3]])
    assert noisy.within is not None and noisy.between == 0.0
    free = plan(noisy, effect=1.0)
    needed = free.options[0].cases
    assert needed is not None
    capped = plan(noisy, effect=1.0, available_cases=needed - 1)
    assert not capped.options[0].feasible
    assert capped.lever == "more runs" and capped.best is not None and capped.best.runs > 1
    assert capped.best.cases is not None and capped.best.cases <= needed - 1
    hopeless = plan(noisy, effect=1.0, available_cases=3)
    assert hopeless.best is None and hopeless.lever == "unknown" and "within 3 cases" in hopeless.reason


def test_frame_and_lists_agree() -> None:
    rows = []
    for i, (a, b) in enumerate(zip(CONTROL, TREATMENT, strict=True)):
        for r, (sa, sb) in enumerate(zip(a, b, strict=True), start=1):
            rows += [
                {"sample_id": f"c{i}", "variant": "v1", "run": r, "score": sa},
                {"sample_id": f"c{i}", "variant": "v2", "run": r, "score": sb},
            ]
    rows.append({"sample_id": "lonely", "variant": "v1", "run": 1, "score": 3.0})
    p = pilot_from_frame(pd.DataFrame(rows), "v1", "v2")
    ref = pilot_from_runs(CONTROL, TREATMENT)
    assert (p.var_diff, p.within, p.between) == pytest.approx((ref.var_diff, ref.within, ref.between))
    assert any("1 case(s) without a scored run" in n for n in p.notes)
    with pytest.raises(ValueError, match="variant 'v3' has no runs"):
        pilot_from_frame(pd.DataFrame(rows), "v1", "v3")
    with pytest.raises(ValueError, match="column"):
        pilot_from_frame(pd.DataFrame(rows).drop(columns="score"), "v1", "v2")


def test_zero_variance() -> None:
    p = pilot_from_runs([[3, 3], [2, 2], [4, 4]], [[4, 4], [3, 3], [5, 5]])
    assert p.var_diff == 0 and p.within == 0 and p.between == 0
    result = plan(p, effect=0.3)
    assert all(o.cases == 6 and o.sd == 0 for o in result.options)  # the exact sign test's minimum
    assert result.lever == "more cases" and "sign test" in result.reason
    assert no_nan(result.as_dict())


def test_one_case() -> None:
    p = pilot_from_runs([[3, 4]], [[4, 5]])
    assert p.cases == 1 and p.var_diff is None and p.between is None and p.within == 0.5
    result = plan(p, effect=0.3)
    assert all(o.cases is None and o.calls is None for o in result.options)
    assert result.best is None and result.lever == "unknown" and "at least 2 cases" in result.reason
    assert no_nan(result.as_dict())


def test_one_run_per_case() -> None:
    p = pilot_from_runs([[3], [2], [4], [3]], [[4], [2], [5], [5]])
    assert (
        p.within is None and p.between is None and p.var_diff == pytest.approx(np.var([1, 0, 1, 2], ddof=1))
    )
    result = plan(p, effect=0.5)
    one = result.options[0]
    assert p.var_diff is not None
    assert one.runs == 1 and one.cases == formula_cases(math.sqrt(p.var_diff), 0.5)
    assert all(o.cases is None for o in result.options[1:])
    assert result.lever == "unknown" and "2 runs" in result.reason
    assert no_nan(result.as_dict())


def test_nothing_paired() -> None:
    p = pilot_from_runs([[3], []], [[], [4]])
    assert p.cases == 0 and p.mean_diff is None
    assert plan(p, effect=0.3).lever == "unknown"


def test_bad_input_names_the_case() -> None:
    p = pilot_from_runs([[3, math.nan], [2, 3]], [[4, 4], [3, 2]])
    assert any("1 ungraded run(s)" in n for n in p.notes) and p.cases == 2
    with pytest.raises(ValueError, match="case b, treatment, run 2: score inf is not a finite number"):
        pilot_from_runs([[3], [2]], [[4], [3, math.inf]], ["a", "b"])
    with pytest.raises(ValueError, match="case 1, control, run 1: score 'x' is not a number"):
        pilot_from_runs([["x"]], [[1]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="same cases"):
        pilot_from_runs([[1]], [[1], [2]])
    with pytest.raises(ValueError, match="min_effect"):
        plan(pilot_from_runs(CONTROL, TREATMENT), effect=0)
    with pytest.raises(ValueError, match="margin"):
        plan(pilot_from_runs(CONTROL, TREATMENT), effect=0.3, margin=-1)


def test_cost_by_hand() -> None:
    prices = Prices.for_model("claude-sonnet-4-20250514")
    assert (prices.input, prices.output, prices.cache_read, prices.cache_write, prices.batch) == (
        3.0,
        15.0,
        0.1,
        1.25,
        0.5,
    )
    shape = CallShape(artifact_tokens=2000, prompt_tokens=200, output_tokens=100)
    c = cost(200, shape, prices)
    assert c.calls == 400
    assert c.plain == pytest.approx(400 * (2200 * 3 + 100 * 15) / 1e6)  # 3.24
    # per variant: one write at 1.25x and 199 reads at 0.1x of the artifact's input price
    artifact = 2 * 2000 * 3 * (1.25 + 199 * 0.1) / 1e6
    assert c.cached == pytest.approx(400 * (200 * 3 + 100 * 15) / 1e6 + artifact)
    assert c.batch == pytest.approx(c.plain / 2) and c.cached_batch == pytest.approx(c.cached / 2)
    ten_waves = cost(200, shape, prices, cache_writes_per_variant=10)
    assert ten_waves.cached - c.cached == pytest.approx(2 * 9 * 2000 * 3 * (1.25 - 0.1) / 1e6)
    short = cost(200, CallShape(500, 200, 100), prices)  # under the 1,024-token minimum: no caching
    assert short.cached == short.plain
    baseline = cost(200, CallShape(2000, 200, 100, artifact_variants=1), prices)
    assert baseline.plain == pytest.approx(400 * (200 * 3 + 100 * 15) / 1e6 + 200 * 2000 * 3 / 1e6)
    # caching <= 40% of plain while output <= (0.4 * 2200 - 200 - 200) * 3 / (15 * 0.6) = 160 tokens
    assert caching_break_even_output(shape, prices, 0.4) == pytest.approx(160)
    with pytest.raises(ValueError, match="no price known"):
        Prices.for_model("mystery-model")


def test_plan_prices_each_option() -> None:
    prices = Prices(input=3, output=15)
    shape = CallShape(2000, 200, 100)
    result = plan(pilot_from_runs(CONTROL, TREATMENT), effect=0.5, shape=shape, prices=prices)
    for o in result.options:
        assert o.cost is not None and o.cases is not None
        assert o.cost == cost(o.runs * o.cases, shape, prices)


def test_a_report_is_read_as_the_aggregation_scores_it() -> None:
    def run(n: int, score: float | None, ok: bool = True) -> dict[str, Any]:
        return {"run": n, "ok": ok, "compositeScore": score, "inputTokens": 2200, "outputTokens": 90}

    report = {
        "results": [
            {"sample_id": "a", "variants": {"v1": run(1, 3.0), "v2": run(1, 4.0)}},
            {
                "sample_id": "b",
                "variants": {
                    "v1": {**run(1, 2.0), "runs": [run(1, 2.0), run(2, None, ok=False)]},
                    "v2": {**run(1, 3.0), "runs": [run(1, 3.0), run(2, None)]},
                },
            },
        ]
    }
    df = frame_from_report(report)
    assert len(df) == 6 and set(df["variant"]) == {"v1", "v2"}
    b = df[df["sample_id"] == "b"].set_index(["variant", "run"])["score"]
    assert b[("v1", 2)] == 1.0  # errored: the scale minimum
    assert math.isnan(b[("v2", 2)])  # ungraded: left out of the pilot, counted
    p = pilot_from_frame(df, "v1", "v2")
    assert p.cases == 2 and any("1 ungraded" in n for n in p.notes)
    assert df["input_tokens"].mean() == 2200
    with pytest.raises(ValueError, match="results"):
        frame_from_report({})
