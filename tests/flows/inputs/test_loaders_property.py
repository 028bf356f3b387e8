"""Generated malformed inputs, for every loader: each file either loads or gives InputError lines
(one complete line each, which the CLI prints with exit 2); never another exception, never a hang
(hypothesis' per-example deadline, set far above a normal example's time: these 2-core machines are
shared, and a hang would exceed any deadline)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from executors.errors import InputError
from flows.inputs import samples as sample_inputs
from flows.inputs import skill_config
from flows.report.store import read_reports
from graders.queries import load_queries

EXAMPLES = 100
CHECK = settings(
    max_examples=EXAMPLES, deadline=20_000, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
KEYS = [
    "sample_id",
    "prompt",
    "context",
    "rubric",
    "assertions",
    "dimensions",
    "tags",
    "cluster",
    "type",
    "value",
    "values",
    "weight",
    "not",
    "pattern",
    "flags",
    "schema",
    "fn",
    "query",
    "id",
    "expect",
    "runs",
    "task_count",
    "difficulties",
    "concurrency",
    "variants",
    "threshold",
    "margin",
    "queries",
]
plausible = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    max_leaves=25,
)


def encoded(draw_value: Any, kind: str) -> bytes:
    if kind == "json":
        return json.dumps(draw_value, allow_nan=True).encode()
    return yaml.safe_dump(draw_value, allow_unicode=True).encode()


files = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(str.encode),
    st.tuples(st.one_of(values, plausible), st.sampled_from(["json", "yaml"])).map(lambda v: encoded(*v)),
    st.integers(1, 1500).map(lambda n: ("[" * n + "]" * n).encode()),  # deep nesting
    st.integers(1, 12).map(
        lambda n: ("a: &a [x]\n" + "".join(f"a{i}: &a{i} [*a, *a, *a, *a]\n" for i in range(n))).encode()
    ),
)


def contract(load: Callable[[Path], Any], name: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        try:
            load(path)
        except InputError as exc:
            assert exc.lines and all(line and "\n" not in line for line in exc.lines), exc.lines


@CHECK
@given(files, st.sampled_from(["eval-samples.json", "eval-samples.yaml"]))
def test_samples_files(content: bytes, name: str) -> None:
    contract(sample_inputs.load_samples, name, content)


@CHECK
@given(files)
def test_skillab_yaml(content: bytes) -> None:
    contract(sample_inputs.load_config, "skillab.yaml", content)


@CHECK
@given(files)
def test_agentic_config(content: bytes) -> None:
    contract(lambda p: skill_config.load_config(str(p), p.parent, {}), "config.yml", content)


@CHECK
@given(st.one_of(files, st.text(max_size=400).map(lambda t: ("# Task: x\n" + t).encode())))
def test_task_files(content: bytes) -> None:
    contract(lambda p: skill_config.load_tasks(p.parent), "suite/task-01-easy.md", content)


@CHECK
@given(files, st.sampled_from(["queries.yaml", "queries.json"]))
def test_queries_files(content: bytes, name: str) -> None:
    contract(load_queries, name, content)


@CHECK
@given(files)
def test_report_files_are_skipped_with_a_warning_never_an_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "run.json").write_bytes(content)
        warned: list[str] = []
        found = list(read_reports(Path(tmp), warn=lambda path, reason: warned.append(reason)))
        assert len(found) + len(warned) == 1
