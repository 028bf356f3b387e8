"""The fleet's fixtures: each test module that asks for ``fleet`` gets a pool of its own, named by its
``POOL``, with ``FLEET_WORKERS`` Docker workers (3 unless it says), the fleet's own unless its
``FLEET_WORKER_KIND`` says "docker" (Prefect's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flows.engine.fleet_support import fleet_pool
from tests.flows.helpers import Workers
from tests.flows.modes.agentic.test_skill_bench import calc_project


@pytest.fixture(scope="module")
def fleet(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    module = request.module
    kind = getattr(module, "FLEET_WORKER_KIND", "fleet")
    with fleet_pool(module.POOL, getattr(module, "FLEET_WORKERS", 3), tmp_path_factory, kind) as workers:
        yield workers


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return calc_project(
        tmp_path / "proj",
        {
            "task-01-easy": ("add 0", "Create calc.py with add(a, b)."),
            "task-02-easy": ("add 1", "Write calc.py defining add(a, b)."),
            "task-03-medium": ("add 3", "Make calc.py with add(a, b)."),
        },
    )
