"""Start-up: a command reaches its first model call without importing what it needs only later.

Not a clock: which modules are loaded when the first request leaves (the report server, Jinja,
pandas, scipy, numpy, the report's models, the embedded model, agentic and trigger mode). Each one
found there costs every command its import time before the first call (see benchmarks/RESULTS.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.provider import FakeProvider
from tests.flows.helpers import ROOT, answer, make_project, subprocess_env

#: Imported after the calls (aggregation, report, HTML export), only when used (the local model), or
#: only by another command.
#: Not Starlette itself: Prefect imports FastAPI (and so Starlette) to encode a flow run's parameters.
HEAVY = (
    "pandas",
    "scipy",
    "numpy",
    "jinja2",
    "uvicorn",
    "flows.report.server",
    "flows.report.schema",
    "flows.modes.sample.report",
    "tasks.stats.aggregate",
    "xllamacpp",
    "regex",  # only for a regex assertion
    # agentic and trigger mode: the command line builds only the flags of the command given
    "flows.modes.agentic.cli",
    "flows.modes.triggers.cli",
    "flows.inputs.skill_config",
    "flows.modes.triggers.plan",
    "tasks.agent",  # the agent-session task: only runs that start sessions
)

#: Not imported before the first request either, though Prefect imports them with itself later: httpx's
#: command line (executors/lean_httpx.py) would bring them, ~90 ms.
NOT_YET = (*HEAVY, "rich", "click", "pygments")

#: The CLI entry and every module of sample mode's path up to the first request.
SAMPLE_PATH = (
    "flows.bench",
    "flows.cli.main",
    "flows.modes.sample.cli",
    "flows.cli.prefect_env",
    "flows.modes.sample.prepare",
    "flows.modes.sample.flow",
    "flows.engine.runner",
    "tasks.unit_runs",
    "executors.registry",
    "executors.openai",
)

IMPORTS = """
import json, sys
for name in sys.argv[2:]:
    __import__(name)
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""

#: Runs `skillab run` in this process and records the heavy modules loaded when the first request
#: is sent (HttpExecutor.send is every API executor's one way out).
FIRST_REQUEST = """
import json, sys
import executors.base
from flows.cli.main import main

heavy, out = json.loads(sys.argv[1]), sys.argv[2]
send = executors.base.HttpExecutor.send
seen = []

async def first_send(self, *args, **kwargs):
    if not seen:
        seen.append(sorted(m for m in heavy if m in sys.modules))
    return await send(self, *args, **kwargs)

executors.base.HttpExecutor.send = first_send
code = main(sys.argv[3:])
open(out, "w").write(json.dumps({"code": code, "heavy_at_first_request": seen[0] if seen else None}))
"""


def test_the_cli_and_the_sample_path_import_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS, json.dumps(HEAVY), *SAMPLE_PATH],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == []


@pytest.mark.usefixtures("prefect_harness")
def test_no_heavy_module_is_loaded_when_the_first_request_leaves(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", n=4)
    out = tmp_path / "first.json"
    args = ["run", "--executor", "openai", "--no-judge", "--quiet", "--output-dir", str(project / "reports")]
    with FakeProvider(answer) as server:
        subprocess.run(
            [sys.executable, "-c", FIRST_REQUEST, json.dumps(NOT_YET), str(out), *args],
            cwd=project,
            env=subprocess_env(server.url) | {"SKILLAB_HOME": str(tmp_path / "home")},
            capture_output=True,
            check=True,
            timeout=300,
        )
        calls = server.count()
    result = json.loads(out.read_text())
    assert result == {"code": 0, "heavy_at_first_request": []}
    assert calls == 8  # 4 samples x 2 variants: the run went on to the end
    assert list((project / "reports").glob("*.json")), "the report is written after the calls"
