"""The gates every command shares: a variant of which nothing was measured fails, naming the first
error, and a threshold adds nothing to that line; a variant with some failed runs is still measured."""

from __future__ import annotations

from pathlib import Path

from flows.modes.triggers.model import TriggerFigures, TriggerReport
from flows.modes.triggers.report import gate_failures as trigger_gate_failures
from flows.report.gates import gate_failures, unmeasured
from graders.triggers import TriggerStatus
from tasks.stats.trigger_stats import Trial, summarize
from tests.flows.report.synthetic import make_report

KEY = "HTTP 401: invalid x-api-key\n(the rest of the body)"


def test_a_variant_whose_every_run_failed_fails_every_gate_with_its_first_error(tmp_path: Path) -> None:
    errors = {"v2": dict.fromkeys(range(3), KEY)}
    report = make_report(tmp_path, {"v1": [4, 4, 5], "v2": [5, 5, 5]}, errors=errors)
    line = "v2: every execution failed (3/3), nothing was measured: HTTP 401: invalid x-api-key"
    assert unmeasured(report) == [line]
    assert gate_failures(report, threshold=3.0, require="none") == [line]  # no "score < threshold" too
    assert line in gate_failures(report, threshold=None, require="not-worse")


def test_a_variant_with_some_failed_runs_is_measured(tmp_path: Path) -> None:
    report = make_report(tmp_path, {"v1": [4, 4, 5], "v2": [5, 5, 5]}, errors={"v2": {1: KEY}})
    assert unmeasured(report) == []
    assert gate_failures(report, threshold=3.0, require="none") == []


def test_a_trigger_variant_without_a_counted_session_fails_its_gates(tmp_path: Path) -> None:
    def trials(status: TriggerStatus, variant: str) -> list[Trial]:
        return [Trial(query_id=q, expect="a", status=status, variant=variant) for q in ("q1", "q2")]

    summaries = [
        summarize(trials(TriggerStatus.OK, "v1"), ["a"]),
        summarize(trials(TriggerStatus.ERROR, "v2")[:1] + trials(TriggerStatus.NOT_LISTED, "v2")[1:], ["a"]),
    ]
    figures = TriggerFigures(
        candidates=["a"], queries_file="q.yaml", queries_sha256="0" * 64, summaries=summaries
    )
    sample = make_report(tmp_path, {"v1": [4], "v2": [4]})
    report = TriggerReport.model_construct(**{**dict(sample), "mode": "trigger", "triggers": figures})
    line = "v2: no session counted (1 errors, 1 not listed, of 2), nothing was measured"
    assert unmeasured(report) == [line]
    assert trigger_gate_failures(report, None, None) == [line]
