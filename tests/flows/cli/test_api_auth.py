"""The Prefect servers skillab starts require Prefect's API credential: nothing, secrets least of
all, is readable without it, and an agent session, even one with the host's network, never holds it.
Against a real skillab server, the real claude CLI in bubblewrap and the scripted model server."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from flows.cli import prefect_env
from flows.cli.prefect_env import CLIENT_AUTH, SERVER_AUTH, auth_path, ensure_server, stop_server
from tests.executors.test_agent_live import request
from tests.executors.test_hostile import needs_bwrap
from tests.fakes.escape import bash_agent
from tests.fakes.provider import FakeProvider
from tests.flows.cli.test_prefect_server import homes  # noqa: F401  (a fixture)


@needs_bwrap
def test_skillab_s_server_requires_its_credential_and_sessions_never_hold_it(
    homes: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SERVER_AUTH)
    monkeypatch.delenv(CLIENT_AUTH)
    monkeypatch.setenv(prefect_env.SERVER_SETTING, "persistent")
    record = ensure_server(announce=False)
    try:
        auth = auth_path().read_text().strip()
        assert auth.startswith("skillab:") and len(auth) > 30
        assert stat.S_IMODE(os.stat(auth_path()).st_mode) == 0o600
        header = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}
        api = record.api_url
        made = call(
            "POST",
            f"{api}/block_documents/",
            headers=header,
            json={
                "name": "planted",
                "data": {"value": "sk-planted-secret"},
                "block_schema_id": schema_id(api, header),
                "block_type_id": block_type_id(api, header),
            },
        )
        assert made.status_code == 201, made.text
        query = {"include_secrets": True}
        assert call("POST", f"{api}/block_documents/filter", json=query).status_code == 401
        assert call("POST", f"{api}/block_documents/filter", json=query, headers=header).status_code == 200
        assert call("GET", f"{api}/health").status_code == 200  # Prefect's own exemption, for probes
        # a session with --allow-network, on the same host as the server, tries both ways in
        probe = "; ".join(
            [
                "env | grep -ci prefect_api_auth || true",
                f"cat {auth_path()} 2>&1 | tail -c 60; echo",
                'python3 -c "import urllib.request as u, urllib.error as e\n'
                f"try: u.urlopen(u.Request('{api}/block_documents/filter', data=b'{{}}', "
                "headers={'content-type': 'application/json'}), timeout=5)\n"
                "except e.HTTPError as x: print('STATUS', x.code)\"",
            ]
        )
        req = request(tmp_path, "s", skill=False).model_copy(
            update={"cli": "claude", "model": "sonnet", "allow_network": True}
        )
        with FakeProvider(agent=bash_agent(probe)) as server:
            session = asyncio.run(ClaudeCodeExecutor(ExecutorSettings(base_url=server.url)).session(req))
        assert session.ok, session.error
        (result,) = [e for e in session.events if e.kind == "tool_result"]
        out = str(result.text)
        assert "STATUS 401" in out and auth not in out and "No such file" in out
        assert auth not in Path(req.raw_stream).read_text()
        assert json.loads(out.splitlines()[0]) == 0  # no variable of the credential's name
    finally:
        stop_server(record)


def call(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request, again while the server answers 503 (its database busy under a loaded machine), as
    Prefect's own client does: the credential's answers are 401 or a success, never 503."""
    for _ in range(20):
        answer = httpx.request(method, url, **kwargs)
        if answer.status_code != 503:
            break
        time.sleep(0.5)
    return answer


def schema_id(api: str, header: dict[str, str]) -> str:
    found = call("POST", f"{api}/block_schemas/filter", headers=header, json={}).json()
    return next(s["id"] for s in found if s["block_type"]["slug"] == "secret")


def block_type_id(api: str, header: dict[str, str]) -> str:
    return call("GET", f"{api}/block_types/slug/secret", headers=header).json()["id"]
