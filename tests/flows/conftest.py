"""Fixtures of the flow tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, use_provider


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The scripted capitals model (and honest judge) on 127.0.0.1, as the OpenAI endpoint; a test
    module may define its own ``server``."""
    with FakeProvider(answer) as s:
        use_provider(monkeypatch, s.url)
        yield s
