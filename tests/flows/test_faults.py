"""Proof under faults: 500 units through 429 storms, 500s, timeouts, cut connections and bad bodies;
every unit ends succeeded-after-retry or recorded with its cause, and the report matches the server."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import make_project, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")
RETRIES = 2


def plan(i: int, attempt: int) -> Fault | None:
    """The fault sample i meets on its nth call (1-based)."""
    kind = i % 10
    if kind == 6:
        return Fault(status=503)  # persistent: an error after RETRIES + 1 tries
    if kind == 7:
        return Fault(status=400, body='{"error": {"message": "bad request for testing"}}')  # permanent
    if attempt > 1:
        return None
    return {
        0: Fault(status=429, headers={"Retry-After": "0.1"}),
        1: Fault(status=429),
        2: Fault(status=500),
        3: Fault(delay=6),
        4: Fault(drop=True),
        5: Fault(malformed=True),
    }.get(kind)


def write_samples(project: Path, n: int) -> None:
    samples = [
        {
            "sample_id": f"s{i:03d}",
            "prompt": f"question {i}",
            "assertions": [{"type": "contains", "value": f"{i}"}],
        }
        for i in range(n)
    ]
    (project / "eval-samples.json").write_text(json.dumps(samples))


def test_500_units_under_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "p")
    write_samples(project, 250)
    seen: Counter[str] = Counter()

    def fault_for(call: Call) -> Fault | None:
        key = f"{call.system}|{call.prompt}"
        seen[key] += 1
        return plan(int(re.search(r"\d+", call.prompt).group()), seen[key])  # type: ignore[union-attr]

    monkeypatch.chdir(project)
    with FakeProvider(fault_for=fault_for) as server:
        use_provider(monkeypatch, server.url)
        code = main(
            [
                "run",
                "--executor",
                "openai",
                "--no-cache",
                "--quiet",
                "--concurrency",
                "32",
                "--timeout",
                "2",
                "--retries",
                str(RETRIES),
                "--retry-backoff",
                "0.05",
                "--output-dir",
                str(tmp_path / "r"),
            ]
        )
        calls = server.count()
    assert code == 0
    report = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    planned = sum(RETRIES + 1 if i % 10 == 6 else 1 if i % 10 in (7, 8, 9) else 2 for i in range(250)) * 2
    # The report's attempts match the server's own log (a group's retry calls only its failed units). The per-call timeout (5 s) is far above any
    # unfaulted reply, so only the planned 6 s stalls time out, even on 2 loaded cores.
    attempts = sum(r["variants"][v]["attempts"] for r in report["results"] for v in ("v1", "v2"))
    assert attempts == calls and calls >= planned
    for variant in ("v1", "v2"):
        s = report["summary"][variant]
        assert s["executions"] == 250 and s["errorCount"] == 50
        assert s["errorsByKind"] == {"transient": 25, "permanent": 25}
    by_case = {r["sample_id"]: r["variants"]["v1"] for r in report["results"]}
    assert "HTTP 503" in by_case["s006"]["error"] and by_case["s006"]["attempts"] == RETRIES + 1
    assert "bad request for testing" in by_case["s007"]["error"] and by_case["s007"]["attempts"] == 1
    for ok_case in ("s000", "s001", "s002", "s003", "s004", "s005", "s008"):
        assert by_case[ok_case]["ok"], ok_case
    verdict = report["comparisons"][0]["verdict"]
    assert verdict["label"] != "BETTER" and "errored or were ungraded" in verdict["reason"]


def test_budgets_stop_scheduling_and_report_what_did_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=8)
    (project / "prices.yaml").write_text("gpt-4o-mini: {input: 1000000, output: 0}\n")  # $1 per input token
    monkeypatch.chdir(project)
    with FakeProvider() as server:
        use_provider(monkeypatch, server.url)
        base = [
            "run",
            "--executor",
            "openai",
            "--no-cache",
            "--quiet",
            "--no-judge",
        ]
        assert (
            main([*base, "--max-calls", "5", "--concurrency", "2", "--output-dir", str(tmp_path / "a")]) == 0
        )
        assert server.count() == 5
        report = json.loads(next((tmp_path / "a").glob("*.json")).read_text())
        assert len(report["meta"]["notRun"]) == 11 and report["meta"]["calls"] == 5
        assert "not run: 11 call(s)" in capsys.readouterr().out
        before = server.count()
        # each call costs about $8 here (8 prompt words): a $20 budget allows three calls at concurrency 1
        assert (
            main(
                [
                    *base,
                    "--budget-usd",
                    "20",
                    "--concurrency",
                    "1",
                    "--prices",
                    "prices.yaml",
                    "--output-dir",
                    str(tmp_path / "b"),
                ]
            )
            == 0
        )
        assert server.count() - before == 3
