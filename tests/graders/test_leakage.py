"""The leakage lint: a case that repeats its artifact's words is named before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.cli.main import main
from flows.inputs.options import BenchOptions
from flows.inputs.skill_config import Skill, task_leaks
from flows.modes.sample.prepare import prepare
from graders.agent_task import AgentTask
from graders.leakage import ARTIFACT_WORDS, DESCRIPTION_WORDS, case_leaks, shared_run
from tests.flows.helpers import make_project

SKILL = (
    "Answer every question about release notes with a table of changes, grouped by component, "
    "newest first, and never invent a version number that is not in the changelog."
)


def test_the_longest_verbatim_run_is_found_whatever_the_case_and_punctuation() -> None:
    prompt = "Please: ANSWER every question about release notes with a table of changes, grouped by team."
    run = shared_run(prompt, SKILL, 6)
    assert run == [
        "answer",
        "every",
        "question",
        "about",
        "release",
        "notes",
        "with",
        "a",
        "table",
        "of",
        "changes",
        "grouped",
        "by",
    ]
    assert shared_run(prompt, SKILL, len(run) + 1) is None  # one word short of the threshold
    assert shared_run("What changed in 2.3?", SKILL, 6) is None


def test_a_run_is_counted_once_and_the_longest_of_several_wins() -> None:
    text = "never invent a version number here; answer every question about release notes with a table"
    run = shared_run(text, SKILL, 5)
    assert run is not None and " ".join(run) == "answer every question about release notes with a table"


def test_each_leaking_field_is_named_with_the_source_and_the_words() -> None:
    cases = [("query q1", "newest first and never invent a version number"), ("query q2", "Summarise 2.3")]
    lines = case_leaks(cases, [("notes's description", SKILL)], DESCRIPTION_WORDS)
    assert lines == [
        "leakage: query q1 repeats 8 words of notes's description: "
        '"newest first and never invent a version number"'
    ]


def test_a_sample_prompt_that_holds_its_artifact_is_a_notice_before_any_call(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", n=3)
    (project / "skills" / "v2.md").write_text(SKILL)
    samples = json.loads((project / "eval-samples.json").read_text())
    samples[1]["prompt"] = f"{SKILL} What is the capital of France?"
    samples[2]["assertions"][0] = {"type": "contains", "value": SKILL[:120]}
    (project / "eval-samples.json").write_text(json.dumps(samples))
    options = BenchOptions(
        variants=["v1", "v2"], executor="openai", model="m", base_url="http://127.0.0.1:9/v1"
    )
    notices = [n for n in prepare(options, project).notices if n.startswith("leakage:")]
    first, second = samples[1]["sample_id"], samples[2]["sample_id"]
    assert len(notices) == 2 and all("variant v2's artifact" in n for n in notices)
    assert notices[0].startswith(f"leakage: sample {first}: prompt repeats {len(SKILL.split())} words")
    assert notices[1].startswith(f"leakage: sample {second}: assertion 1 repeats")
    assert len(SKILL[:120].split()) >= ARTIFACT_WORDS


def test_a_trigger_query_that_repeats_the_description_is_named_before_any_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    description = "Writes greeting files. Use when the user asks for a friendly greeting file."
    folder = tmp_path / "skills" / "greeting-files"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: greeting-files\ndescription: {description}\n---\n# Greetings\n"
    )
    rows = [
        {
            "id": "recall",
            "query": "The user asks for a friendly greeting file, please",
            "expect": "greeting-files",
        },
        {"id": "fair", "query": "Could you put a hello into a text file?", "expect": "greeting-files"},
    ]
    (tmp_path / "queries.yaml").write_text(yaml.safe_dump({"queries": rows}))
    monkeypatch.chdir(tmp_path)
    skill = str(folder)
    assert main(["skill", "triggers", "run", "--skill", skill, "--queries", "queries.yaml", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert (
        "leakage: query recall repeats 8 words of greeting-files's description: "
        '"the user asks for a friendly greeting file"'
    ) in err
    assert "query fair" not in err


def test_an_agentic_task_that_repeats_skill_md_is_named_across_its_front_matter(tmp_path: Path) -> None:
    folder = tmp_path / "calc-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: calc-skill\ndescription: Writes small, correct Python modules.\n---\n"
        "# Calc\nAlways return the exact arithmetic result of the expression.\n"
    )
    skill = Skill("calc-skill", folder)
    prompt = "Writes small correct Python modules. Calc: always return the exact arithmetic result of it"
    task = dict(
        name="t",
        difficulty="easy",
        category="calc",
        type="positive",
        expected_outcome="",
        checks=(),
        rubric="",
    )
    leaked = AgentTask(task_id="t1", prompt=prompt, **task)
    fair = AgentTask(task_id="t2", prompt="Add 2 and 3 in a module", **task)
    assert task_leaks([leaked, fair], skill) == [
        'leakage: task t1: prompt repeats 13 words of SKILL.md: "writes small correct python modules calc '
        'always return the exact arithmetic result of"'
    ]
    cued = AgentTask(
        task_id="t3", prompt="Fix the module", input_files=("notes/Calc-Skill-hints.md",), **task
    )
    assert task_leaks([cued], skill) == [
        "leakage: task t3: the input file 'notes/Calc-Skill-hints.md' names the skill 'calc-skill'"
    ]


def test_holdout_queries_seen_by_an_earlier_description_are_named(tmp_path: Path) -> None:
    """Holdout reuse: the same suite's earlier run held out these queries while another description
    was under test; the same description again, or another suite, is no reuse."""
    from types import SimpleNamespace

    from flows.modes.triggers.plan import TriggerOptions, holdout_reuse
    from graders.queries import Query, split

    queries = [Query(id=f"q{i}", query=f"ask {i}", expect="s" if i % 2 else None) for i in range(10)]
    chosen = split(queries, 0.3, 7)
    options = TriggerOptions.model_construct(suite=None, queries="queries.yaml")
    now = (SimpleNamespace(sha256="new"),)

    def earlier(name: str, hashes: dict[str, str], queries_file: str = "queries.yaml") -> None:
        report = {
            "id": name,
            "mode": "trigger",
            "meta": {"skillHashes": hashes},
            "triggers": {"queriesFile": queries_file, "split": chosen.record()},
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(report))

    (tmp_path / "junk.json").write_text("{not json")
    earlier("run-same", {"v1": "new"})
    assert holdout_reuse(tmp_path, options, "queries.yaml", chosen, now) == []  # type: ignore[arg-type]
    earlier("run-other-suite", {"v1": "old"}, "other.yaml")
    assert holdout_reuse(tmp_path, options, "queries.yaml", chosen, now) == []  # type: ignore[arg-type]
    earlier("run-old", {"v1": "old"})
    (line,) = holdout_reuse(tmp_path, options, "queries.yaml", chosen, now)  # type: ignore[arg-type]
    held = ", ".join(sorted(q.id for q in chosen.holdout))
    assert line.startswith(
        f"leakage: holdout reuse: 3 of 3 holdout queries ({held}) were held out in run run-old"
    )
