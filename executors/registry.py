"""The one explicit registry of executors, and the per-process instances the tasks share."""

from __future__ import annotations

import difflib
import threading
from typing import cast

from executors.agent import AgentExecutor
from executors.anthropic import AnthropicExecutor
from executors.base import Executor, ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.codex_cli import CodexExecutor
from executors.copilot_cli import CopilotCliExecutor
from executors.errors import InputError
from executors.gemini import GeminiExecutor
from executors.gemini_cli import GeminiCliExecutor
from executors.local import LocalExecutor
from executors.openai import OpenAIExecutor
from executors.opencode import OpenCodeExecutor
from executors.schema import AgentRequest, AgentSession

EXECUTORS: dict[str, type[Executor]] = {
    "openai": OpenAIExecutor,
    "anthropic": AnthropicExecutor,
    "gemini": GeminiExecutor,
    "local": LocalExecutor,
    # Agent CLIs: agentic mode (`skill`), and sample mode through the CLI.
    "claude": ClaudeCodeExecutor,
    "codex": CodexExecutor,
    "gemini-cli": GeminiCliExecutor,
    "copilot": CopilotCliExecutor,
    "opencode": OpenCodeExecutor,
}

#: The agent CLIs (``--runner``), in the registry's order.
AGENT_CLIS = tuple(name for name, cls in EXECUTORS.items() if cls.agentic)
AGENT_CLI_CLASSES = tuple(cls for cls in EXECUTORS.values() if issubclass(cls, AgentExecutor))

_instances: dict[tuple[str, ExecutorSettings], Executor] = {}
_lock = threading.Lock()


def get_executor(name: str, settings: ExecutorSettings | None = None) -> Executor:
    """One live executor per (name, settings) per process: connection pools and loaded models are shared."""
    settings = settings or ExecutorSettings()
    with _lock:
        key = (name, settings)
        if key not in _instances:
            _instances[key] = EXECUTORS[name](settings)
        return _instances[key]


async def agent_session(request: AgentRequest, base_url: str | None) -> AgentSession:
    """One agent session of ``request`` with its runner's CLI (and its simulated user's model)."""
    executor = get_executor(request.cli, ExecutorSettings(base_url=base_url, timeout_s=request.timeout_s))
    if not isinstance(executor, AgentExecutor):
        raise TypeError(f"{request.cli!r} is not an agent CLI executor")
    user = request.user
    voice = get_executor(user.executor) if user is not None and user.model is not None else None
    return await executor.session(request, voice)


def executor_class(name: str, flag: str, agentic: bool | None = None) -> type[Executor]:
    """The executor class a flag names, or an InputError naming the flag: an unknown name (with the
    closest one), or the wrong kind (``agentic``: an agent CLI or a model API)."""
    if name not in EXECUTORS:
        # an agent CLI flag offers the agent CLIs only
        names = list(AGENT_CLIS) if agentic else list(EXECUTORS)
        match = difflib.get_close_matches(name.lower(), names, n=1)
        hint = f" (did you mean {match[0]!r}?)" if match else ""
        raise InputError(f"{flag}: unknown executor {name!r}{hint}; choose from {', '.join(names)}")
    if agentic is not None and EXECUTORS[name].agentic != agentic:
        kinds = AGENT_CLIS if agentic else tuple(n for n, cls in EXECUTORS.items() if not cls.agentic)
        kind = "an agent CLI" if agentic else "a model API"
        raise InputError(f"{flag}: {name!r} is not {kind} ({', '.join(kinds)})")
    return EXECUTORS[name]


def agent_cli(name: str) -> type[AgentExecutor]:
    """The executor class of the agent CLI ``--runner`` names (an InputError otherwise)."""
    return cast(type[AgentExecutor], executor_class(name, "--runner", agentic=True))


def usable_executor(
    name: str, flag: str, settings: ExecutorSettings | None = None, *, agentic: bool | None = None
) -> Executor:
    """The executor a flag names, ready to call, or an InputError naming the flag: an unknown name
    (with the closest one), the wrong kind, or what it lacks (a key, a binary)."""
    executor_class(name, flag, agentic)
    executor = get_executor(name, settings)
    problem = executor.problem()
    if problem:
        raise InputError(f"{flag}: {problem}")
    return executor


async def close_all() -> None:
    with _lock:
        instances = list(_instances.values())
    for executor in instances:
        await executor.aclose()
