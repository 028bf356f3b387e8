"""Suites written elsewhere run as their authors meant, with the real claude CLI against a scripted
model: a plugin-eval case's add_dirs fixture found (and read-only), a skill-creator trigger set read,
the official `--json` shape a suite's own gate reads, --case/--tag, --dry-run, caps, and a field
skillab cannot honour refused unless --skip-unsupported (then named in the report)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.agents import need, write
from tests.fakes.provider import FakeProvider, SkillScript

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = (
    "---\nname: proto\ndescription: Reads C protocol fixtures. Use for proto files.\n---\nQuote the magic.\n"
)
FIXTURE_CASE = """schema_version: "1.0"
name: read-fixture
tags: [fixture]
context:
  add_dirs: [fixture]
execution:
  prompt: Read proto.c in the fixture directory and tell me its magic number.
  max_turns: 4
  allowed_tools: [Read, Bash]
graders:
  - {type: regex, name: magic, pattern: "MAGIC-4242"}
  - {type: regex, name: fixture-read-only, target: trace, pattern: "READONLY-OK"}
"""
PLAIN_CASE = """schema_version: "1.0"
name: plain
tags: [other]
execution:
  prompt: What is two plus two?
  max_turns: 2
graders:
  - {type: regex, name: four, pattern: "4"}
