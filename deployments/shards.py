"""The shard deployment: the ``bench-shard`` flow on a process work pool, loaded from this checkout.

Workers on other machines need the same checkout at the same path (or change ``source`` to a git
URL) and the cache folder on shared storage; see docs/prefect.md, scale-out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows.inputs.options import SHARD_DEPLOYMENT_NAME
from flows.modes.sample.shard import bench_shard

ROOT = Path(__file__).resolve().parents[1]


def register(work_pool: str, source: str = str(ROOT)) -> Any:
    """Create (or update) the deployment; returns its id. The pool must exist (process type)."""
    loaded: Any = bench_shard.from_source(source=source, entrypoint="flows/modes/sample/shard.py:bench_shard")
    return loaded.deploy(
        name=SHARD_DEPLOYMENT_NAME,
        work_pool_name=work_pool,
        build=False,
        push=False,
        print_next_steps=False,
        ignore_warnings=True,  # a process pool is the point here, not a local-development shortcut
        tags=["skillab", "shard"],
        description="One shard of a sharded skillab run: executes its units into the shared cache.",
    )
