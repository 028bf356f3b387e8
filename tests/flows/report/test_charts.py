"""The SVG charts and the suite page's figures: what each chart says, and what it says when there is
nothing to draw. Pure functions, no server (the browser checks are in test_pages.py)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from flows.report import chart_kit, charts
from flows.report.regression import regression_against_previous
from flows.report.server import run_charts
from flows.report.store import ReportStore
from flows.report.suite import suite_view, trend_entry
from tasks.store.files import atomic_write_json
from tests.flows.report.synthetic import STARTED, make_report

EVIL = "<script>alert(1)</script>"


def texts(svg: str, cls: str) -> list[str]:
    return re.findall(rf'<text[^>]*class="[^"]*\b{cls}\b[^"]*"[^>]*>([^<]*)</text>', svg)


def test_ticks_are_round_and_cover_the_range() -> None:
    assert chart_kit.ticks(1, 5) == [1, 2, 3, 4, 5]
    assert chart_kit.ticks(0, 0.037) == [0, 0.01, 0.02, 0.03]
    assert chart_kit.nice_range(0, 0.037) == (0, 0.04)
    assert chart_kit.ticks(-4.2, 4.2, 8) == [-4, -2, 0, 2, 4]
    assert chart_kit.number(0.25)(0.5) == "0.50" and chart_kit.number(1000)(2000) == "2,000"
    assert (
        chart_kit.number(250)(500) == "500"
        and chart_kit.number(2.5)(5) == "5.0"
        and chart_kit.number(0.0002)(0.0004) == "0.0004"
    )
    assert chart_kit.signed_number(1)(2) == "+2" and chart_kit.signed_number(1)(-2) == "-2"


def test_distribution_names_its_axes_and_marks() -> None:
    svg = charts.distribution({"v1": [1, 3, 5], EVIL: [2, 4]}, 1, 5, "How?", x_label="score (1-5)")
    assert texts(svg, "chart-title") == ["How?"]
    assert texts(svg, "x-label") == ["score (1-5)"] and texts(svg, "y-label") == ["variant"]
    assert "one case" in svg and "variant mean" in svg  # the legend says what a dot and a bar are
    assert svg.count("<circle") == 5 + 1  # one dot per case (and the legend's dot)
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_distribution_of_many_cases_is_a_histogram() -> None:
    svg = charts.distribution({"v1": [1 + (i % 5) for i in range(10_000)]}, 1, 5, "How?")
    assert "<circle" not in svg.split("</g>", 1)[1]  # no dot per case after the legend
    assert svg.count("<rect") <= 41 + 1 and "2,000 cases scored about 3.00" in svg
    assert len(svg) < 20_000


def test_differences_draw_zero_line_margin_band_and_mean() -> None:
    paired = charts.Paired("v2", "v1", 0.1, 0.5)
    svg = charts.differences([("a", 1.0), ("b", -1.0), ("c", 0.0), ("d", 2.0)], "Where?", paired)
    assert 'class="zero-line"' in svg and 'class="margin-band"' in svg and 'class="mean-line"' in svg
    assert texts(svg, "y-label") == ["difference in score (v2 − v1)"]
    assert "cases, sorted" in texts(svg, "x-label")[0]
    assert "mean difference +0.50" in svg and "within ±0.1" in svg
    assert "2 cases better, 1 worse, 1 unchanged" in svg
    assert "<title>b: -1.00</title>" in svg  # hovering a bar names its case


def test_differences_of_many_cases_are_a_histogram() -> None:
    items = [(f"s{i}", float(i % 9 - 4)) for i in range(10_000)]
    svg = charts.differences(items, "Where?", charts.Paired("v2", "v1", 0.1))
    assert texts(svg, "y-label") == ["cases"] and "difference in score per case" in texts(svg, "x-label")[0]
    assert svg.count("<rect") < 40 and 'class="zero-line"' in svg and len(svg) < 20_000


def test_all_equal_differences_say_so() -> None:
    svg = charts.differences([("a", 0.0), ("b", 0.0)], "Where?", charts.Paired("v2", "v1", 0.1))
    assert "chart-empty" in svg and "every difference is 0" in svg and "x-label" not in svg


def test_scatter_of_free_calls_says_so_instead_of_a_degenerate_axis() -> None:
    points = {"v1": [(0.0, 3.0, "a"), (0.0, 4.0, "b")]}
    svg = charts.scatter(points, "cost (USD)", "score", "Costlier?", y_range=(1, 5))
    assert "cost $0" in svg and "(0 - 0)" not in svg and "x-label" not in svg
    same = charts.scatter(
        {"v1": [(12.0, 3.0, "a"), (12.0, 4.0, "b")]}, "ms", "s", "?", y_range=(1, 5), what="latency"
    )
    assert "Every case has the same latency (12)" in same


def test_scatter_thins_large_runs_and_keeps_the_whole_scale() -> None:
    points = {"v1": [(i / 1000, 1 + i % 5, f"s{i}") for i in range(10_000)]}
    svg = charts.scatter(points, "cost per case (USD)", "score (1-5)", "Costlier?", y_range=(1, 5))
    assert "every 20th shown of 10,000" in svg
    assert svg.count("<circle") <= chart_kit.MAX_POINTS + 1
    assert texts(svg, "x-label") == ["cost per case (USD)"] and texts(svg, "y-label") == ["score (1-5)"]
    assert [t for t in texts(svg, "tick") if t in {"1", "5"}] == ["1", "5"]  # y from the scale's ends


def test_trend_marks_regressions() -> None:
    series = {
        "v2": [
            charts.TrendPoint(4.5, 4.0, 5.0),
            charts.TrendPoint(2.5, 2.0, 3.0, "worse", "dropped"),
            charts.TrendPoint(None),  # absent from that run: the line breaks
            charts.TrendPoint(4.6, 4.1, 5.0, "better"),
        ]
    }
    svg = charts.trend(series, ["a", "b", "c", "d"], "Holding?", y_label="mean", y_range=(1, 5), marks=True)
    assert svg.count('class="regression-ring"') == 1 and svg.count('class="mark-better"') == 1
    assert "regression" in svg and texts(svg, "y-label") == ["mean"]
    assert "run, oldest to newest (4 runs)" in texts(svg, "x-label")
    assert re.search(r'd="M[\d.]+ [\d.]+ L[\d.]+ [\d.]+ M[\d.]+ [\d.]+"', svg)


def test_run_charts_of_a_report(tmp_path: Path) -> None:
    report = make_report(tmp_path, {"v1": [3, 3, 2, 4], "v2": [5, 4, 4, 5]})
    out = run_charts(report)
    assert set(out) == {"distribution", "diff:v2", "cost", "latency"}
    for svg in out.values():
        assert len(texts(svg, "chart-title")) == 1
    assert "Where does v2 beat v1" in out["diff:v2"] and "within ±0.1" in out["diff:v2"]
    assert "cost $0" in out["cost"]  # the synthetic calls are free


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    """Four nights of suite caps; on the third, v2 drops by two points on every case."""
    nights: list[dict[str, list[float]]] = [
        {"v1": [3, 3, 3, 2, 4, 3, 3, 3], "v2": [5, 5, 4, 4, 4, 5, 4, 5]},
        {"v1": [3, 3, 3, 2, 4, 3, 3, 3], "v2": [5, 5, 4, 5, 4, 5, 4, 5]},
        {"v1": [3, 3, 3, 2, 4, 3, 3, 2], "v2": [3, 3, 2, 3, 2, 3, 2, 3]},
        {"v1": [3, 4, 3, 2, 4, 3, 3, 3], "v2": [5, 5, 5, 4, 4, 5, 4, 5]},
    ]
    out = tmp_path / "reports"
    out.mkdir()
    for i, scores in enumerate(nights):
        report = make_report(tmp_path, scores, suite="caps", started=STARTED + dt.timedelta(days=i))
        report.regression = regression_against_previous(out, report)
        atomic_write_json(out / f"{report.id}.json", report.dump())
    other = make_report(tmp_path, {"v1": [1, 2], "v2": [2, 3]}, suite="other")
    atomic_write_json(out / f"{other.id}.json", other.dump())
    return out


def test_suite_view(suite_dir: Path) -> None:
    view = suite_view(ReportStore(suite_dir).runs(), "caps")
    rows = view["rows"]
    assert [r.timestamp[:10] for r in rows] == ["2026-11-04", "2026-11-03", "2026-11-02", "2026-11-01"]
    assert view["names"] == ["v1", "v2"] and view["models"] == ["gpt-4o-mini"]
    trends = [r.trend for r in rows]
    assert all(trends) and trends[1].regressed == ["v2"] and trends[1].variants["v2"].change == "WORSE"
    assert trends[0].variants["v2"].change == "BETTER" and trends[3].previous is None
    score = view["charts"]["score"]
    assert score.count('class="regression-ring"') == 1 and "1 run with a regression" in score
    assert "Every run cost $0" in view["charts"]["cost"]
    assert "no errors in any run" in view["charts"]["errors"]
    assert suite_view(ReportStore(suite_dir).runs(), "nope")["rows"] == []


def test_trend_entry_resolves_blind_labels(tmp_path: Path) -> None:
    report = make_report(tmp_path, {"v1": [3, 4], "v2": [4, 5]}, suite="s", blind=True)
    assert set(trend_entry(report).variants) == {"v1", "v2"}
