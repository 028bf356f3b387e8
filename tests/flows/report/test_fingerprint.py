"""Fingerprints: what ran, and what changed between two runs, one line per part."""

from __future__ import annotations

from flows.report.fingerprint import changes, digest
from flows.report.schema import Fingerprint

NIGHT = Fingerprint(
    skillab="0.9.0",
    executor="claude-code",
    agent_cli="claude-code 2.1.293",
    models=["claude-sonnet-4-5"],
    judge_models=["claude-haiku-4-5"],
    tools={"with-skill": digest(["Bash", "Read", "Skill"]), "baseline": digest(["Bash", "Read"])},
    listing={"with-skill": digest(["calc-skill"])},
    sandbox="bubblewrap 0.8.0 in pool night-fleet",
    image="skillab-session:0123456789abcdef on 1a2b3c4d5e6f",
)


def test_an_unchanged_world_has_no_lines_and_a_missing_fingerprint_none_either() -> None:
    assert changes(NIGHT, NIGHT.model_copy()) == []
    assert changes(None, NIGHT) == [] and changes(NIGHT, None) == []


def test_each_changed_part_is_named_with_both_values() -> None:
    moved = NIGHT.model_copy(
        update={
            "agent_cli": "claude-code 2.1.295",
            "judge_models": ["claude-haiku-5-5"],
            "tools": {**NIGHT.tools, "with-skill": digest(["Bash", "Read"])},  # a grant dropped
            "image": "skillab-session:0123456789abcdef on 5e6f7a8b9c0d",  # the fleet's image rebuilt
        }
    )
    assert changes(NIGHT, moved) == [
        "agent CLI: claude-code 2.1.293 -> claude-code 2.1.295",
        "judge model (as its answers reported it): claude-haiku-4-5 -> claude-haiku-5-5",
        "fleet image: skillab-session:0123456789abcdef on 1a2b3c4d5e6f -> "
        "skillab-session:0123456789abcdef on 5e6f7a8b9c0d",
        f"tools offered (with-skill): {digest(['Bash', 'Read', 'Skill'])} -> {digest(['Bash', 'Read'])}",
    ]


def test_digests_do_not_depend_on_order() -> None:
    assert digest(["b", "a"]) == digest(["a", "b"]) != digest(["a"])
