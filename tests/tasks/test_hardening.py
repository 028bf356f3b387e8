"""Statistics that say when they know nothing, and report files that are strict JSON."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from executors.schema import RunResult
from graders.schema import Grade, JudgeResult
from tasks.schema import SAMPLE_SCALE, Record
from tasks.stats import statistics as st
from tasks.stats.aggregate import aggregate
from tasks.store.files import atomic_write_json


def test_welch_is_undefined_when_both_groups_have_no_variance() -> None:
    out = st.welch([3.0, 3.0, 3.0], [4.0, 4.0, 4.0])
    assert out.p is None and out.significant is False and "zero variance" in (out.note or "")


def test_intervals_stay_on_the_scale() -> None:
    interval = st.t_interval([0.0, 100.0], bounds=(0.0, 100.0))
    assert interval.low == 0.0 and interval.high == 100.0
    raw = st.t_interval([0.0, 100.0])
    assert raw.low is not None and raw.low < -100  # what the cut prevents


def test_the_band_is_shown_only_beside_a_settled_verdict() -> None:
    paired = st.paired([0.4, -0.3, 0.5, -0.2, 0.6, -0.4], seed=0)
    inputs = st.VerdictInputs(paired, 0.1, 0.3, paired.p_ttest, 25.0, (0.0, 0.0), 0.1)
    v = st.verdict(inputs)
    assert v.label != "BETTER" and v.band is None and (v.band_note or "").startswith("no band:")
    clear = st.paired([1.0, 1.2, 0.9, 1.1, 1.0, 1.3, 0.8, 1.1], seed=0)
    settled = st.verdict(st.VerdictInputs(clear, 0.1, 0.3, clear.p_ttest, 25.0, (0.0, 0.0), 0.1))
    assert settled.label == "BETTER" and settled.band == "USE" and settled.band_note is None


def test_cases_without_a_criterion_are_excluded_and_said() -> None:
    def rec(sample: str, variant: str, score: float, scored: bool = True) -> Record:
        grade = Grade(judge=JudgeResult(), composite=score if scored else 0.0, scored=scored)
        return Record(sample_id=sample, variant=variant, run=1, result=RunResult(ok=True), grade=grade)

    records = [rec(f"s{i}", v, 4.0 if v == "b" else 2.0) for i in range(4) for v in ("a", "b")]
    records += [rec("bare", v, 0.0, scored=False) for v in ("a", "b")]
    out = aggregate(records, [], ["a", "b"], "a", SAMPLE_SCALE, seed=0)
    assert out.comparisons[0].cases == 4  # the bare case is not an "unchanged" pair
    assert out.summary["a"].avg_composite_score == 2.0 and out.summary["a"].unscored_count == 1
    assert any(i.type == "unscored_cases" and i.items == ["bare"] for i in out.analysis.insights)


def test_report_files_are_strict_json(tmp_path: Path) -> None:
    atomic_write_json(tmp_path / "r.json", {"a": math.nan, "b": [math.inf, 1.5], "c": {"d": -math.inf}})
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def test_a_fifo_in_the_reports_folder_blocks_nothing(tmp_path: Path) -> None:
    from flows.report.store import ReportStore, read_reports

    os.mkfifo(tmp_path / "pipe.json")
    warned: list[str] = []
    assert list(read_reports(tmp_path, warn=lambda p, r: warned.append(r))) == []
    assert warned == ["not a regular file"]
    assert ReportStore(tmp_path).runs() == []
