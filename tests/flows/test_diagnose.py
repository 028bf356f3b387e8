"""Why did it score that way? The judge against a gold file and human ratings, bias probes,
failure diagnosis and section ablations, end to end against scripted servers whose behaviour is known."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.report.schema import load_report
from flows.report.server import export_html
from flows.report.store import ReportStore
from tasks.stats.agreement import krippendorff_alpha_ordinal
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import CAPITALS, answer, make_project, run_bench, use_provider

pytestmark = pytest.mark.usefixtures("prefect_harness")

GOLD_HUMAN = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
#: The scripted judge agrees with the gold file except on g2 (3 -> 5) and g7 (3 -> 1).
GOLD_JUDGE = [1, 2, 5, 4, 5, 1, 2, 1, 4, 5]


def answer_block(prompt: str) -> str:
    block = re.search(r"<<<ANSWER_(\w+)>>>\n(.*)\n<<<END_ANSWER_\1>>>", prompt, re.S)
    return block.group(2) if block else ""


def gold_judge(system: str, prompt: str) -> str:
    """The honest judge of the helpers, which scores gold outputs as GOLD_JUDGE says."""
    gold = re.match(r"GOLD g(\d+)", answer_block(prompt)) if "strict, fair grader" in system else None
    if gold:
        return json.dumps({"score": GOLD_JUDGE[int(gold.group(1))], "reason": "scripted"})
    return answer(system, prompt)


def write_gold(project: Path) -> Path:
    items = [
        {
            "id": f"g{i}",
            "prompt": "Name a capital.",
            "output": f"GOLD g{i}",
            "score": s,
            "rubric": "One word.",
        }
        for i, s in enumerate(GOLD_HUMAN)
    ]
    path = project / "gold.yaml"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def cli(project: Path, *args: str) -> list[str]:
    return [
        "--executor",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--judge-executor",
        "openai",
        "--judge-model",
        "claude-judge",
        "--cache-dir",
        str(project / "cache"),
        *args,
    ]


def test_judge_gold_alpha_and_disagreements_are_exact_and_gate_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "p", n=4, rubric=True)
    write_gold(project)
    expected = krippendorff_alpha_ordinal([[h, j] for h, j in zip(GOLD_HUMAN, GOLD_JUDGE, strict=True)])
    with FakeProvider(gold_judge) as server:
        use_provider(monkeypatch, server.url)
        code, report = run_bench(project, *cli(project, "--judge-gold", "gold.yaml"), monkeypatch=monkeypatch)
        assert code == 0 and report is not None
        gold = report["judgeGold"]
        assert gold["items"] == 10 and gold["ungraded"] == 0 and gold["reliable"]
        assert gold["agreement"]["krippendorffAlphaOrdinal"] == pytest.approx(expected, abs=1e-6)
        assert [(d["item"], d["human"], d["judge"]) for d in gold["agreement"]["disagreements"]] == [
            ("g2", 3, 5),
            ("g7", 3, 1),
        ]
        assert "judge_caveat" not in report["comparisons"][0]["verdict"]
        strict = ["ci", *cli(project, "--judge-gold", "gold.yaml", "--threshold", "1")]
        strict += ["--output-dir", str(project / "r2"), "--quiet", "--min-judge-alpha", "0.95"]
        assert main(strict) == 1  # the gate fails on the unreliable judge alone
        marked = load_report(next((project / "r2").glob("*.json")))
        assert marked.judge_gold is not None and not marked.judge_gold.reliable
        assert "unreliable judge" in (marked.comparisons[0].verdict.judge_caveat or "")
        page = (project / "r2" / f"{marked.id}.html").read_text()
        assert (
            "Judge against the gold file" in page
            and page.count("the verdict rests on an unreliable judge") >= 2
        )
        assert main([*strict[:-1], "0.5"]) == 0


def test_ratings_recompute_the_human_agreement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "p", n=4, rubric=True)
    with FakeProvider(answer) as server:
        use_provider(monkeypatch, server.url)
        code, report = run_bench(project, *cli(project), monkeypatch=monkeypatch)
    assert code == 0 and report is not None and "humanAgreement" not in report
    store = ReportStore(project / "reports")
    # The honest judge gives v1 (chatty) 2 and v2 (one word) 5: rate v2 as the judge did, v1 not.
    ratings = {
        ("cap-france", "v2"): 5,
        ("cap-japan", "v2"): 5,
        ("cap-france", "v1"): 2,
        ("cap-japan", "v1"): 5,
    }
    for (sample_id, variant), stars in ratings.items():
        store.add_feedback(report["id"], sample_id, variant, stars, "")
    human = store.load(report["id"]).human_agreement
    assert human is not None and human.rated == 4 and human.n == 4
    expected = krippendorff_alpha_ordinal([[5, 5], [5, 5], [2, 2], [5, 2]])
    assert human.krippendorff_alpha_ordinal == pytest.approx(expected)
    assert [(d.item, d.human, d.judge) for d in human.disagreements] == [("cap-japan · v1", 5, 2)]
    store.add_feedback(report["id"], "cap-japan", "v1", 2, "on second thought")  # the latest counts
    again = store.load(report["id"]).human_agreement
    assert again is not None and again.krippendorff_alpha_ordinal == 1.0 and again.disagreements == []
    page = export_html(store.load(report["id"]))
    assert "Judge against your ratings" in page and '<table class="confusion">' in page


def diagnosing_judge(system: str, prompt: str) -> str:
    if "analyse failures" in system:
        # The artifact reaches the diagnosis fenced: the suggestion can quote it.
        artifact = "Answer the question." if "Answer the question." in prompt else "?"
        return json.dumps({"diagnosis": f"The artifact says only '{artifact}'; ask for one word."})
    return answer(system, prompt)


def test_failures_are_grouped_with_a_suggestion_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "p", n=4, rubric=True)
    with FakeProvider(diagnosing_judge) as server:
        use_provider(monkeypatch, server.url)
        code, report = run_bench(project, *cli(project), monkeypatch=monkeypatch)
        asked = server.count(lambda c: "analyse failures" in c.system)
        assert code == 0 and report is not None
        diagnosis = report["diagnosis"]
        v1, v2 = diagnosis["variants"]
        # v1 answers in a sentence: the word-count assertion and the judge (2/5) fail on every case.
        assert v1["variant"] == "v1" and v1["cases"] == 4 and v1["failingCases"] == 4
        groups = {g["key"]: g for g in v1["groups"]}
        assert (
            groups["word_count_max: 2"]["share"] == 1.0 and groups["word_count_max: 2"]["kind"] == "assertion"
        )
        assert groups["judge: rubric"]["cases"] == ["cap-france", "cap-italy", "cap-japan", "cap-spain"]
        assert groups["judge says: words"]["kind"] == "reason" and groups["judge says: words"]["runs"] == 4
        assert "contains: Paris" not in groups  # what passed is not a failure
        assert all("'Answer the question.'" in g["suggestion"] for g in v1["groups"])
        assert v2["failingCases"] == 0 and v2["groups"] == []
        assert asked == len(v1["groups"]) and diagnosis["suggestions"]
        code, quiet = run_bench(project, *cli(project, "--no-diagnose"), monkeypatch=monkeypatch)
        assert server.count(lambda c: "analyse failures" in c.system) == asked  # no new call
    assert quiet is not None and not quiet["diagnosis"]["suggestions"]
    assert all("suggestion" not in g for g in quiet["diagnosis"]["variants"][0]["groups"])
    html = project / "reports" / f"{quiet['id']}.html"
    assert "Failures, grouped" in html.read_text() and "judge says: words" in html.read_text()


# ---------------------------------------------------------------- judge bias probes

WRONG = {"Japan", "Spain", "Peru", "Chile"}  # the model names a wrong capital for these


def bias_project(root: Path) -> Path:
    """Only a `contains` assertion: the assertion score says right or wrong, never long or short."""
    project = make_project(root, n=8, rubric=True)
    samples = json.loads((project / "eval-samples.json").read_text())
    for s in samples:
        s["assertions"] = s["assertions"][:1]
    (project / "eval-samples.json").write_text(json.dumps(samples))
    return project


def biased_model(system: str, prompt: str, model: str) -> str:
    """The model answers wrongly for WRONG; the judge scores right 4 / wrong 2, and adds a point for a
    long answer when its model name says `long`; `gpt` judges add a point to everything (same vendor
    as the model under test); pairwise, the `first` judge always prefers answer 1."""
    if "Which answer is better?" in prompt:
        return json.dumps({"winner": "1" if "first" in model else "tie", "reason": "scripted"})
    if "strict, fair grader" in system:
        text = answer_block(prompt)
        right = "Atlantis" not in text
        score = (4 if right else 2) + ("long" in model and len(text.split()) > 3) + model.startswith("gpt")
        return json.dumps({"score": min(score, 5), "reason": f"{len(text.split())} words"})
    country = prompt.rstrip("?").split()[-1]
    text = answer(system, prompt)
    return text.replace(CAPITALS[country], "Atlantis") if country in WRONG else text


def bias_run(project: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict:
    code, report = run_bench(project, *cli(project, "--no-diagnose", *args), monkeypatch=monkeypatch)
    assert code == 0 and report is not None
    return report


def test_length_bias_is_found_only_in_the_judge_that_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = bias_project(tmp_path / "p")
    with FakeProvider(biased_model) as server:
        use_provider(monkeypatch, server.url)
        biased = bias_run(project, monkeypatch, "--judge-model", "claude-long")["judgeBias"]["length"]
        fair = bias_run(project, monkeypatch, "--judge-model", "claude-fair")["judgeBias"]["length"]
    assert biased["detected"] and biased["partial_r"] > 0.9 and biased["p"] < 0.001
    assert biased["controlled_for"] == "assertion score" and biased["n"] == 16
    assert "the judge favours longer answers" in biased["line"]
    # the fair judge's scores follow the assertion score exactly: nothing is left to correlate
    assert not fair["detected"] and fair["partial_r"] is None


def test_position_bias_and_self_preference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = bias_project(tmp_path / "p")
    with FakeProvider(biased_model) as server:
        use_provider(monkeypatch, server.url)
        first = bias_run(project, monkeypatch, "--judge-model", "claude-first", "--pairwise")["judgeBias"]
        pair = bias_run(project, monkeypatch, "--judge-models", "openai:gpt-4o,openai:claude-x")["judgeBias"]
    assert first["position"] == {
        "pairs": 8,
        "flips": 8,
        "share": 1.0,
        "line": "position bias: the same position won in both orders in 8 of 8 pairs (100%): "
        "the pairwise results lean on the order shown",
    }
    prefer = pair["selfPreference"]
    assert prefer["same_vendor"] == ["openai:gpt-4o"] and prefer["other_vendor"] == ["openai:claude-x"]
    assert prefer["vendor"] == "openai" and prefer["n"] == 8 and prefer["mean_diff"] == pytest.approx(1.0)
    assert "self-preference" in pair["lines"][-1]


# ---------------------------------------------------------------- section ablation

ARTIFACT = """---
name: capitals
---
# Capitals helper

