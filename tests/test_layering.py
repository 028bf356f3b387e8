"""Dependencies point one way: deployments -> flows -> tasks -> graders -> executors.

A package imports only packages to its right, and nothing below tasks imports Prefect."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["deployments", "flows", "tasks", "graders", "executors"]
NO_PREFECT = {"graders", "executors"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_imports_point_one_way() -> None:
    bad = []
    for rank, layer in enumerate(LAYERS):
        forbidden = set(LAYERS[:rank]) | ({"prefect"} if layer in NO_PREFECT else set())
        for path in sorted((ROOT / layer).rglob("*.py")):
            for name in imports(path) & forbidden:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_walk_sees_every_layer() -> None:
    for layer in LAYERS:
        assert list((ROOT / layer).rglob("*.py")), f"{layer}/ has no module"
