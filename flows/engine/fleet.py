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
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from executors.agent import agent_cli
from executors.egress import PROVIDERS, Provider, forwarder
from flows.engine.runlog import run_logger

PREFIX = "skillab-sessions"
RATE_PREFIX = "skillab-rate"


def provider_of(executor: str) -> Provider | None:
    """The provider whose account an executor's calls use: an agent CLI's, or an API's of that name
    (None for an executor of no known provider: a local model, an OpenAI-compatible server)."""
    try:
        return agent_cli(executor).provider
    except ValueError:
        return PROVIDERS.get(executor)


def fleet_name(cli: str, prefix: str = PREFIX) -> str:
    """The limit of ``cli``'s provider and account: ``skillab-sessions-<provider>-<key digest>``
    (``skillab-rate-...`` for the pace)."""
    provider = provider_of(cli)
    if provider is None:
        raise ValueError(f"{cli}: no provider account to limit")
    secrets = provider.secrets()
    account = hashlib.sha256("\0".join(secrets).encode()).hexdigest()[:12] if secrets else "no-key"
    return f"{prefix}-{provider.name}-{account}"


#: Prefect's default lease storage, which a server restart empties.
MEMORY_LEASES = "prefect.server.concurrency.lease_storage.memory"


async def warn_of_forgotten_leases(client: Any) -> None:
    """One warning when the server keeps concurrency leases in memory: a restart of it would leave the
    slots of the sessions then running taken for good, and the fleet's runs waiting for them."""
    try:
        response = await client.request("GET", "/admin/settings")
        storage = response.json()["server"]["concurrency"]["lease_storage"]
    except Exception:  # no such route (Prefect Cloud keeps its own leases) or an older server
        return
    if storage == MEMORY_LEASES:
        run_logger().warning(
            "the Prefect server keeps concurrency leases in memory: restarted, it would leave the fleet's "
            "slots taken; start it with PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE="
            "prefect.server.concurrency.lease_storage.filesystem (docs/fleet.md)"
        )


class Fleet:
    """The slots of one run's sessions and judge calls in the fleet's limits (one per provider and
    account): at most ``limit`` at once (--fleet-sessions) and at most ``rpm`` started a minute
    (--fleet-rpm), each a Prefect global concurrency limit."""

    def __init__(self, limit: int | None, rpm: int | None = None) -> None:
        self.limit = limit
        self.rpm = rpm
        self.ensured: set[str] = set()
        self.lock = asyncio.Lock()  # the sessions of a run start together: one of them creates it
        self.cooling: set[str] = set()  # providers a 429 came from, their pause not yet taken
        self.cooling_lock = threading.Lock()  # rate_limited() is called from the forwarder's thread
        if rpm:
            forwarder().on_rate_limited(self.rate_limited)

    def rate_limited(self, provider: str) -> None:
        """A 429 came back (a session's, through the forwarder, or a judge call's): the next start of
        that provider's work takes the pause for the whole fleet (any thread)."""
        with self.cooling_lock:
            self.cooling.add(provider)

    async def ensure(self, name: str, limit: int, decay: float | None = None) -> None:
        """The limit on the server, at this run's size (another run may have made it: then resized);
        ``decay``: slots freed a second (a rate), else slots are held while the work lasts."""
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
        from prefect.exceptions import ObjectAlreadyExists

        async with self.lock:
            if name in self.ensured:
                return
            rate = {"slot_decay_per_second": decay} if decay else {}
            async with get_client() as client:
                if not self.ensured:
                    await warn_of_forgotten_leases(client)
                try:
                    await client.create_global_concurrency_limit(
                        GlobalConcurrencyLimitCreate(name=name, limit=limit, **rate)
                    )
                except ObjectAlreadyExists:
                    await client.update_global_concurrency_limit(
                        name, GlobalConcurrencyLimitUpdate(limit=limit, **rate)
                    )
            self.ensured.add(name)

    async def pace(self, executor: str, provider: str) -> None:
        """Wait for a start within the fleet's --fleet-rpm. After a 429 the pause is a whole minute's
        starts taken at once: every run on the account waits while they decay."""
        from prefect.concurrency.asyncio import rate_limit

        if not self.rpm:
            return
        name = fleet_name(executor, RATE_PREFIX)
        await self.ensure(name, self.rpm, decay=self.rpm / 60)
        with self.cooling_lock:
            cool = provider in self.cooling
            self.cooling.discard(provider)
        await rate_limit(name, occupy=self.rpm if cool else 1, strict=True)

    @asynccontextmanager
    async def slot(self, executor: str) -> AsyncIterator[None]:
        """Start within the pace, then hold one slot of the at-once limit of ``executor``'s provider
        and account while the body runs; no slot for an executor of no known provider."""
        from prefect.concurrency.asyncio import concurrency

        provider = provider_of(executor)
        if provider is None:
            yield
            return
        await self.pace(executor, provider.name)
        if not self.limit:
            yield
            return
        name = fleet_name(executor)
        await self.ensure(name, self.limit)
        # A lease the server lost (restarted with its leases in memory) does not end a session already
        # paid for: it finishes, the limit briefly unenforced (Prefect logs a warning).
        async with concurrency(name, occupy=1, strict=True, raise_on_lease_renewal_failure=False):
            yield
