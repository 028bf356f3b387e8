"""What the tests that drive a real agent CLI share: the CLI installed (a missing one fails the test
with how to install it), a session request in a test's folder, and the folders (suites, homes) it
reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from executors.agent import find_binary
from executors.schema import AgentRequest


def need(*binaries: str) -> None:
    """Fail (not skip: CI installs them) when an agent CLI is missing."""
    for binary in binaries:
        if find_binary(binary) is None:
            pytest.fail(f"the {binary} CLI is missing: scripts/install-agent-clis.sh installs it")


def agent_request(
    root: Path, cli: str = "claude", model: str = "sonnet", prompt: str = "Look around.", **fields: Any
) -> AgentRequest:
    """One session's request with its sandbox, HOME and stream below ``root``."""
    given = {"timeout_s": 120.0, "raw_stream": str(root / "out" / "raw_stream.jsonl")} | fields
    return AgentRequest(
        cli=cli, model=model, prompt=prompt, sandbox=str(root / "sb"), home=str(root / "home"), **given
    )


def write(root: Path, files: dict[str, str]) -> None:
    """Files below ``root``, by relative path, their folders made."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
