"""Shared fixtures. Only flow tests start Prefect (one test server for the session)."""

from __future__ import annotations

import io
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.provider import FakeProvider  # noqa: E402

# Hermetic: no test leaves a Prefect server running. Runs use the test harness's server (or Prefect's
# temporary one in a child process), never the persistent local server a user's runs share.
os.environ["SKILLAB_PREFECT_SERVER"] = "ephemeral"
# No command a test starts leaves a warm process behind (flows/cli/warm.py), but for the tests of it.
os.environ["SKILLAB_WARM"] = "0"
# Every Prefect server a test starts (the harness's, skillab's local one, Prefect's temporary one)
# requires the API credential, as skillab's own do, and every client, worker and container sends it.
os.environ.setdefault("PREFECT_SERVER_API_AUTH_STRING", f"skillab-tests:{secrets.token_hex(12)}")
os.environ.setdefault("PREFECT_API_AUTH_STRING", os.environ["PREFECT_SERVER_API_AUTH_STRING"])


class CurrentStderr(io.TextIOBase):
    """Whatever ``sys.stderr`` is at the time of writing (pytest swaps it for each test)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@pytest.fixture(autouse=True)
def prefect_console_follows_the_capture() -> None:
    """Prefect's console log handler keeps the stream it was made with: made under one test's
    capture, it would write a later test's lines into that closed stream (a logging error with a
    traceback in the later test's stderr, where tests look for tracebacks)."""
    handlers = sys.modules.get("prefect.logging.handlers")
    if handlers is None:
        return
    import logging

    for logger in [logging.getLogger(), *map(logging.getLogger, list(logging.root.manager.loggerDict))]:
        for handler in logger.handlers:
            if isinstance(handler, handlers.PrefectConsoleHandler) and not isinstance(
                handler.stream, CurrentStderr
            ):
                handler.stream = handler.console.file = (
                    CurrentStderr()
                )  # not setStream: it flushes the old one


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("prefect-home")
    os.environ["PREFECT_HOME"] = str(home)
    from flows.cli.prefect_env import configure_prefect

    configure_prefect()
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture(scope="session", autouse=True)
def reports_match_the_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every report any test writes validates against the JSON Schema in the repository."""
    yield
    from tests.report_files import invalid_reports

    problems = invalid_reports(tmp_path_factory.getbasetemp())
    assert not problems, "reports that do not match flows/report/report.schema.json:\n" + "\n".join(problems)


@pytest.fixture
def skillab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLAB_HOME", str(tmp_path / "home"))
    return tmp_path / "home"
