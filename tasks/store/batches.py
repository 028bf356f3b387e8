"""Units run through a provider's batch API, resumable by batch id (no Prefect here: the flow wraps it).

The order that makes a killed run cost nothing twice:

1. open manifests of this provider and endpoint are loaded from ``<cache_dir>/batches/``;
2. only the units no open manifest covers are submitted (``executors.batch.uncovered``), and each
   batch's manifest is written (durably) as soon as its id is known, before the first poll;
3. each open batch is polled; an ended one's results are handed to ``on_result`` (which stores the
   successful ones in the result cache) and only then is its manifest marked ``collected``.

A crash after 2 resumes by polling the same batch; a crash inside 3 fetches the same results again
(Anthropic keeps them 29 days, OpenAI keeps the files). Failed items are data for this run and, not
being cached, are submitted again by the next one. What is not covered: a crash between the
provider accepting a batch and its manifest being written (one HTTP response long) loses that id.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from pydantic import ValidationError

from executors.batch import BatchClient, BatchManifest, chunks, custom_id_for, uncovered
from executors.schema import RunRequest, RunResult
from tasks.store.files import atomic_write_text


class BatchStore:
    """Batch manifests, one JSON file per batch, in the result cache folder."""

    def __init__(self, cache_dir: Path | str) -> None:
        self.root = Path(cache_dir) / "batches"
        self.unreadable: list[Path] = []

    def path(self, manifest: BatchManifest) -> Path:
        return self.root / f"{manifest.provider}-{manifest.batch_id}.json"

    def save(self, manifest: BatchManifest) -> None:
        # Durable (fsync): a lost batch id means paying for the batch a second time.
        atomic_write_text(self.path(manifest), manifest.model_dump_json(indent=2) + "\n", durable=True)

    def load(self, provider: str, endpoint: str) -> list[BatchManifest]:
        """The open manifests of one provider and endpoint, oldest first. An unreadable file is
        kept (never deleted: it may hold the only copy of a batch id) and listed in ``unreadable``."""
        out = []
        for path in sorted(self.root.glob(f"{provider}-*.json")):
            try:
                manifest = BatchManifest.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValidationError, json.JSONDecodeError):
                self.unreadable.append(path)
                continue
            if manifest.open and manifest.provider == provider and manifest.endpoint == endpoint:
                out.append(manifest)
        return sorted(out, key=lambda m: m.created_at)


async def run_batches(
    client: BatchClient,
    requests: Mapping[str, RunRequest],
    store: BatchStore,
    on_result: Callable[[str, RunResult], Awaitable[None] | None],
    *,
    wait: bool = True,
    interval_s: float = 60.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> dict[str, RunResult]:
    """Submit the ``requests`` (unit key -> request; the units not in the result cache) that no
    open batch covers, then collect every open batch of this provider and endpoint.

    ``on_result(key, result)`` is called for each collected result before its batch is marked
    collected (store the ok ones there). ``wait=False`` polls once and returns what has ended:
    a later run collects the rest. Returns unit key -> result for what was collected now."""
    manifests = store.load(client.provider, client.endpoint)
    todo = uncovered(requests, manifests)
    sizes = [len(json.dumps(client.body(requests[key]))) for key in todo]
    for part in chunks(sizes, client.max_items, client.max_bytes):
        keys = [todo[i] for i in part]
        items = {custom_id_for(key): key for key in keys}
        batch_id = await client.submit({cid: requests[key] for cid, key in items.items()})
        manifest = BatchManifest.new(batch_id, client.provider, client.endpoint, items)
        store.save(manifest)
        manifests.append(manifest)

    collected: dict[str, RunResult] = {}
    pending = list(manifests)
    while pending:
        still: list[BatchManifest] = []
        for manifest in pending:
            status = await client.poll(manifest.batch_id)
            if not status.ended:
                if status.status != manifest.status:
                    manifest = manifest.model_copy(update={"status": status.status})
                    store.save(manifest)
                still.append(manifest)
                continue
            results = await client.results(manifest.batch_id, expected=manifest.items)
            for cid, result in results.items():
                key = manifest.items.get(cid)
                if key is None:  # not one of ours: nothing to store it under
                    continue
                stored = on_result(key, result)
                if stored is not None:
                    await stored
                collected[key] = result
            store.save(manifest.model_copy(update={"status": "collected"}))
        pending = still
        if pending and wait:
            await sleep(interval_s)
        elif not wait:
            break
    return collected
