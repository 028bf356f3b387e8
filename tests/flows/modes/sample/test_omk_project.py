"""oh-my-knowledge projects run unchanged in sample mode: an eval.yaml through --config, the
--control/--treatment naming, its extra assertion types and a JavaScript custom assertion, and a
project scaffolded by the real ``omk init``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.fakes.provider import FakeProvider
from tests.flows.helpers import make_project, run_capitals

pytestmark = pytest.mark.usefixtures("prefect_harness")
OMK_CLI = Path("/work/cache/omk/node_modules/oh-my-knowledge/dist/cli/index.js")


def omk_project(root: Path) -> Path:
    """The capitals project in oh-my-knowledge's layout: an eval.yaml, its sample fields, its types."""
    make_project(root, n=4)
    samples = json.loads((root / "eval-samples.json").read_text())
    for sample in samples:
        sample |= {"difficulty": "easy", "capability": ["geography"], "provenance": "human"}
        sample["assertions"] += [
            {"type": "tools_not_called", "values": ["Bash"]},
            {"type": "turns_max", "value": 1},
            {
                "type": "assert-set",
                "mode": "any",
                "children": [
                    {"type": "levenshtein_max", "reference": "Paris", "value": 2},
                    {"type": "max_length", "value": 8},
                ],
            },
            {"type": "custom", "fn": "checks/short.mjs"},
        ]
    (root / "samples").mkdir()
    (root / "samples" / "capitals.json").write_text(json.dumps(samples))
    (root / "samples" / "checks").mkdir()
    (root / "samples" / "checks" / "short.mjs").write_text(
        "export default async function (output, { sample }) {\n"
        "  const words = output.trim().split(/\\s+/).length;\n"
        "  return { pass: words <= 3, message: `${sample.sample_id}: ${words} words` };\n"
        "}\n"
    )
    config = {
        "samples": "samples/capitals.json",
        "variants": [
            {"name": "terse", "role": "treatment", "artifact": "v2"},
            {"name": "plain", "role": "control", "artifact": "./skills/v1.md"},
        ],
        "concurrency": 2,
        "timeoutMs": 60000,
        "noJudge": True,
        "bootstrap": True,
    }
    (root / "eval.yaml").write_text(yaml.safe_dump(config))
    return root


