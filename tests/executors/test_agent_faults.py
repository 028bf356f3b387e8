"""Agent sessions that hang, crash or flood output are killed (the whole process group) and recorded."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from executors.claude_code import ClaudeCodeExecutor
from executors.schema import AgentRequest
from tests.agents import agent_request


def fake_cli(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> ClaudeCodeExecutor:
    script = tmp_path / "fake-claude"
    script.write_text("#!/usr/bin/env bash\n" + body)
    script.chmod(0o755)
    monkeypatch.setenv("SKILLAB_CLAUDE_BIN", str(script))
    return ClaudeCodeExecutor()


def request(tmp_path: Path, timeout: float = 5) -> AgentRequest:
    return agent_request(
        tmp_path, "claude", "sonnet", "p", timeout_s=timeout, raw_stream=str(tmp_path / "out" / "raw.jsonl")
    )


def test_hang_kills_the_whole_process_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"skillab-hang-{uuid.uuid4().hex}"
    ex = fake_cli(tmp_path, f"bash -c 'exec -a {marker} sleep 300' &\nsleep 300\n", monkeypatch)
    session = asyncio.run(ex.session(request(tmp_path, timeout=1)))
    assert session.status == "timeout" and not session.ok and "killed after 1s" in (session.error or "")
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], f"children survived: {left}"


def test_crash_without_output_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ex = fake_cli(tmp_path, "echo 'fatal: something broke' >&2\nexit 3\n", monkeypatch)
    session = asyncio.run(ex.session(request(tmp_path)))
    assert (
        session.status == "crashed" and session.exit_code == 3 and "something broke" in (session.error or "")
    )


def test_flood_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ex = fake_cli(tmp_path, 'yes \'{"type": "assistant", "message": {"content": []}}\'\n', monkeypatch)
    ex.stream_limit = 2 * 1024 * 1024
    session = asyncio.run(ex.session(request(tmp_path, timeout=30)))
    assert session.status == "flood" and not session.ok
    assert os.path.getsize(tmp_path / "out" / "raw.jsonl") < 64 * 1024 * 1024
