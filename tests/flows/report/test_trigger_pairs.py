"""Which trigger variants a report compares: each pair differs in one thing only."""

from __future__ import annotations

from pathlib import Path

from flows.modes.triggers.plan import TriggerVariant
from flows.modes.triggers.report import comparison_pairs


def variant(label: str, runner: str) -> TriggerVariant:
    return TriggerVariant(label=label, skills=(), runner=runner)


def test_one_agent_compares_every_variant_with_the_first() -> None:
    vs = [variant("v1", "claude"), variant("v2", "claude"), variant("v3", "claude")]
    assert comparison_pairs(vs) == [("v1", "v2"), ("v1", "v3")]


def test_one_skill_on_several_agents_compares_the_agents() -> None:
    vs = [variant("claude", "claude"), variant("codex", "codex"), variant("opencode", "opencode")]
    assert comparison_pairs(vs) == [("claude", "codex"), ("claude", "opencode")]


def test_skills_and_agents_never_change_both_in_one_pair() -> None:
    vs = [variant(f"{s}@{r}", r) for r in ("claude", "codex") for s in ("v1", "v2")]
    pairs = comparison_pairs(vs)
    assert pairs == [("v1@claude", "v2@claude"), ("v1@codex", "v2@codex"), ("v1@claude", "v1@codex")]
    for a, b in pairs:  # the skill or the agent, not both
        assert (a.split("@")[0] == b.split("@")[0]) != (a.split("@")[1] == b.split("@")[1])


def test_in_an_environment_rewrites_are_compared_with_the_first_and_fills_with_their_empty_window() -> None:
    from dataclasses import replace

    from flows.inputs.environment import Environment
    from flows.inputs.skill_config import Skill
    from flows.modes.triggers.report import neighbour_pairs

    env = Environment(Path("/snap"), "0" * 64, "given", ("a",), (), (), ())
    mine = (Skill("x", Path("/x")),)
    alone = TriggerVariant("environment", (), environment=env)
    current, c1, c2 = (TriggerVariant(n, mine, environment=env) for n in ("current", "c1", "c2"))
    filled = [replace(v, label=f"{v.label}@fill50%", fill=0.5, filled_from=v.label) for v in (alone, current)]
    vs = [alone, current, c1, c2, *filled]
    assert comparison_pairs(vs) == [
        ("environment", "current"),
        ("current", "c1"),
        ("current", "c2"),
        ("environment", "environment@fill50%"),
        ("current", "current@fill50%"),
    ]
    assert neighbour_pairs(vs) == [
        ("environment", "current"),
        ("environment", "c1"),
        ("environment", "c2"),
        ("environment@fill50%", "current@fill50%"),
    ]