"""


def done_steps(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(b.get("content"))
        for m in body.get("messages") or []
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def agent(body: dict[str, Any], headers: Any) -> list[dict[str, Any]]:
    """Finds the fixture where the CLI said (its additional working directory), reads it, tries to
    write into it; then quotes what it read."""
    results = done_steps(body)
    folder = re.search(r"(/[^\s\"\\]*skillab-add-dirs/fixture)", json.dumps(body))
    if folder and not results:
        command = (
            f"cat {folder.group(1)}/proto.c; touch {folder.group(1)}/new.txt 2>/dev/null || echo READONLY-OK"
        )
        return [{"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "read"}}]
    if results:
        found = re.search(r"MAGIC-\d+", results[-1])
        return [{"type": "text", "text": f"The magic is {found.group(0) if found else 'unknown'}."}]
    return [{"type": "text", "text": "It is 4."}]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    need("claude")
    root = tmp_path / "plug"
    write(root, {".claude-plugin/plugin.json": '{"name": "plug"}', "skills/proto/SKILL.md": SKILL})
    write(
        root / "evals" / "read-fixture",
        {"case.yaml": FIXTURE_CASE, "fixture/proto.c": "int magic = 0; /* MAGIC-4242 */\n"},
    )
    write(root / "evals" / "plain", {"case.yaml": PLAIN_CASE})
    return root


def run(suite: Path, server: FakeProvider, *extra: str) -> int:
    args = ["skill", "run", "--suite", str(suite), "--base-url", server.url, "--runs", "1", "--timeout", "60"]
    args += ["--results-dir", str(suite.parent / "results"), "--judge-executor", "anthropic", *extra]
    return main(args)


def test_add_dirs_fixture_is_found_read_only_and_the_official_json_feeds_a_gate(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(suite.parent)
    with FakeProvider(claude_agent=agent).anthropic_env(monkeypatch) as server:
        code = run(suite, server, "--json", "official.json", "--case", "read-*")
    out = capsys.readouterr()
    report_md = next((suite.parent / "results").glob("*/report.md")).read_text()
    assert "plain" not in report_md.split("## Per-Task Breakdown")[1].split("##")[0]  # --case kept one
    official = json.loads((suite.parent / "official.json").read_text())
    (case,) = official["cases"]
    assert case["name"] == "read-fixture" and set(case["arms"]) == {"with", "without"}
    for arm in ("with", "without"):
        graders = {g["name"]: g for g in case["arms"][arm][0]["graders"]}
        assert graders["magic"]["passed"] and graders["fixture-read-only"]["passed"], (arm, graders, out.err)
    # a suite's own post-run gate, written for the official runner, runs on skillab's file
    evidence = [g["evidence"] for run_ in case["arms"]["without"] for g in run_["graders"]]
    assert all(isinstance(e, str) for e in evidence) and official["aggregates"]["casesTotal"] == 1
    assert code in (0, 1), out.err  # two cases at most: the comparison may be insufficient


def test_tag_filter_dry_run_and_caps(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(suite.parent)
    with FakeProvider(claude_agent=agent).anthropic_env(monkeypatch) as server:
        assert run(suite, server, "--dry-run", "--budget-usd", "5") == 0
        plan = capsys.readouterr().out
        assert not server.calls
        assert (
            "read-fixture" in plan and "plain" in plan and "= 4 sessions" in plan and "--budget-usd 5" in plan
        )
        assert run(suite, server, "--dry-run", "--tag", "other") == 0
        assert "read-fixture" not in capsys.readouterr().out
        assert run(suite, server, "--tag", "nothing-has-this") == 2
        assert "no case matches" in capsys.readouterr().err
        run(suite, server, "--max-calls", "1")
    report = json.loads(next((suite.parent / "results").glob("*/report.json")).read_text())
    kept = report["meta"]["notRun"]  # the cap's sessions are not run, not failed
    assert report["meta"]["calls"] == 1 and len(kept) == 3 and {u["kind"] for u in kept} == {"session"}
    assert not any(
        "not run" in (r.get("error") or "") for case in report["results"] for r in case["variants"].values()
    )


def test_an_unsupported_field_is_refused_unless_skipped_then_reported(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (suite / "evals" / "plain" / "case.yaml").write_text(PLAIN_CASE + "plugins: [other-plugin]\n")
    monkeypatch.chdir(suite.parent)
    with FakeProvider(claude_agent=agent).anthropic_env(monkeypatch) as server:
        assert run(suite, server) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert (
            len(err) == 1 and "plugins: not supported by skillab" in err[0] and "--skip-unsupported" in err[0]
        )
        assert not server.calls
        run(suite, server, "--skip-unsupported")
    report = json.loads(next((suite.parent / "results").glob("*/report.json")).read_text())
    assert any("plain: plugins: not supported by skillab" in w for w in report["meta"]["warnings"])
    assert "## Warnings" in next((suite.parent / "results").glob("*/report.md")).read_text()


def test_a_skill_creator_trigger_set_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    need("claude")
    skill = tmp_path / "skills" / "greeting-files"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greeting-files\ndescription: Writes greeting files.\n---\nWrite.\n"
    )
    evals = [
        {"query": "Please write me a greeting file", "should_trigger": True},
        {"query": "Put a friendly hello into a text file", "should_trigger": True},
        {"query": "What is 17 times 3?", "should_trigger": False},
    ]
    (tmp_path / "trigger-evals.json").write_text(json.dumps(evals))
    monkeypatch.chdir(tmp_path)
    chances = {str(e["query"]): 1.0 if e["should_trigger"] else 0.0 for e in evals}
    with FakeProvider() as server:
        SkillScript("greeting-files", p_by_query=chances).install(server)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["skill", "triggers", "run", "--skill", str(skill), "--queries", "trigger-evals.json"]
        code = main(
            [*args, "--base-url", server.url, "--results-dir", str(tmp_path / "r"), "--timeout", "60"]
        )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "greeting-files: recall 100%" in out and "false-fire 0%" in out
    report = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    expects = {case["sample_id"]: case["expect"] for case in report["results"]}
    assert expects == {"1": "greeting-files", "2": "greeting-files", "3": "none"}


def test_a_trigger_set_with_comments_on_a_skill_whose_description_yaml_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the shape of Newsleopard/nlm-open-skills' (written here): an unquoted description holding
    ": " (strict YAML refuses it, Claude Code quotes it and loads the skill) and a skill-creator set
    whose entries carry a `_comment`: the run measures, one notice names the ignored key, and the
    model was shown the whole description."""
    need("claude")
    skill = tmp_path / "skills" / "minutes"
    skill.mkdir(parents=True)
    description = "Drafts meeting minutes. Use when: the user pastes a transcript"
    (skill / "SKILL.md").write_text(f"---\nname: minutes\ndescription: {description}\n---\nDraft.\n")
    evals = [
        {"query": "Turn this transcript into minutes", "should_trigger": True, "_comment": "core"},
        {"query": "Write minutes for today's standup", "should_trigger": True},
        {"query": "What is 17 times 3?", "should_trigger": False, "_comment": "negative"},
    ]
    (tmp_path / "trigger-evals.json").write_text(json.dumps(evals))
    monkeypatch.chdir(tmp_path)
    chances = {str(e["query"]): 1.0 if e["should_trigger"] else 0.0 for e in evals}
    with FakeProvider() as server:
        script = SkillScript("minutes", p_by_query=chances).install(server)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["skill", "triggers", "run", "--skill", str(skill), "--queries", "trigger-evals.json"]
        code = main(
            [*args, "--base-url", server.url, "--results-dir", str(tmp_path / "r"), "--timeout", "60"]
        )
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert "minutes: recall 100%" in out and "false-fire 0%" in out
    notices = [line for line in err.splitlines() if "ignored key" in line]
    assert len(notices) == 1 and "_comment" in notices[0]
    assert {listing["minutes"] for listing in script.listings.values()} == {description}
