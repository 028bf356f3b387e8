"""Which trigger variants a report compares: each pair differs in one thing only."""

from __future__ import annotations

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
