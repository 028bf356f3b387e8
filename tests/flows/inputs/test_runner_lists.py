"""--runner lists and --base-url for several agents: each name known once, each endpoint its own."""

from __future__ import annotations

import pytest

from executors.errors import InputError
from flows.inputs.skill_config import SkillBenchConfig, agent_list, agent_models, endpoints
from flows.modes.triggers.plan import TriggerOptions


def test_a_runner_list_names_known_agents_once() -> None:
    assert agent_list("claude") == ["claude"]
    assert agent_list(" claude , opencode ") == ["claude", "opencode"]
    with pytest.raises(InputError, match=r"--runner: claude is named twice"):
        agent_list("claude,codex,claude")
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
    bad = {
        "claude=http://h:1,gemini-cli=http://x": "'gemini-cli=http://x' is not runner=value for one of claude, codex",
        "claude=http://h:1,codex=": "'codex=' is not runner=value",
        # a pair anywhere makes every item a pair: a plain URL beside one is not silently the URL of all
        "http://h:1,codex=http://h:1/v1": "'http://h:1' is not runner=value",
        "gemini-cli=http://g,claude=http://c": "'gemini-cli=http://g' is not runner=value",
        "claude=http://a,claude=http://b": "claude is given twice",
        "claude=not-a-url": "'not-a-url' is not an http\\(s\\) URL with a host",
        "ftp://x": "'ftp://x' is not an http\\(s\\) URL with a host",
    }
    for value, message in bad.items():
        with pytest.raises(InputError, match=f"--base-url: {message}"):
            endpoints(value, agents)
    assert endpoints(" claude = http://c , codex=http://x/v1", agents) == {
        "claude": "http://c",
        "codex": "http://x/v1",
    }


def test_the_runner_model_defaults_to_each_runners_own() -> None:
    assert agent_models("", ["claude", "codex"]) == {"claude": "sonnet", "codex": "gpt-5.5"}
    assert agent_models("codex=gpt-5", ["claude", "codex"]) == {"claude": "sonnet", "codex": "gpt-5"}
    with pytest.raises(InputError, match=r"--runner-model: ' ' is not a model name"):
        agent_models(" ", ["claude"])
    assert SkillBenchConfig().runner_model == "sonnet"
    assert SkillBenchConfig(runner="codex").runner_model == "gpt-5.5"
    assert SkillBenchConfig(runner="opencode", runner_model="qwen3").runner_model == "qwen3"
    assert SkillBenchConfig(runner="claude,codex").runner_model == ""  # each agent's own, later
    assert TriggerOptions(runner="copilot").runner_model == "claude-sonnet-4-5"
