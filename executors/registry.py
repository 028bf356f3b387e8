"""The one explicit registry of executors, and the per-process instances the tasks share."""

from __future__ import annotations

import threading

from executors.anthropic import AnthropicExecutor
from executors.base import Executor, ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.codex_cli import CodexExecutor
from executors.gemini import GeminiExecutor
from executors.gemini_cli import GeminiCliExecutor
from executors.local import LocalExecutor
from executors.openai import OpenAIExecutor

EXECUTORS: dict[str, type[Executor]] = {
    "openai": OpenAIExecutor,
    "anthropic": AnthropicExecutor,
    "gemini": GeminiExecutor,
    "local": LocalExecutor,
    # Agent CLIs: agentic mode (`skill`), and sample mode through the CLI.
    "claude": ClaudeCodeExecutor,
    "codex": CodexExecutor,
    "gemini-cli": GeminiCliExecutor,
}

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


async def close_all() -> None:
    with _lock:
        instances = list(_instances.values())
    for executor in instances:
        await executor.aclose()
