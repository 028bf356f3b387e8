"""Headless Chromium for page tests (Debian's chromium; scripts/test.sh installs it)."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# No network beyond 127.0.0.1 on these machines: everything that would phone home is off.
QUIET_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: scripts/test.sh installs Debian's chromium")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=QUIET_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(make_app: Any) -> Iterator[str]:
    """An app (built by ``make_app(port)``) served by uvicorn on 127.0.0.1 in a thread; its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(port), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
