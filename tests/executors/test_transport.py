"""The API executors through an in-process transport: the fake provider's own app answers without a
socket (``FakeProvider.transport()``), so a unit test of an executor's protocol and error mapping
needs no server started; the same requests, the same answers, the same errors as over HTTP."""

from __future__ import annotations

import pytest

from executors.base import Executor, ExecutorSettings
from executors.errors import PermanentError, TransientError
from executors.registry import EXECUTORS
from tests.executors.test_http import PROVIDERS, request
from tests.fakes.provider import FakeProvider, Fault


def in_process(name: str, server: FakeProvider) -> Executor:
    base = "http://fake/v1" if name == "openai" else "http://fake"  # never resolved: no socket
    return EXECUTORS[name](ExecutorSettings(base_url=base, timeout_s=5.0, transport=server.transport()))


@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_executor_is_answered_in_process(name: str) -> None:
    server = FakeProvider(lambda system, prompt: f"[{system}] four")  # not started
    result = await in_process(name, server).run(request(name))
    assert result.ok and result.output == "[be brief] four" and result.usage.output_tokens == 3
    (call,) = server.calls
    assert call.protocol == name and call.prompt == "What is 2+2?"


@pytest.mark.parametrize(("status", "error"), [(429, TransientError), (400, PermanentError)])
async def test_an_error_status_maps_onto_the_error_tree_in_process(
    status: int, error: type[Exception]
) -> None:
    server = FakeProvider(faults=[Fault(status=status, headers={"retry-after": "2"})])
    with pytest.raises(error):
        await in_process("anthropic", server).run(request("anthropic"))
