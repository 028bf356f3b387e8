"""One limit for the fleet: agent sessions and judge calls bounded across every run that shares a
Prefect server.

A provider's rate limit is per account, not per machine: two runs (or the workers of a work pool)
that each keep within their own ``--concurrency`` can still flood one key together. With
``--fleet-sessions N`` every session, and every judge call on an API of the same provider, first
takes a slot of a Prefect global concurrency limit named after the provider and a digest of the
account's key (never the key), so all runs against that account hold at most N sessions and judge
calls at once between them, wherever they run. The limit is created (or its size updated) on the
server before the first slot; Prefect renews a slot's lease while the call lasts and frees it when
the call ends, however it ends.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from executors.egress import PROVIDERS, Provider
from executors.registry import agent_cli

PREFIX = "skillab-sessions"


def provider_of(executor: str) -> Provider | None:
    """The provider whose account an executor's calls use: an agent CLI's, or an API's of that name
    (None for an executor of no known provider: a local model, an OpenAI-compatible server)."""
    try:
        return agent_cli(executor).provider
    except ValueError:
        return PROVIDERS.get(executor)


def fleet_name(cli: str) -> str:
    """The limit of ``cli``'s provider and account: ``skillab-sessions-<provider>-<key digest>``."""
    provider = provider_of(cli)
    if provider is None:
        raise ValueError(f"{cli}: no provider account to limit")
    secrets = provider.secrets()
    account = hashlib.sha256("\0".join(secrets).encode()).hexdigest()[:12] if secrets else "no-key"
    return f"{PREFIX}-{provider.name}-{account}"


class Fleet:
    """The slots of one run's sessions in the fleet's limits (one per provider and account)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ensured: set[str] = set()
        self.lock = asyncio.Lock()  # the sessions of a run start together: one of them creates it

    async def ensure(self, name: str) -> None:
        """The limit on the server, at this run's size (another run may have made it: then resized)."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
        from prefect.exceptions import ObjectAlreadyExists

        async with self.lock:
            if name in self.ensured:
                return
            async with get_client() as client:
                try:
                    await client.create_global_concurrency_limit(
                        GlobalConcurrencyLimitCreate(name=name, limit=self.limit)
                    )
                except ObjectAlreadyExists:
                    await client.update_global_concurrency_limit(
                        name, GlobalConcurrencyLimitUpdate(limit=self.limit)
                    )
            self.ensured.add(name)

    @asynccontextmanager
    async def slot(self, executor: str) -> AsyncIterator[None]:
        """Hold one slot of the limit of ``executor``'s provider and account while the body runs
        (waiting for one when all are taken); no slot for an executor of no known provider."""
        from prefect.concurrency.asyncio import concurrency

        if provider_of(executor) is None:
            yield
            return
        name = fleet_name(executor)
        await self.ensure(name)
        async with concurrency(name, occupy=1, strict=True):
            yield
