"""The one explicit registry of executors, and the per-process instances the tasks share."""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Iterator, Mapping
from typing import cast

from executors.base import Executor, ExecutorSettings
from executors.errors import InputError

#: Each executor's module and class, imported when first named: a sample run against a model API
#: imports none of the agent CLIs' (their sandbox, forwarder and conversation: ~30 ms of every
#: command before its first call).
PLACES: dict[str, tuple[str, str]] = {
    "openai": ("executors.openai", "OpenAIExecutor"),
    "anthropic": ("executors.anthropic", "AnthropicExecutor"),
    "gemini": ("executors.gemini", "GeminiExecutor"),
    "local": ("executors.local", "LocalExecutor"),
    # Agent CLIs: agentic mode (`skill`), and sample mode through the CLI.
    "claude": ("executors.claude_code", "ClaudeCodeExecutor"),
    "codex": ("executors.codex_cli", "CodexExecutor"),
    "gemini-cli": ("executors.gemini_cli", "GeminiCliExecutor"),
    "copilot": ("executors.copilot_cli", "CopilotCliExecutor"),
    "opencode": ("executors.opencode", "OpenCodeExecutor"),
}

#: The agent CLIs (``--runner``), in the registry's order (a test holds it to the classes' ``agentic``);
#: their classes: ``executors.agent.agent_cli``.
AGENT_CLIS = ("claude", "codex", "gemini-cli", "copilot", "opencode")


class Registry(Mapping[str, type[Executor]]):
    """Name -> executor class; a class's module is imported when the name is looked up, never by
    listing or testing names."""

    def __getitem__(self, name: str) -> type[Executor]:
        module, cls = PLACES[name]
        return cast(type[Executor], getattr(importlib.import_module(module), cls))

    def __contains__(self, name: object) -> bool:
        return name in PLACES

    def __iter__(self) -> Iterator[str]:
        return iter(PLACES)

    def __len__(self) -> int:
        return len(PLACES)


EXECUTORS: Mapping[str, type[Executor]] = Registry()


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
        kinds = AGENT_CLIS if agentic else tuple(n for n in EXECUTORS if n not in AGENT_CLIS)
        kind = "an agent CLI" if agentic else "a model API"
        raise InputError(f"{flag}: {name!r} is not {kind} ({', '.join(kinds)})")
    return EXECUTORS[name]


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
