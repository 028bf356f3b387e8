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


def test_httpx_comes_without_its_command_line() -> None:
    """Production code imports httpx through executors/lean_httpx.py: the first plain ``import httpx``
    of a process also imports httpx's command line (rich, click, pygments, ~90 ms), in a command before
    its first call and in every fleet container before its session."""
    plain = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for layer in PRODUCTION
        for path in sorted((ROOT / layer).rglob("*.py"))
        if path.name != "lean_httpx.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "httpx" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "httpx")
    ]
    assert not plain, plain


#: Module-level containers filled at run time: each a cache of this process, valid across runs.
PROCESS_CACHES = {
    "executors/registry.py _instances": "one executor (its connection pools) per name and settings",
    "executors/local.py _servers": "the embedded model, loaded once per model file",
    "executors/local.py _templates": "whether a model file has a chat template (read from its header)",
    "graders/custom_js.py _validated": "a JavaScript check file's load-time check, per file version",
    "tasks/unit_runs.py _ids": "task-run ids drawn in one read of the OS's randomness, emptied in a fork",
    "tasks/stats/models.py _NESTING": "which fields of a report model's class may hold models, by its annotations",
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


#: The modules that hold JSON of formats skillab does not own (executors.parsing.JsonObject): a CLI's
#: events, a provider's bodies, another tool's suite files, JSON Schemas, Prefect's API and job
#: templates, report files before they are read into a model. Anywhere else, data is a model.
JSON_EDGES = {
    "deployments/fleet.py": "a Docker work pool's job template",
    "executors/agent.py": "a CLI's stream",
    "executors/anthropic.py": "the Messages API",
    "executors/base.py": "a provider's JSON",
    "executors/batch.py": "the batch APIs",
    "executors/claude_code.py": "Claude Code's events and settings",
    "executors/codex_cli.py": "Codex's events",
    "executors/conversation.py": "Claude Code's stream-json input and control requests",
    "executors/copilot_cli.py": "Copilot CLI's events",
    "executors/gemini.py": "the Gemini API",
    "executors/gemini_cli.py": "Gemini CLI's events",
    "executors/mcp_standin.py": "MCP's JSON-RPC (a script run alone, with its own alias)",
    "executors/openai.py": "the Chat Completions API",
    "executors/opencode.py": "OpenCode's events",
    "executors/parsing.py": "where it is defined",
    "executors/plugin.py": "a plugin's manifest",
    "executors/schema.py": "a tool call's input, an MCP tool's schema",
    "flows/cli/plan.py": "a pilot report's JSON",
    "flows/engine/api_gate.py": "Prefect's API",
    "flows/engine/container_engine.py": "Prefect's flow-run API, a flow run's parameters",
    "flows/engine/gateway.py": "Prefect's flow run parameters",
    "flows/engine/remote.py": "a container flow run's parameters and job variables",
    "flows/inputs/environment.py": "Claude Code's settings files",
    "flows/inputs/files.py": "an options file",
    "flows/inputs/samples.py": "a samples file",
    "flows/inputs/skill_config.py": "the seed's config.yml",
    "flows/inputs/suites/omk.py": "an oh-my-knowledge project",
    "flows/inputs/suites/plugin_eval.py": "a plugin's manifest",
    "flows/inputs/suites/plugin_mocks.py": "plugin eval mock files",
    "flows/inputs/suites/skill_creator.py": "skill-creator's evals.json",
    "flows/modes/agentic/model.py": "older reports' JSON",
    "flows/modes/agentic/plugin_json.py": "claude plugin eval's --json output",
    "flows/modes/agentic/sessions.py": "a CLI's init event",
    "flows/report/json_schema.py": "the report's JSON Schema",
    "flows/report/schema.py": "report files before migration",
    "graders/confined.py": "a confined check's answer",
    "graders/criteria.py": "the judge's JSON Schema",
    "graders/custom_js.py": "a JavaScript check's answer",
    "graders/diagnosis.py": "the diagnosis JSON Schema",
    "graders/expectations.py": "the expectations JSON Schema",
    "graders/judge.py": "the judge's JSON Schemas",
    "graders/loading.py": "YAML and JSON of a user's files",
    "graders/plugin_eval.py": "plugin eval case files",
    "graders/plugin_grading.py": "Claude Code's events",
    "graders/queries.py": "trigger query sets of other tools",
    "graders/structured.py": "a JSON Schema",
    "tasks/stats/planning.py": "a pilot report's JSON",
    "tasks/store/cache.py": "the result cache's JSON entries",
}
#: The issue's bound on untyped mappings in production code ("typed inside").
MAX_UNTYPED_MAPPINGS = 40


def test_foreign_json_stays_at_its_edges() -> None:
    users = {
        str(path.relative_to(ROOT))
        for layer in PRODUCTION
        for path in sorted((ROOT / layer).rglob("*.py"))
        if re.search(r"\bJsonObject\b", path.read_text(encoding="utf-8"))
    }
    assert users <= set(JSON_EDGES), sorted(users - set(JSON_EDGES))
    untyped = sum(
        path.read_text(encoding="utf-8").count("dict[str, Any]")
        for layer in PRODUCTION
        for path in (ROOT / layer).rglob("*.py")
    )
    assert untyped <= MAX_UNTYPED_MAPPINGS, untyped
