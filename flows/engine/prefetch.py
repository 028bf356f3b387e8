"""Modules a run needs only after its model calls, imported in a background thread while the calls
are in flight.

A command imports the report's models, aggregation (pandas, scipy), the HTML export (Jinja) and the
console summary only after its calls (the first call goes out sooner); importing them then would add
about a second to the end of every run on these machines. Started when the first result is back, the
imports overlap the wait for the replies instead. An import that fails here is ignored: the same
import where the module is used raises it to the user.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Sequence

#: What Prefect imports at a flow's first call (its engines, run telemetry, graphviz for flow
#: visualisation, FastAPI's encoder for the parameters: 0.4-0.5 s here), for a command that would
#: otherwise wait idle before it.
FLOW_ENGINE = (
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.utilities.visualization",
    "fastapi.encoders",
)

_started: set[tuple[str, ...]] = set()
_lock = threading.Lock()


def prefetch(modules: Sequence[str]) -> None:
    """Import ``modules`` in a daemon thread, once per process."""
    key = tuple(modules)
    with _lock:
        if key in _started:
            return
        _started.add(key)
    threading.Thread(target=import_all, args=(key,), name="skillab-prefetch", daemon=True).start()


def import_all(modules: Sequence[str]) -> None:
    """Import ``modules`` here and now (a failure is left to the place that uses the module)."""
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
