"""The validity certificate end to end: real flow runs against a local model server, graders tried on
reference answers, grading errors that fail closed, and the --require-valid gate."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.fakes.provider import Call, FakeProvider, Fault
from tests.flows.helpers import CAPITALS, ROOT, answer, make_project, report_runs, run_capitals, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")


def edit_samples(project: Path, change: Any) -> None:
    path = project / "eval-samples.json"
    samples = json.loads(path.read_text())
    for s in samples:
        change(s)
    path.write_text(json.dumps(samples, indent=1))


def checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in report["validity"]["checks"]}


def test_a_broken_grader_is_named_left_out_and_gates_under_require_valid(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p")
    long_v2 = (
        "Answer with one word. Never add a sentence, a greeting or an explanation to the answer you give."
    )
    (project / "skills" / "v2.md").write_text(long_v2)

    def change(s: dict[str, Any]) -> None:
        s["reference_output"] = CAPITALS[s["prompt"].rstrip("?").split()[-1]]
        if s["sample_id"] == "cap-france":
            s["assertions"].append({"type": "regex", "pattern": "x^"})  # can never match
        if s["sample_id"] == "cap-peru":
            s["context"] = long_v2  # the artifact leaked into a case

    edit_samples(project, change)
    # the plan already knows: a broken grader fails --require-valid before any call
    assert run_capitals(project, "--dry-run", "--require-valid", monkeypatch=monkeypatch) == (1, None)
    assert "--require-valid: 1 broken grader(s)" in capsys.readouterr().err and not server.calls
    code, report = run_capitals(
        project, "--require-valid", "--junit", "j.xml", "--github-summary", "gh.md", monkeypatch=monkeypatch
    )
    assert code == 1 and report is not None
    err = capsys.readouterr().err
    assert (
        "skillab: FAIL not certified: graders: 1 of the 17 graders tried on reference answers is broken"
        in err
    )
    assert "(the flow run is marked Failed)" in err  # a nightly run of it shows red in the UI
    validity = report["validity"]
    assert not validity["certified"] and validity["line"].startswith("not certified: graders")
    graders = checks(report)["graders"]
    assert graders["status"] == "FAIL" and graders["items"][0].startswith(
        "cap-france#3 (regex): fails the reference"
    )
    assert validity["notCertified"] == ["v2 vs v1: BETTER"]
    assert {g["grader"]: g["status"] for g in validity["graders"]}["cap-france#3 (regex)"] == "broken"
    assert len(validity["graders"]) == 17
    # the broken grader's results are left out: France is graded on its two sound assertions
    france = next(r for r in report["results"] if r["sample_id"] == "cap-france")
    assert france["variants"]["v2"]["assertions"]["total"] == 2
    leakage = checks(report)["leakage"]
    assert leakage["status"] == "WARN" and "sample cap-peru: context" in leakage["items"][0]
    assert checks(report)["errors"]["status"] == "PASS" and "judge" not in checks(report)  # no judge ran
    suite = next(s for s in ET.parse(project / "j.xml").getroot() if s.get("name") == "skillab.validity")
    assert [tc.get("name") for tc in suite if tc.find("failure") is not None] == ["graders"]
    summary = (project / "gh.md").read_text()
    # no USE band beside a verdict the certificate does not back
    assert "### Validity: not certified" in summary and "BETTER (not certified)**" in summary
    assert "band: USE" not in summary
    # without the gate the same run passes: the certificate informs, --require-valid decides
    code, again = run_capitals(project, monkeypatch=monkeypatch)
    assert (
        code == 0
        and again is not None
        and not again["validity"]["certified"]
        and again["meta"]["cacheHits"] == 16
    )


def test_a_check_that_raises_is_a_grading_error_in_both_arms(
    tmp_path: Path, server: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p")
    (project / "boom.py").write_text("def check(output, ctx):\n    raise RuntimeError('the check broke')\n")
    edit_samples(project, lambda s: s["assertions"].append({"type": "custom", "fn": "boom.py"}))
    _, report = run_capitals(project, "--no-cache", monkeypatch=monkeypatch)
    assert report is not None
    for name in ("v1", "v2"):
        s = report["summary"][name]
        assert s["errorCount"] == 0 and s["ungradedCount"] == 8 and s["avgCompositeScore"] is None
    runs = report_runs(report)
    assert all(r["ok"] and r["compositeScore"] is None for r in runs)
    assert all(
        r["gradingError"] == "custom: custom check failed: RuntimeError: the check broke" for r in runs
    )
    # nor does it count as an assertion that fails everywhere
    assert not [i for i in report["analysis"]["insights"] if "custom" in " ".join(i["items"])]
    assert report["comparisons"][0]["verdict"]["label"] not in ("BETTER", "WORSE")
    line = checks(report)["grading errors"]
    assert line["status"] == "FAIL" and line["value"] == 1.0
    assert checks(report)["errors"]["status"] == "PASS"


def test_a_judge_that_fails_a_whole_arm_is_no_score_of_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statuses = iter([429, 500] * 100)

    def fault_for(call: Call) -> Fault | None:
        # v2's one-word answers: every judgement of that arm answers 429, then 500, ...
        block = re.search(r"<<<ANSWER_(\w+)>>>\n(.*)\n<<<END_ANSWER_\1>>>", call.prompt, re.S)
        one_word = block is not None and len(block.group(2).split()) == 1
        return Fault(status=next(statuses)) if "strict, fair grader" in call.system and one_word else None

    with FakeProvider(answer, fault_for=fault_for) as s:
        use_provider(monkeypatch, s.url)
        project = make_project(tmp_path / "p", rubric=True)
        args = (
            "--judge-executor",
            "openai",
            "--judge-model",
            "gpt-4o",
            "--retries",
            "1",
            "--retry-backoff",
            "0",
        )
        _, report = run_capitals(project, "--no-cache", *args, monkeypatch=monkeypatch)
    assert report is not None
    v1, v2 = report["summary"]["v1"], report["summary"]["v2"]
    assert v1["ungradedCount"] == 0 and v1["avgCompositeScore"] is not None
    assert v2["ungradedCount"] == 8 and v2["errorCount"] == 0 and v2["avgCompositeScore"] is None
    assert all(
        run["compositeScore"] is None for run in report_runs(report) if run["judgeStatus"] == "ungraded"
    )
    assert report["comparisons"][0]["verdict"]["label"] in ("INSUFFICIENT DATA", "INCONCLUSIVE")
    grading = checks(report)["grading errors"]
    assert grading["status"] == "FAIL" and grading["items"] == ["v2"]


def test_validate_tries_the_graders_without_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # any model call would fail
    monkeypatch.chdir(ROOT / "flows" / "demo")  # its skillab.yaml and samples file, as `run` reads them
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "validate: 27 graders tried on 14 reference answer(s): 26 ok, 1 untested, 0 broken" in out
    assert "broken" not in out.replace("0 broken", "")
    project = make_project(tmp_path / "p", n=2)
    edit_samples(project, lambda s: s.update(reference_output="I believe it is Lima."))
    monkeypatch.chdir(project)
    assert main(["validate"]) == 1
    out = capsys.readouterr().out
    assert "broken   cap-france#1 (contains): fails the reference answer: missing 'Paris'" in out
    assert "broken   cap-france#2 (word_count_max)" in out
    (project / "eval-samples.json").write_text('[{"sample_id": "a", "prompt": "p", "reference_output": []}]')
    assert main(["validate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "eval-samples.json" in err and "sample a" in err and "reference_output" in err
