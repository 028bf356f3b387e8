"""House rules the code review asked for, kept by a test: no function in production code over 60
lines and no file over 600 (split where a name helps the reader), no assert as a runtime check
outside tests, and no module-level state but the process-wide caches declared here (what a run
shares with its flow and tasks is its run context, tasks/context.py)."""

from __future__ import annotations

import ast
import re
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


PRODUCTION = ("flows", "tasks", "graders", "executors", "deployments")
MAX_FILE_LINES = 600


def test_no_long_functions_in_production_code() -> None:
    long = [f"{name} ({n} lines)" for layer in PRODUCTION for name, n in functions(layer) if n > MAX_LINES]
    assert not long, long


def test_no_long_files_in_production_code() -> None:
    long = [
        f"{path.relative_to(ROOT)} ({n} lines)"
        for layer in PRODUCTION
        for path in sorted((ROOT / layer).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
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


#: Module-level containers filled at run time: each a cache of this process, valid across runs.
PROCESS_CACHES = {
    "executors/registry.py _instances": "one executor (its connection pools) per name and settings",
    "executors/local.py _servers": "the embedded model, loaded once per model file",
    "executors/local.py _templates": "whether a model file has a chat template (read from its header)",
    "graders/custom_js.py _validated": "a JavaScript check file's load-time check, per file version",
}


def test_module_state_is_only_the_declared_process_caches() -> None:
    found = set()
    for layer in ("flows", "tasks", "executors", "graders", "deployments"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if (
                    isinstance(node, ast.Assign | ast.AnnAssign)
                    and node.value is not None
                    and empty(node.value)
                ):
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    found.add(f"{path.relative_to(ROOT)} {ast.unparse(target)}")
    assert found == set(PROCESS_CACHES)


def empty(value: ast.expr) -> bool:
    """An empty container literal or constructor call: state that something fills later."""
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.List | ast.Set):
        return not value.elts
    constructors = ("dict", "list", "set", "defaultdict", "OrderedDict")
    return isinstance(value, ast.Call) and getattr(value.func, "id", "") in constructors and not value.args


#: Where a camelCase key is another program's format, not the report's: the key is theirs.
FOREIGN_FORMATS = {
    "flows/modes/agentic/plugin_json.py": "Claude Code's plugin eval results (its JSON)",
    "flows/inputs/suites/omk.py": "oh-my-knowledge's eval.yaml and samples",
    "executors/gemini.py": "the Gemini API's request and response",
    "executors/gemini_cli.py": "Gemini CLI's stream events",
    "executors/claude_code.py": "Claude Code's result event",
    "executors/conversation.py": "Claude Code's control protocol (its permission replies)",
    "executors/mcp_standin.py": "the Model Context Protocol's messages",
    "executors/copilot_cli.py": "Copilot CLI's event log",
    "executors/opencode.py": "OpenCode's config file",
    "flows/inputs/environment.py": "Claude Code's installed_plugins.json",
    "flows/modes/triggers/fill.py": "Claude Code's recorded session file",
    "deployments/fleet.py": "Docker's seccomp profile and mount specification",
}
JSON_SCHEMA_WORDS = {"maxLength", "minItems", "maxItems", "additionalProperties", "patternProperties"}


def camel_keys(path: Path) -> list[str]:
    """camelCase string keys of dict literals and subscripts in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        keys = [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else []
        keys += [node.slice] if isinstance(node, ast.Subscript) else []
        found += [
            f"{k.lineno}: {k.value}"
            for k in keys
            if isinstance(k, ast.Constant)
            and isinstance(k.value, str)
            and re.fullmatch(r"[a-z]+[A-Z]\w*", k.value)
            and k.value not in JSON_SCHEMA_WORDS
        ]
    return found


def test_report_parts_are_models_not_camel_case_dicts() -> None:
    over = {}
    for layer in ("flows", "tasks", "executors", "graders", "deployments"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name.startswith("flows/report/schema") or name in FOREIGN_FORMATS:
                continue
            if keys := camel_keys(path):  # a figure is a model built by keyword, never a dict
                over[name] = keys
    assert not over, over
