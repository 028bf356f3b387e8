"""A trigger suite's same-night control, with the real claude CLI against a scripted model that fires
the skill when its listed description says "greeting": a night whose description changed runs last
good night's skill beside it and tells the skill's regression from the world's change."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from tests.fakes.provider import FakeProvider, SkillScript
from tests.flows.helpers import run_tags
from tests.flows.modes.triggers.test_trigger_bench import NAME, SKILL, project, suite_file

pytestmark = pytest.mark.usefixtures("prefect_harness")

GOOD = "Writes greeting files. Use when asked for a greeting file."
#: Queries that all should fire the skill: a query's score is the share of its sessions that did.
ASKS = [
    "Please write me a greeting file",
    "Could you put a friendly hello into a text file?",
    "Make a greeting.txt for my sister",
    "I need a file with a welcome message",
    "Write a birthday greeting to a file",
    "Save a short hello note as a file",
]


def control_suite(tmp_path: Path, server: FakeProvider) -> Path:
    root = project(tmp_path, {"v1": GOOD})
    rows = [{"id": f"q{i}", "query": q, "expect": NAME} for i, q in enumerate(ASKS, 1)]
    (root / "queries.yaml").write_text(yaml.safe_dump({"queries": rows}))
    suite_file(root, server, {"same-night-control": True})
    return root


def night(root: Path) -> Any:
    from flows.modes.triggers.nightly import nightly_triggers

    flow = nightly_triggers(str(root / "triggers.yaml"), "greetings", return_state=True)
    return asyncio.run(cast(Coroutine[Any, Any, Any], flow))


def describe(root: Path, description: str) -> None:
    (root / "skills" / "v1" / NAME / "SKILL.md").write_text(SKILL.format(description=description))


def newest(root: Path) -> dict[str, Any]:
    nights = [json.loads(p.read_text()) for p in (root / "skill-bench" / "triggers").glob("*.json")]
    return max(nights, key=lambda r: r["meta"]["timestamp"])


def test_a_trigger_night_with_a_control_tells_the_skills_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unchanged night runs no control; then the description loses "greeting": tonight's skill
    never fires where last good night's, run beside it, still does: the skill regressed."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeProvider() as server:
        SkillScript(NAME, p=0.0, boost=("greeting", 1.0)).install(server)
        root = control_suite(tmp_path, server)
        assert night(root).is_completed()
        same = night(root)
        assert same.is_completed() and newest(root)["meta"]["variants"] == ["default"]  # no control
        describe(root, "Writes files.")
        worse = night(root)
    assert worse.is_failed() and "outcome:regressed" in run_tags(worse)
    report = newest(root)
    assert report["meta"]["variants"] == ["default", "default@good"]
    control = report["regression"]["controls"]["default"]
    assert control["outcome"] == "the skill regressed"
    assert control["candidate"]["verdict"]["label"] == "WORSE" and control["candidate"]["cases"] == len(ASKS)
    assert control["drift"]["verdict"]["label"] not in ("WORSE", "BETTER")
    assert report["regression"]["regressed"] == ["default"]
    assert "the skill regressed (same-night control)" in str(worse.message)
    kept = list((root / "skill-bench" / "triggers" / ".known-good").iterdir())
    assert (
        len(kept) == 1 and GOOD in (kept[0] / NAME / "SKILL.md").read_text()
    )  # the regressed night kept nothing


def test_a_trigger_night_with_a_control_tells_the_worlds_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The description reworded (it still says "greeting"), and the model moved under the alias and
    fires nothing: tonight's skill equals its control, the control dropped against its own night:
    the world changed, naming the model; no gate is missed and nothing is called a regression."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeProvider() as server:
        SkillScript(NAME, p=0.0, boost=("greeting", 1.0)).install(server)
        root = control_suite(tmp_path, server)
        assert night(root).is_completed()
        asked = newest(root)["meta"]["fingerprint"]["models"]
        describe(root, "Writes greeting files, for any greeting or hello someone wants kept.")
        server.answered_as = dict.fromkeys(asked, "claude-sonnet-9-9")
        SkillScript(NAME, p=0.0).install(server)
        moved = night(root)
    assert moved.is_completed() and "outcome:world-changed" in run_tags(moved)
    report = newest(root)
    control = report["regression"]["controls"]["default"]
    assert control["outcome"] == "the world changed" and report["regression"]["regressed"] == []
    assert (
        control["candidate"]["verdict"]["label"] != "WORSE"
        and control["drift"]["verdict"]["label"] == "WORSE"
    )
    assert "claude-sonnet-9-9" in control["rule"]
    assert "the world changed (same-night control), no regression of the artifact" in str(moved.message)
