"""The OS sandbox with the real bubblewrap, and a real Claude Code session that tries to get out of it."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.sandbox import (
    UNAVAILABLE,
    SandboxUnavailableError,
    executable_paths,
    hidden_dirs,
    host_env,
    probe,
    require,
    toolchain_paths,
    wrap,
)
from tests.agents import agent_request, need
from tests.fakes.escape import CANARIES, bash_agent, escape_places, escape_script
from tests.fakes.provider import FakeProvider

needs_bwrap = pytest.mark.skipif(
    probe() is not None,
    reason=f"bubblewrap cannot run here: {probe()} (install the Debian package bubblewrap)",
)


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    with escape_places(tmp_path, monkeypatch) as places:
        yield places


def test_unavailable_bubblewrap_is_a_clear_error_unless_none_is_allowed(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailableError) as caught:
        require("bubblewrap", binary="skillab-no-such-bwrap")
    message = str(caught.value)
    assert message.startswith(UNAVAILABLE) and "skillab-no-such-bwrap was not found" in message
    assert "\n" not in message
    assert "install the Debian package bubblewrap" in message and "--no-os-sandbox" in message
    assert require("none", binary="skillab-no-such-bwrap") == "none"
    assert wrap(["true"], isolation="none", workdir=tmp_path, binary="skillab-no-such-bwrap") == ["true"]
    # installed but refused by the kernel (no user namespaces): the probe really runs it
    refusing = tmp_path / "bwrap"
    refusing.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    refusing.chmod(0o755)
    with pytest.raises(SandboxUnavailableError, match="No permissions to create new namespace"):
        require("bubblewrap", binary=str(refusing))
    with pytest.raises(ValueError, match="isolation must be one of"):
        require("docker", binary="skillab-no-such-bwrap")  # type: ignore[arg-type]


def test_agent_session_without_bubblewrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake-claude"
    script.write_text('#!/bin/sh\necho \'{"type": "result", "subtype": "success", "is_error": false}\'\n')
    script.chmod(0o755)
    monkeypatch.setenv("SKILLAB_CLAUDE_BIN", str(script))
    monkeypatch.setenv("SKILLAB_BWRAP", "skillab-no-such-bwrap")
    req = agent_request(
        tmp_path, "claude", "m", "p", timeout_s=20, raw_stream=str(tmp_path / "out" / "raw.jsonl")
    )
    with pytest.raises(SandboxUnavailableError, match="bubblewrap is not available"):
        asyncio.run(ClaudeCodeExecutor().session(req))
    session = asyncio.run(ClaudeCodeExecutor().session(req.model_copy(update={"isolation": "none"})))
    assert session.ok and session.isolation == "none"


def test_wrap_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    monkeypatch.setattr("executors.sandbox._probe", lambda binary: None)
    home = tmp_path / "realhome"
    (home / ".pyenv" / "shims").mkdir(parents=True)
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / "clis" / "node_modules" / ".bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    sandbox, session_home = tmp_path / "sb", tmp_path / "sb-home"
    sandbox.mkdir()
    session_home.mkdir()
    search_path = f"{home}/.pyenv/shims:{home}/.cargo/bin:/usr/bin"
    argv = wrap(
        ["claude", "-p", "x"],
        isolation="bubblewrap",
        workdir=sandbox,
        writable=[session_home],
        readable=executable_paths(home / "clis" / "node_modules" / ".bin" / "claude"),
        search_path=search_path,
    )
    text = " ".join(argv)
    assert argv[-4:] == ["--", "claude", "-p", "x"] and argv[-6:-4] == ["--chdir", str(sandbox.resolve())]
    # only the system folders, never the host's root: other checkouts, /home, /srv are not there
    assert "--ro-bind / /" not in text and "--ro-bind /usr /usr" in text and "--ro-bind /etc /etc" in text
    assert "--ro-bind /dev/null /etc/shadow" in text or not Path("/etc/shadow").exists()
    assert "--dev /dev --proc /proc --size" in text and "--tmpfs /tmp" in text and "--cap-drop ALL" in text
    for flag in ("--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert f"--bind {sandbox.resolve()} {sandbox.resolve()}" in text
    assert f"--bind {session_home.resolve()} {session_home.resolve()}" in text
    # pyenv's shims need its whole root; ~/.cargo also holds a registry token, so only its bin
    assert f"--ro-bind {home.resolve()}/.pyenv {home.resolve()}/.pyenv" in text
    assert f"--ro-bind {home.resolve()}/.cargo/bin " in text and f"{home.resolve()}/.cargo " not in text
    assert f"--ro-bind {home.resolve()}/clis/node_modules " in text
    assert f"--ro-bind {home.resolve()} " not in text and "--ro-bind /usr/bin" not in text
    assert toolchain_paths(search_path, hidden_dirs())[0] == (home / ".pyenv").resolve()
    # an agent session: the forwarder's socket bound in, the command started under the relay
    socket_file = tmp_path / "model.sock"
    socket_file.touch()
    argv = wrap(["claude"], isolation="bubblewrap", workdir=sandbox, network="model", egress=socket_file)
    assert f"--ro-bind {socket_file} /run/skillab/model.sock" in " ".join(argv)
    assert argv[-3:] == ["18080", "/run/skillab/model.sock", "claude"]
    assert "--unshare-net" not in wrap(["x"], isolation="bubblewrap", workdir=sandbox, network="host")


@needs_bwrap
def test_a_sandboxed_shell_cannot_reach_out(tmp_path: Path, outside: dict[str, Path]) -> None:
    sandbox, session_home = tmp_path / "sb", tmp_path / "sb-home"
    sandbox.mkdir()
    session_home.mkdir()
    argv = wrap(
        ["/bin/sh", "-c", escape_script(outside)],
        isolation="bubblewrap",
        workdir=sandbox,
        writable=[session_home],
    )
    out = subprocess.run(
        argv, env=host_env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    ).stdout
    assert (sandbox / "made.txt").read_text() == "made\n"  # the sandbox itself is writable
    for key in CANARIES:
        assert not outside[key].exists(), f"{key} reached the host"
    assert "WROTE-etc_canary" not in out  # the host's / is read-only
    assert "secret-" not in out and out.count("No such file or directory") >= 2
    assert "UNMOUNTED" not in out and "REMOUNTED" not in out  # no capabilities to undo the mounts


def claude_escape(places: dict[str, Path]) -> Any:
    """A scripted model that runs the escape script through the Bash tool, then answers."""
    return bash_agent(escape_script(places))


@needs_bwrap
def test_claude_session_cannot_reach_out(tmp_path: Path, outside: dict[str, Path]) -> None:
    need("claude")
    with FakeProvider(agent=claude_escape(outside)) as server:
        claude = ClaudeCodeExecutor(ExecutorSettings(base_url=server.url))
        session = asyncio.run(claude.session(agent_request(tmp_path, "claude", "sonnet", "Try to get out.")))
        bodies = [json.dumps(c.body) for c in server.calls]
    assert session.ok, session.error
    assert session.isolation == "bubblewrap" and session.final_text == "done."
    (result,) = [e for e in session.events if e.kind == "tool_result"]
    assert "WROTE-tmp_canary" in result.text  # the private /tmp is writable, and it is private
    assert (tmp_path / "sb" / "made.txt").read_text() == "made\n"
    for key in CANARIES:
        assert not outside[key].exists(), f"{key} reached the host"
    assert "UNMOUNTED" not in result.text and "REMOUNTED" not in result.text
    raw = (tmp_path / "out" / "raw_stream.jsonl").read_text()
    for text in (raw, result.text, *bodies):
        assert "secret-" not in text  # neither the transcript nor the model ever saw the secrets
    assert result.text.count("No such file or directory") >= 2  # both secrets were out of sight


def test_executable_paths_of_npm_installs(tmp_path: Path) -> None:
    package = tmp_path / "prefix" / "lib" / "node_modules" / "@anthropic-ai" / "claude-code"
    package.mkdir(parents=True)
    (package / "cli.js").write_text("")
    (tmp_path / "prefix" / "bin").mkdir()
    (tmp_path / "prefix" / "bin" / "claude").symlink_to(package / "cli.js")
    paths = executable_paths(tmp_path / "prefix" / "bin" / "claude")
    assert (tmp_path / "prefix" / "lib" / "node_modules").resolve() in paths  # its dependencies
    assert (package / "cli.js").resolve() in paths and tmp_path / "prefix" not in paths


#: The model endpoint a session is configured with inside its sandbox (the relay of the forwarder).
ENDPOINT = "http://127.0.0.1:18080"
