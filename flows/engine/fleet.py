"""One limit for the fleet: agent sessions bounded across every run that shares a Prefect server.

A provider's rate limit is per account, not per machine: two runs (or the workers of a work pool)
that each keep within their own ``--concurrency`` can still flood one key together. With
``--fleet-sessions N`` every session first takes a slot of a Prefect global concurrency limit named
after its provider and a digest of the account's key (never the key), so all runs against that
account hold at most N sessions at once between them, wherever they run. The limit is created (or
its size updated) on the server before the first session; Prefect renews a slot's lease while the
session lasts and frees it when the session ends, however it ends.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from executors.registry import agent_cli

PREFIX = "skillab-sessions"


def fleet_name(cli: str) -> str:
    """The limit of ``cli``'s provider and account: ``skillab-sessions-<provider>-<key digest>``."""
    provider = agent_cli(cli).provider
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
    async def slot(self, cli: str) -> AsyncIterator[None]:
        """Hold one slot of ``cli``'s limit while the body runs (waiting for one when all are taken)."""
        from prefect.concurrency.asyncio import concurrency

        name = fleet_name(cli)
        await self.ensure(name)
        async with concurrency(name, occupy=1, strict=True):
            yield
