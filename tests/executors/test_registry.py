"""The registry is the one place that names executors; each executor class declares what the rest
of the code asks of it, so a new agent CLI is one module and one registry line."""

from __future__ import annotations

import pytest

from executors.agent import AgentExecutor, agent_cli, agent_cli_classes
from executors.base import HttpExecutor
from executors.egress import Provider
from executors.errors import InputError
from executors.registry import AGENT_CLIS, EXECUTORS

#: What every agent CLI must declare (no default on AgentExecutor).
AGENT_FIELDS = (
    "name",
    "binary",
    "provider",
    "skills_home",
    "workspace_dirs",
    "request_tokens",
    "default_model",
    "vendor",
)
HTTP_FIELDS = ("name", "env_base_url", "default_base_url", "env_keys", "default_model", "vendor")


@pytest.mark.parametrize("name", list(EXECUTORS))
def test_every_executor_declares_what_the_code_asks(name: str) -> None:
    cls = EXECUTORS[name]
    assert cls.name == name
    if issubclass(cls, AgentExecutor):
        missing = [f for f in AGENT_FIELDS if getattr(cls, f, None) is None]
        assert not missing, f"{name} lacks {missing}"
        assert isinstance(cls.provider, Provider) and cls.provider.credentials
        assert len(cls.skills_home) == 2 and all(cls.skills_home)
        assert cls.skills_home[0] in cls.workspace_dirs  # checks never grade the installed skill as work
        # trigger detection asks each CLI which of its tool calls load a skill
        assert "invoked_skills" in vars(cls), f"{name}: invoked_skills"
        assert all(isinstance(v, tuple) and len(v) == 2 for v in cls.features.values())
    elif issubclass(cls, HttpExecutor):
        missing = [f for f in HTTP_FIELDS if getattr(cls, f, None) is None]
        assert not missing, f"{name} lacks {missing}"


def test_agent_clis_come_from_the_registry() -> None:
    assert {"claude", "codex", "gemini-cli", "copilot", "opencode"} <= set(AGENT_CLIS)
    # the names the registry lists without importing a module are its classes' own word
    assert tuple(name for name, cls in EXECUTORS.items() if cls.agentic) == AGENT_CLIS
    assert all(issubclass(cls, AgentExecutor) for cls in agent_cli_classes())
    assert agent_cli("codex").binary == "codex"
    unknown = r"--runner: unknown executor 'gemini-clj' \(did you mean 'gemini-cli'\?\)"
    with pytest.raises(InputError, match=unknown):
        agent_cli("gemini-clj")
    with pytest.raises(
        InputError, match=r"--runner: 'openai' is not an agent CLI \(claude, codex, gemini-cli, copilot"
    ):
        agent_cli("openai")  # an executor, but not an agent CLI


def test_every_agent_cli_says_what_it_reads_as_configuration() -> None:
    from executors.agent_config import CONFIG_FILES

    assert set(CONFIG_FILES) == set(AGENT_CLIS)
    for cli, paths in CONFIG_FILES.items():
        cls = EXECUTORS[cli]
        assert issubclass(cls, AgentExecutor)
        assert cls.skills_home[0] in paths  # its own skills folder: installed by skillab alone


def test_a_sample_run_imports_no_agent_cli() -> None:
    """Naming executors, testing a name and validating samples import no agent CLI's module: ~30 ms
    of every sample command before its first call."""
    import subprocess
    import sys

    code = (
        "import sys, flows.cli.command, flows.cli.main, flows.modes.sample.cli\n"
        "from executors.registry import EXECUTORS\n"
        "assert 'claude' in EXECUTORS and EXECUTORS['openai'].name == 'openai'\n"
        "print(sorted(m for m in sys.modules if m in {'executors.agent', 'executors.egress', "
        "'graders.checks', 'graders.agent_task', 'graders.plugin_eval', 'h11'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
