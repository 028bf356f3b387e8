"""The local Prefect server that runs share: chosen, reused, started once, stopped by its pid.

The lifecycle test starts a real `prefect server start` (20-30 s on a fresh database) in a temporary
home on a free port, and always stops it: the suite leaves no server running.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from executors.errors import InputError
from flows.cli import prefect_env
from flows.cli.main import main
from flows.cli.prefect_env import (
    SERVER_SETTING,
    alive,
    ensure_server,
    healthy,
    prepare_prefect,
    read_record,
    stop_server,
)


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private skillab and Prefect home, no API configured, the persistent mode on a free port."""
    monkeypatch.setenv("SKILLAB_HOME", str(tmp_path / "skillab"))
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(prefect_env.free_port("127.0.0.1")))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv(SERVER_SETTING, raising=False)
    return tmp_path


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"true" if self.path == "/api/health" else b"{}"
        self.send_response(200 if self.path == "/api/health" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering(homes: Path) -> Iterator[int]:
    """Something answering Prefect's health check at the default address (a user's own server)."""
    port = int(os.environ["PREFECT_SERVER_API_PORT"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()


def test_the_ephemeral_setting_starts_nothing(homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_SETTING, "ephemeral")
    prepare_prefect()
    assert "PREFECT_API_URL" not in os.environ
    assert read_record() is None


def test_a_configured_api_url_is_used_as_it_is(homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    prepare_prefect()
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"
    assert read_record() is None


def test_a_bad_setting_is_one_line(homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_SETTING, "sometimes")
    with pytest.raises(InputError, match="SKILLAB_PREFECT_SERVER=sometimes: expected one of persistent"):
        prepare_prefect()


def test_a_server_answering_at_the_default_address_is_reused(answering: int) -> None:
    found = ensure_server()
    assert (found.port, found.pid) == (answering, 0)  # nothing started, nothing recorded
    assert read_record() is None


def test_start_reuse_and_stop(homes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        first = ensure_server()
        err = capsys.readouterr().err
        assert f"started a Prefect server in the background for this and later runs, UI {first.ui_url}" in err
        assert "python -m flows.bench server stop" in err
        assert alive(first.pid) and healthy(first.api_url)
        assert json.loads((homes / "skillab" / "prefect-server.json").read_text())["pid"] == first.pid
        again = ensure_server()
        assert again == first  # reused, not started twice
        assert capsys.readouterr().err == ""
        assert main(["server", "status"]) == 0
        assert f"Prefect server at {first.ui_url} (pid {first.pid}" in capsys.readouterr().out
    finally:
        stopped = stop_server()
    assert stopped is not None and not alive(stopped.pid)
    assert not healthy(stopped.api_url)
    assert read_record() is None
    assert main(["server", "stop"]) == 0
    assert "no Prefect server started by skillab is running" in capsys.readouterr().out
