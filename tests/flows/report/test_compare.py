"""The compare page and the regression check read the same pair of runs the same way."""

from __future__ import annotations

from pathlib import Path

from flows.report.regression import compare_runs
from flows.report.server import compare_rows, compare_stats
from tests.flows.report.synthetic import STARTED, make_report


def test_the_compare_page_gives_the_regressions_figures(tmp_path: Path) -> None:
    """A case whose one run of two errored keeps the score of the other in both (8 cases, not 7)."""
    import datetime as dt

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before = make_report(tmp_path / "a", {"v1": [5] * 8, "v2": [5] * 8}, repeat=2, suite="s")
    after = make_report(
        tmp_path / "b",
        {"v1": [5] * 8, "v2": [5, 3, 2, 5, 1, 4, 3, 2]},
        repeat=2,
        suite="s",
        errors={"v2": {0: "HTTP 500"}},
        started=STARTED + dt.timedelta(days=1),
    )
    regression = compare_runs(before, after, seed=0).per_variant["v2"]
    page = compare_stats(before, after, compare_rows(before, after))["v2"]
    assert page.cases == regression.cases == 8
    assert page.paired.mean == regression.paired.mean and page.verdict.label == regression.verdict.label
    rows = [r for r in compare_rows(before, after) if r.variant == "v2"]
    assert [r.errored for r in rows if r.sample_id == "s0"] == [["B"]]  # marked, still compared
