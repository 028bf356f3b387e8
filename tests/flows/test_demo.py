"""The demo that `init` scaffolds, on the real embedded model: worked examples must win, measured."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from flows.cli.main import main

#: Only what runs the embedded model needs it (and those tests run a flow, so Prefect).
needs_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="the 'local' extra (the embedded model) is installed by scripts/setup.sh",
)


@needs_model
@pytest.mark.usefixtures("prefect_harness")
def test_demo_worked_examples_beat_plain_instructions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path / "demo")]) == 0
    monkeypatch.chdir(tmp_path / "demo")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "reports"
    assert (
        main(
            [
                "run",
                "--variants",
                "v1,v2",
                "--output-dir",
                str(out),
                "--cache-dir",
                str(tmp_path / "c"),
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["meta"]["executor"] == "local" and report["meta"]["temperature"] == 0
    v1, v2 = report["summary"]["v1"]["avgAssertionScore"], report["summary"]["v2"]["avgAssertionScore"]
    assert v2 > v1, (v1, v2)
    printed = capsys.readouterr()
    assert "embedded model" in printed.err and "v2 vs v1" in printed.out


def test_init_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path)]) == 0
    assert main(["init", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err


@needs_model
@pytest.mark.usefixtures("prefect_harness")
def test_embedded_model_as_judge_smoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "p"
    (project / "skills").mkdir(parents=True)
    (project / "skills" / "v1.md").write_text("Answer briefly.")
    (project / "eval-samples.json").write_text(
        json.dumps(
            [
                {"sample_id": "q1", "prompt": "What is the capital of France?", "rubric": "Names Paris."},
                {
                    "sample_id": "q2",
                    "prompt": "What colour is the sky?",
                    "dimensions": {"accuracy": "Says blue.", "brevity": "One word."},
                },
            ]
        )
    )
    monkeypatch.chdir(project)
    out = tmp_path / "reports"
    assert (
        main(
            [
                "run",
                "--variants",
                "v1",
                "--output-dir",
                str(out),
                "--cache-dir",
                str(tmp_path / "c"),
                "--max-tokens",
                "16",
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["meta"]["judgeModel"] == "local:gemma-3-270m"
    for result in report["results"]:
        for entry in result["variants"].values():
            # the grammar makes a base model's judgement parse: graded, a score in 1-5
            assert entry["judgeStatus"] == "graded" and 1 <= entry["llmScore"] <= 5
    assert set(report["results"][1]["variants"]["v1"]["dimensionScores"]) == {"accuracy", "brevity"}
    assert "weak judge" in capsys.readouterr().err
