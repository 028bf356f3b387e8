"""--runner lists and --base-url for several agents: each name known once, each endpoint its own."""

from __future__ import annotations

import pytest

from executors.errors import InputError
from flows.inputs.skill_config import SkillBenchConfig, agent_list, endpoints
from flows.inputs.triggers import TriggerOptions


def test_a_runner_list_names_known_agents_once() -> None:
    assert agent_list("claude") == ["claude"]
    assert agent_list(" claude , opencode ") == ["claude", "opencode"]
    with pytest.raises(InputError, match=r"--runner: 'claude,claude' names an agent twice"):
        agent_list("claude,claude")
    with pytest.raises(InputError, match=r"--runner: name an agent CLI"):
        agent_list(" , ")
    with pytest.raises(InputError, match=r"unknown executor 'copilt' \(did you mean 'copilot'\?\)"):
        agent_list("claude,copilt")


def test_one_endpoint_for_all_or_one_per_agent() -> None:
    agents = ["claude", "codex"]
    assert endpoints(None, agents) == {"claude": None, "codex": None}
    assert endpoints("http://h:1", agents) == {"claude": "http://h:1", "codex": "http://h:1"}
    assert endpoints("codex=http://h:1/v1", agents) == {"claude": None, "codex": "http://h:1/v1"}
    both = endpoints("claude=http://h:1, codex=http://h:1/v1", agents)
    assert both == {"claude": "http://h:1", "codex": "http://h:1/v1"}
    with pytest.raises(InputError, match=r"--base-url: 'gemini-cli=http://x' is not runner=URL"):
        endpoints("claude=http://h:1,gemini-cli=http://x", agents)
    with pytest.raises(InputError, match=r"--base-url: 'codex=' is not runner=URL"):
        endpoints("claude=http://h:1,codex=", agents)


def test_the_runner_model_defaults_to_each_runners_own() -> None:
    assert SkillBenchConfig().runner_model == "sonnet"
    assert SkillBenchConfig(runner="codex").runner_model == "gpt-5.5"
    assert SkillBenchConfig(runner="opencode", runner_model="qwen3").runner_model == "qwen3"
    assert SkillBenchConfig(runner="claude,codex").runner_model == ""  # each agent's own, later
    assert TriggerOptions(runner="copilot").runner_model == "claude-sonnet-4-5"