def test_eval_yaml_runs_unchanged(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = omk_project(tmp_path / "p")
    code, report = run_capitals(project, "--config", "eval.yaml", monkeypatch=monkeypatch)
    assert code == 0 and report is not None
    assert "not used in a skillab sample-mode run: bootstrap" in capsys.readouterr().err
    assert report["meta"]["variants"] == ["plain", "terse"]  # control first
    comparison = report["comparisons"][0]
    assert comparison["control"] == "plain" and comparison["treatment"] == "terse"
    entry = report["results"][0]["variants"]["terse"]
    by_type = {a["type"]: a for a in entry["assertions"]["details"]}
    assert by_type["tools_not_called"]["passed"] and by_type["turns_max"]["passed"]
    assert by_type["assert-set"]["passed"] and by_type["custom"]["passed"]
    assert by_type["custom"]["message"].endswith(": 1 words")
    chatty = {a["type"]: a for a in report["results"][0]["variants"]["plain"]["assertions"]["details"]}
    assert not chatty["custom"]["passed"] and not chatty["assert-set"]["passed"]
    assert report["summary"]["terse"]["avgCompositeScore"] > report["summary"]["plain"]["avgCompositeScore"]
    assert not any("strict, fair grader" in c.system for c in server.calls)  # noJudge: true
    assert {c.system for c in server.calls} == {"Answer the question.", "Answer with one word."}


def test_control_and_treatment_flags(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=2)
    code, report = run_capitals(
        project, "--control", "v1", "--treatment", "skills/v2.md", monkeypatch=monkeypatch
    )
    assert code == 0 and report is not None
    assert report["meta"]["variants"] == ["v1", "v2"] and report["comparisons"][0]["control"] == "v1"
    # On the command line the roles replace the eval.yaml's variants, as in oh-my-knowledge.
    omk = omk_project(tmp_path / "q")
    code, report = run_capitals(
        omk, "--config", "eval.yaml", "--control", "baseline", "--treatment", "v2", monkeypatch=monkeypatch
    )
    assert code == 0 and report is not None and report["meta"]["variants"] == ["baseline", "v2"]


def test_treatment_needs_a_control(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=2)
    code, _ = run_capitals(project, "--treatment", "v2", "--dry-run", monkeypatch=monkeypatch)
    assert code == 2 and "--treatment: needs --control" in capsys.readouterr().err
    code, _ = run_capitals(
        project, "--control", "v1", "--treatment", "v7", "--dry-run", monkeypatch=monkeypatch
    )
    err = capsys.readouterr().err
    assert code == 2 and "--treatment: skill not found: " in err and "v7.md" in err


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda c: c["variants"][1].update(artifact="./skills/v3.md"),
            "eval.yaml: variants[1].artifact: skill not found: ",
        ),
        (
            lambda c: c["variants"][0].update(artifact="v9"),
            "eval.yaml: variants[0].artifact: skill not found: ",
        ),
        (lambda c: c.update(samples="nope.json"), "eval.yaml: samples: file not found: "),
        (
            lambda c: c["variants"][0].update(role="treatments"),
            "eval.yaml: variants[0].role: must be 'control'",
        ),
        (
            lambda c: c["variants"][1].update(role="treatment"),
            "eval.yaml: variants: exactly one variant needs role control",
        ),
        (lambda c: c.update(judgeModel="haiku"), "eval.yaml: judgeModel: removed"),
    ],
)
def test_a_bad_eval_yaml_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], edit, expected: str
) -> None:
    project = omk_project(tmp_path / "p")
    config = yaml.safe_load((project / "eval.yaml").read_text())
    edit(config)
    (project / "eval.yaml").write_text(yaml.safe_dump(config))
    code, _ = run_capitals(project, "--config", "eval.yaml", "--dry-run", monkeypatch=monkeypatch)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and expected in err[0], err
    assert str(project / "eval.yaml") in err[0] or err[0].startswith("skillab: eval.yaml")


def test_unknown_assertion_type_in_an_omk_project_names_the_closest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = omk_project(tmp_path / "p")
    path = project / "samples" / "capitals.json"
    samples = json.loads(path.read_text())
    samples[0]["assertions"].append({"type": "rouge_min", "reference": "x"})
    path.write_text(json.dumps(samples))
    code, _ = run_capitals(project, "--config", "eval.yaml", "--dry-run", monkeypatch=monkeypatch)
    err = capsys.readouterr().err
    assert (
        code == 2
        and "assertions[6].type: unknown assertion type 'rouge_min' (did you mean 'rouge_n_min'?)" in err
    )


@pytest.mark.skipif(
    shutil.which("node") is None or not OMK_CLI.is_file(),
    reason="the oh-my-knowledge CLI is not installed (npm install --prefix /work/cache/omk oh-my-knowledge@0.54.0)",
)
def test_project_from_the_real_omk_init(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OMK_SKIP_UPDATE_CHECK": "1", "NO_COLOR": "1"}
    subprocess.run(
        ["node", str(OMK_CLI), "init", "demo"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    demo = tmp_path / "demo"
    assert (demo / "skills" / "code-review-v1" / "SKILL.md").is_file()
    code, report = run_capitals(
        demo,
        "--control",
        "code-review-v1",
        "--treatment",
        "code-review-v2",
        "--judge-executor",
        "openai",
        "--judge-model",
        "gpt-4o",
        monkeypatch=monkeypatch,
    )
    assert code in (0, 1) and report is not None  # exit 1 = the ci-style gate may fail on a fake model
    assert report["meta"]["variants"] == ["code-review-v1", "code-review-v2"]
    assert report["meta"]["sampleCount"] == 3 and all(
        r["variants"]["code-review-v2"]["ok"] for r in report["results"]
    )
    judge_calls = [c for c in server.calls if "strict, fair grader" in c.system]
    assert len(judge_calls) == 3 * 2 * 2  # two dimensions per sample, both variants
