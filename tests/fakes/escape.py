"""Places a sandboxed process must not reach, and a shell script that tries to reach them."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CANARIES = ("tmp_canary", "home_canary", "root_canary", "etc_canary")
SECRETS = ("tmp_secret", "home_secret")
#: A credential set in the user's shell that no sandboxed process may see.
ENV_SECRET = "AWS_SECRET_ACCESS_KEY"


@contextlib.contextmanager
def escape_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """A secret in /tmp (the test's folder); a stand-in for the real HOME outside /tmp (in /var/tmp,
    which the read-only root would show if HOME were not covered) holding a secret; canary paths in
    /tmp, in that HOME, in /root and in /etc. Nothing is left behind, whatever the test does."""
    home = Path(tempfile.mkdtemp(prefix="skillab-realhome-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    token = uuid.uuid4().hex
    monkeypatch.setenv(ENV_SECRET, f"env-secret-{token}")
    (tmp_path / "secret.txt").write_text(f"tmp-secret-{token}\n")
    (home / "secret.txt").write_text(f"home-secret-{token}\n")
    places = {
        "tmp_secret": tmp_path / "secret.txt",
        "home_secret": home / "secret.txt",
        "tmp_canary": Path(tempfile.gettempdir()) / f"skillab-canary-{token}",
        "home_canary": home / f"skillab-canary-{token}",
        "root_canary": Path("/root") / f"skillab-canary-{token}",
        "etc_canary": Path("/etc") / f"skillab-canary-{token}",
    }
    try:
        yield places
    finally:
        for key in CANARIES:
            places[key].unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)


def escape_script(places: dict[str, Path]) -> str:
    """Shell that tries every way out and says on stdout what worked (WROTE-*, UNMOUNTED, REMOUNTED),
    and prints any secret it can read (files, or the credential in its environment)."""
    lines = [f"echo canary > {places[k]} && echo WROTE-{k}" for k in CANARIES]
    lines += [f"cat {places[k]}" for k in SECRETS]
    lines += [f"printenv {ENV_SECRET}"]
    lines += [
        "umount /root && echo UNMOUNTED",
        "mount -o remount,rw / && echo REMOUNTED",
        "echo made > made.txt",
    ]
    return "; ".join(f"{{ {line}; }} 2>&1" for line in lines)


def bash_agent(command: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """A scripted model (Anthropic's protocol) that runs ``command`` through the Bash tool once,
    then answers "done."."""

    def agent(body: dict[str, Any]) -> list[dict[str, Any]]:
        done = any(
            isinstance(b, dict) and b.get("type") == "tool_result"
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
        )
        if done:
            return [{"type": "text", "text": "done."}]
        return [{"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "probe"}}]

    return agent
