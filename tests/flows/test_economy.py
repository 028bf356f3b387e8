"""Paying less for the same verdict, end to end over real HTTP: the artifact warmed once per variant
then read from the provider's cache, the saving priced; calls through the batch APIs at half price,
resumed by batch id after a run that did not wait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from executors.base import WARM_UP_PROMPT
from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, make_project, report_runs, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")

LONG = " Background for every answer: capitals are cities." * 160  # ~2,000 tokens: above the minimum


def cached_project(root: Path) -> Path:
    project = make_project(root, n=6)
    for name, text in (("v1", "Answer the question."), ("v2", "Answer with one word.")):
        (project / "skills" / f"{name}.md").write_text(text + LONG)
    return project


def report_of(folder: Path) -> dict[str, Any]:
    (path,) = folder.glob("*.json")
    return dict(json.loads(path.read_text()))


def test_each_variant_is_warmed_once_then_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = cached_project(tmp_path / "p")
    monkeypatch.chdir(project)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    common = ["run", "--executor", "anthropic", "--model", "claude-3-7-sonnet", "--quiet", "--no-cache"]
    common += ["--concurrency", "6"]
    with FakeProvider(answer) as server:
        assert main([*common, "--base-url", server.url, "--output-dir", "cached"]) == 0
        warm = [c for c in server.calls if c.prompt == WARM_UP_PROMPT]
        first_calls = server.calls[: len(warm)]
        calls = len(server.calls)
        assert main([*common, "--base-url", server.url, "--output-dir", "plain", "--no-prompt-cache"]) == 0
        plain_calls = server.calls[calls:]
    assert len(warm) == 2 and first_calls == warm  # one per variant, before any case
    assert all(c.body["max_tokens"] == 1 for c in warm)
    cached = report_of(project / "cached")
    runs = report_runs(cached)
    assert len(runs) == 12 and all(r["cacheReadTokens"] > 0 and r["cacheWriteTokens"] == 0 for r in runs)
    caching = cached["meta"]["promptCaching"]
    assert cached["meta"]["warmUpCalls"] == 2 and caching["cacheWriteTokens"] == 0
    assert 0 < caching["actualUSD"] < caching["uncachedUSD"] and caching["savedUSD"] > 0
    assert "prompt caching: " in capsys.readouterr().out
    # --no-prompt-cache: no marker, no warm-up, every prompt token at the input price
    assert not any(c.prompt == WARM_UP_PROMPT for c in plain_calls)
    assert not any("cache_control" in json.dumps(c.body) for c in plain_calls)
    plain = report_of(project / "plain")
    assert plain["meta"]["promptCaching"] is None and plain["meta"]["warmUpCalls"] == 0
    assert plain["meta"]["totalCostUSD"] > cached["meta"]["totalCostUSD"]


def test_batch_at_half_price_resumed_by_batch_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=6)
    monkeypatch.chdir(project)
    base = ["run", "--executor", "openai", "--model", "gpt-4o-mini", "--quiet", "--batch-poll", "0.05"]
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        server.batch_item_error = lambda prompt: "overloaded" if "France" in prompt else None
        live = [*base, "--output-dir", "live", "--cache-dir", "live-cache"]
        assert main(live) == 0
        batched = [*base, "--batch", "--output-dir", "batch", "--cache-dir", "batch-cache"]
        # 1. a run nobody waits on: submitted, polled once, reported as pending
        assert main([*batched, "--no-batch-wait"]) == 0
        assert len(server.batches) == 1 and "still in a batch; re-run" in capsys.readouterr().out
        pending = report_of(project / "batch")
        assert {u["reason"] for u in pending["meta"]["notRun"]} == {"batch pending"}
        assert len(pending["meta"]["notRun"]) == 12
        for path in (project / "batch").glob("*.json"):
            path.unlink()
        # 2. the re-run collects that batch: nothing is submitted again
        assert main(batched) == 0
        assert len(server.batches) == 1
        collected = report_of(project / "batch")
        for path in (project / "batch").glob("*.json"):
            path.unlink()
        # 3. only the item that failed is submitted again
        server.batch_item_error = None
        assert main(batched) == 0
        (_, resubmitted) = server.batches.values()
        assert len(resubmitted.items) == 2  # France under v1 and v2
    runs = report_runs(collected)
    failed = [r for r in runs if not r["ok"]]
    assert len(failed) == 2 and all("overloaded" in r["error"] for r in failed)
    assert collected["meta"]["batchedCalls"] == 12 and all(r["batched"] for r in runs if r["ok"])
    live_runs = {
        (r["run"], r["outputPreview"]): r["costUSD"] for r in report_runs(report_of(project / "live"))
    }
    for r in runs:
        if r["ok"]:
            assert r["costUSD"] == pytest.approx(live_runs[(r["run"], r["outputPreview"])] / 2)
    final = report_of(project / "batch")
    assert final["meta"]["cacheHits"] == 10 and final["meta"]["batchedCalls"] == 2
    assert all(r["ok"] for r in report_runs(final))


def test_batch_needs_a_provider_with_a_batch_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=2)
    monkeypatch.chdir(project)
    assert main(["run", "--dry-run", "--batch"]) == 2
    assert capsys.readouterr().err.strip() == (
        "skillab: error: --batch: the local executor has no batch API (anthropic and openai have one)"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert main(["run", "--dry-run", "--batch", "--executor", "openai", "--no-cache"]) == 2
    assert "--batch: needs the cache" in capsys.readouterr().err


def test_plan_from_a_pilot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import random

    project = make_project(tmp_path / "p", n=8)
    monkeypatch.chdir(project)
    coin = random.Random(3)

    def noisy(system: str, prompt: str) -> str:
        return "Nowhere" if coin.random() < 0.3 else answer(system, prompt)  # run-to-run noise

    pilot = ["run", "--executor", "openai", "--model", "gpt-4o-mini", "--quiet", "--repeat", "3"]
    with FakeProvider(noisy) as server:
        use_provider(monkeypatch, server.url)
        assert main([*pilot, "--output-dir", "reports", "--suite", "capitals", "--no-cache"]) == 0
    capsys.readouterr()
    (path,) = (project / "reports").glob("*.json")
    assert main(["plan", "--report", str(path), "--min-effect", "0.5", "--artifact-tokens", "2000"]) == 0
    out = capsys.readouterr().out
    assert "pilot " in out and "8 paired cases, 3 run(s)" in out and "cheaper lever: " in out
    assert "cached+batch $" in out and "prices: gpt-4o-mini" in out
    assert main(["plan", "--suite", "capitals", "--reports-dir", "reports", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["pilot"]["cases"] == 8 and figures["pilot"]["within"] is not None
    assert figures["lever"] in {"more cases", "more runs"} and figures["best"]["calls"] > 0
    assert main(["plan", "--suite", "nope", "--reports-dir", "reports"]) == 2
    assert "no sample-mode run of suite 'nope'" in capsys.readouterr().err


def waves_project(root: Path, cases: int) -> Path:
    root.mkdir(parents=True)
    samples = [
        {
            "sample_id": f"c{i:02d}",
            "prompt": f"Case {i}: reply OK",
            "assertions": [{"type": "contains", "value": "OK"}],
        }
        for i in range(cases)
    ]
    (root / "eval-samples.json").write_text(json.dumps(samples))
    (root / "skills").mkdir()
    (root / "skills" / "v1.md").write_text("Answer.")
    (root / "skills" / "v2.md").write_text("Answer with one word.")
    return root


def test_sequential_stops_when_the_answer_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = waves_project(tmp_path / "p", 60)
    monkeypatch.chdir(project)

    def model(system: str, prompt: str) -> str:
        return "OK" if "one word" in system else "Sure."  # v2 passes every case, v1 none

    args = ["run", "--executor", "openai", "--model", "gpt-4o-mini", "--quiet", "--no-cache"]
    args += ["--sequential", "--wave", "5", "--output-dir", "reports"]
    with FakeProvider(model) as server:
        use_provider(monkeypatch, server.url)
        assert main(args) == 0
        calls = len(server.calls)
    report = report_of(project / "reports")
    (comparison,) = report["comparisons"]
    seq, verdict = comparison["sequential"], comparison["verdict"]
    assert verdict["label"] == "BETTER" and "confidence sequence" in verdict["procedure"]
    assert seq["stoppedEarly"] and seq["decision"] == "BETTER" and seq["lower"] > 0.1
    assert seq["casesUsed"] % 5 == 0 and seq["casesUsed"] < 60 and seq["waves"] == seq["casesUsed"] // 5
    assert calls == seq["callsUsed"] == 2 * seq["casesUsed"] and seq["callsFixedN"] == 120
    assert "executions made" in verdict["reason"]
    # the settled label shows its band; no note left saying the band is withheld
    assert verdict["band"] in {"USE", "LIKELY USE"} and verdict.get("band_note") is None


def test_sequential_without_a_difference_runs_out_and_takes_the_final_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    project = waves_project(tmp_path / "p", 12)
    monkeypatch.chdir(project)
    coin = random.Random(5)

    def model(system: str, prompt: str) -> str:
        return "OK" if coin.random() < 0.5 else "Sure."  # the same for both variants

    args = ["run", "--executor", "openai", "--model", "gpt-4o-mini", "--quiet", "--no-cache"]
    args += ["--sequential", "--wave", "4", "--output-dir", "reports"]
    with FakeProvider(model) as server:
        use_provider(monkeypatch, server.url)
        assert main(args) == 0
    (comparison,) = report_of(project / "reports")["comparisons"]
    seq = comparison["sequential"]
    assert not seq["stoppedEarly"] and seq["decision"] is None and seq["casesUsed"] == 12
    assert comparison["verdict"]["procedure"].startswith("fixed-N paired interval on every case")
    assert comparison["verdict"]["label"] != "BETTER"