Answer questions about capitals.

## Format
Answer with one word.

## Tone
Be polite and calm.

```
## Not a heading (inside a code fence)
```

## History
Mention history only if asked.
"""
MORE = {"Norway": "Oslo", "Cuba": "Havana", "Ghana": "Accra", "Nepal": "Kathmandu"}


def section_model(system: str, prompt: str) -> str:
    """Terse (and so passing) only with the Format section; even then chatty on a quarter of the
    cases, drawn from a hash of the whole artifact, so the other sections move scores both ways."""
    country = prompt.rstrip("?").split()[-1]
    capital = {**CAPITALS, **MORE}[country]
    draw = hashlib.sha256(f"{system}|{country}".encode()).digest()[0]
    terse = "one word" in system and draw >= 64
    return capital if terse else f"I believe the capital of {country} is {capital}."


def test_only_the_section_that_matters_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "p")
    samples = json.loads((project / "eval-samples.json").read_text())
    for country, capital in MORE.items():
        samples.append(
            samples[0]
            | {"sample_id": f"cap-{country.lower()}", "prompt": f"What is the capital of {country}?"}
        )
        samples[-1]["assertions"] = [
            {"type": "contains", "value": capital},
            {"type": "word_count_max", "value": 2},
        ]
    (project / "eval-samples.json").write_text(json.dumps(samples))
    (project / "skills" / "helper.md").write_text(ARTIFACT)
    with FakeProvider(section_model) as server:
        use_provider(monkeypatch, server.url)
        code, report = run_bench(
            project, *cli(project, "--no-judge", "--ablate", "helper"), monkeypatch=monkeypatch
        )
    assert code == 0 and report is not None
    assert report["meta"]["variants"] == ["helper", "helper-no-format", "helper-no-tone", "helper-no-history"]
    ablation = report["ablation"]
    assert (
        ablation["full"] == "helper" and ablation["cases"] == 12 and report["multipleComparisons"] == "holm"
    )
    found = {s["section"]: s for s in ablation["sections"]}
    assert list(found) == ["Format", "Tone", "History"]
    assert found["Format"]["finding"] == "helps" and found["Format"]["p_holm"] < 0.05
    assert found["Format"]["contribution"] > 1 and found["Format"]["ci_low"] > 0
    for name in ("Tone", "History"):
        assert found[name]["finding"] == "no detectable effect", found[name]
        assert "no detectable effect at this N (smallest detectable effect" in found[name]["line"]
    # the fake server counts words: the Format section is 5 words ("## Format" + "Answer with one word.")
    assert found["Format"]["inputTokens"] == pytest.approx(5, abs=1)
    page = (project / "reports" / f"{report['id']}.html").read_text()
    assert "Sections of" in page and "no detectable effect at this N" in page


def test_canaries_moved_by_a_swapped_judge_fail_the_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gold file as the suite's canaries: judged first every night; an unchanged judge (A/A) keeps
    them, a judge that now scores g4 a 2 (was 5) moves them, the certificate fails on it and
    --require-valid fails the night's gate."""
    project = make_project(tmp_path / "p", n=4, rubric=True)
    write_gold(project)
    night = ["ci", *cli(project, "--judge-gold", "gold.yaml", "--threshold", "1", "--suite", "canaries")]
    night += ["--output-dir", str(project / "nights"), "--quiet", "--min-judge-alpha", "0.5", "--no-cache"]

    def swapped(system: str, prompt: str) -> str:
        if "strict, fair grader" in system and answer_block(prompt) == "GOLD g4":
            return json.dumps({"score": 2, "reason": "a stricter judge"})
        return gold_judge(system, prompt)

    def newest() -> dict[str, object]:
        runs = [json.loads(p.read_text()) for p in (project / "nights").glob("*.json")]
        return max(runs, key=lambda r: r["meta"]["timestamp"])

    with FakeProvider(gold_judge) as server:
        use_provider(monkeypatch, server.url)
        monkeypatch.chdir(project)
        assert main(night) == 0
        assert main([*night, "--require-valid"]) == 0  # A/A: the same judge keeps every canary
        same = newest()
        assert same["regression"]["canaries"] == []  # type: ignore[index]
        checks = {c["check"]: c for c in same["validity"]["checks"]}  # type: ignore[index]
        assert checks["canaries"]["status"] == "PASS"
        server.answer, server.answered_as = swapped, {"claude-judge": "claude-judge-2026-12-01"}
        capsys.readouterr()
        assert main([*night, "--require-valid"]) == 1
    moved = newest()
    assert moved["regression"]["canaries"] == ["canary g4: judged 2, 5 on the previous run"]  # type: ignore[index]
    # the fingerprint names the judge's new model id, as its answers reported it
    assert moved["regression"]["worldChanges"] == [  # type: ignore[index]
        "judge model (as its answers reported it): claude-judge -> claude-judge-2026-12-01"
    ]
    checks = {c["check"]: c for c in moved["validity"]["checks"]}  # type: ignore[index]
    assert checks["canaries"]["status"] == "FAIL" and not moved["validity"]["certified"]  # type: ignore[index]
    # the night's Prefect state says why its gate failed
    assert "not certified: canaries: 1 of 10 gold item(s) were judged differently" in capsys.readouterr().err
