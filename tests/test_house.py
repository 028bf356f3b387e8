"""House rules the code review asked for, kept by a test: no function in flows/ or tasks/ over 60
lines (split where a name helps the reader), and no assert as a runtime check outside tests."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60


def functions(layer: str) -> list[tuple[str, int]]:
    out = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                out.append((f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", length))
    return out


def test_no_long_functions_in_flows_and_tasks() -> None:
    long = [
        f"{name} ({n} lines)" for layer in ("flows", "tasks") for name, n in functions(layer) if n > MAX_LINES
    ]
    assert not long, long


def test_no_assert_as_a_runtime_check() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for layer in ("flows", "tasks", "graders", "deployments")
        for path in sorted((ROOT / layer).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert not found, found
