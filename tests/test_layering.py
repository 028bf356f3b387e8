"""Dependencies point one way: deployments -> flows -> tasks -> graders -> executors, and inside
flows/: cli -> the top flows (flows/*.py) -> the modes (flows/modes/) -> report, engine -> inputs. A
mode never imports another mode, and what every mode shares (cli's run protocol, report, engine,
inputs, the modules directly in flows/modes/) never imports a mode.

A package imports only packages to its right, nothing below tasks imports Prefect (nor does
tasks/stats or tasks/store), report and engine do not import each other, and no two modules import each other, directly or around a loop
(any import is checked, wherever it stands in a module: an import inside a function is a dependency
too, and a cycle through one only waits for the call that runs it)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["deployments", "flows", "tasks", "graders", "executors"]
NO_PREFECT = {"graders", "executors"}
#: Inside flows/: what each part may import from flows (itself always). A mode's command imports
#: the run protocol from cli/; only the dispatcher (cli/main.py) imports the modes' commands.
FLOWS_ALLOWED = {
    "cli": {"cli", "top", "modes", "report", "engine", "inputs"},
    "top": {"top", "modes", "report", "engine", "inputs"},
    "modes": {"modes", "cli", "report", "engine", "inputs"},
    "report": {"report", "inputs"},
    "engine": {"engine", "inputs"},
    "inputs": {"inputs"},
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def flows_part(module: str) -> str | None:
    """cli / modes / report / engine / inputs for a module under flows/, "top" for the modules
    directly in flows/."""
    parts = module.split(".")
    if parts[0] != "flows" or len(parts) < 2:
        return None
    if parts[1] in FLOWS_ALLOWED:
        return parts[1]
    return "cli" if parts[1] == "bench" else "top"


def test_imports_point_one_way() -> None:
    bad = []
    for rank, layer in enumerate(LAYERS):
        forbidden = set(LAYERS[:rank]) | ({"prefect"} if layer in NO_PREFECT else set())
        for path in sorted((ROOT / layer).rglob("*.py")):
            tops = {name.split(".")[0] for name in imported_modules(path)}
            for name in tops & forbidden:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_flows_parts_point_one_way() -> None:
    bad = []
    for path in sorted((ROOT / "flows").rglob("*.py")):
        module = module_name(path)
        own = flows_part(module)
        if own is None:
            continue
        for name in imported_modules(path):
            # "from flows.report import charts" names a submodule: judge it by its package.
            part = flows_part(name)
            if part is not None and name != "flows" and part not in FLOWS_ALLOWED[own]:
                bad.append(f"{module} ({own}) imports {name} ({part})")
    assert not bad, "\n".join(bad)


MODES = sorted(p.name for p in (ROOT / "flows" / "modes").iterdir() if (p / "__init__.py").is_file())
DISPATCHERS = {"flows.cli.main", "flows.nightly", "flows.bench"}  # they run every mode


def mode_of(module: str) -> str | None:
    """The mode folder a module belongs to (None: shared)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["flows", "modes"] and len(parts) > 2 and parts[2] in MODES else None


def test_a_mode_never_imports_another_and_shared_code_no_mode() -> None:
    bad = []
    for path in sorted((ROOT / "flows").rglob("*.py")):
        module = module_name(path)
        if module in DISPATCHERS:
            continue
        own = mode_of(module)
        for name in imported_modules(path):
            other = mode_of(name)
            if other is not None and other != own:
                bad.append(f"{module} ({own or 'shared'}) imports {name} ({other})")
    assert not bad, "\n".join(bad)


def top_level(path: Path) -> dict[str, ast.stmt]:
    return {n.name: n for n in ast.parse(path.read_text(encoding="utf-8")).body if hasattr(n, "name")}


def test_every_mode_is_a_folder_with_its_command_flow_and_report() -> None:
    """The protocol of a mode: cli.py adds its commands to the parser (``add_commands``, called by
    cli/main.py), flow.py holds its Prefect flow, report.py builds its part of the report."""
    assert MODES == ["agentic", "sample", "triggers"]
    for mode in MODES:
        folder = ROOT / "flows" / "modes" / mode
        for part in ("cli", "flow", "report"):
            assert (folder / f"{part}.py").is_file(), f"{mode} has no {part}.py"
        assert "add_commands" in top_level(folder / "cli.py"), f"{mode}/cli.py: no add_commands"
        flows = [
            name
            for name, node in top_level(folder / "flow.py").items()
            if isinstance(node, ast.AsyncFunctionDef)
            and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "flow" for d in node.decorator_list
            )
        ]
        assert len(flows) == 1, f"{mode}/flow.py: {len(flows)} Prefect flows"
    main = (ROOT / "flows" / "cli" / "main.py").read_text(encoding="utf-8")
    for mode in MODES:
        assert f"from flows.modes.{mode}.cli import add_commands" in main, f"cli/main.py does not add {mode}"


def test_no_cycle_workarounds() -> None:
    """TYPE_CHECKING imports were the old way around a cycle; none is left."""
    offenders = [
        str(p.relative_to(ROOT))
        for layer in LAYERS
        for p in (ROOT / layer).rglob("*.py")
        if "TYPE_CHECKING" in p.read_text(encoding="utf-8")
    ]
    assert not offenders, offenders


#: tasks/ holds the Prefect tasks; beside them, what needs no Prefect and no task: the figures
#: (tasks/stats) and what runs keep on disk (tasks/store). Each may import these modules of tasks/.
PURE_TASKS = {
    "stats": ("tasks.stats", "tasks.store", "tasks.schema"),
    "store": ("tasks.store", "tasks.schema"),
}


def test_stats_and_store_need_no_prefect_and_no_task() -> None:
    bad = []
    for part, allowed in PURE_TASKS.items():
        for path in sorted((ROOT / "tasks" / part).rglob("*.py")):
            for name in imported_modules(path):
                top = name.split(".")[0]
                own = name == "tasks" or any(name == a or name.startswith(a + ".") for a in allowed)
                if top == "prefect" or (top == "tasks" and not own):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def module_graph() -> dict[str, set[str]]:
    """Every project module -> the project modules it imports (a ``from package import module``
    counts as the module)."""
    paths = {module_name(p): p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")}
    return {m: (imported_modules(p) & paths.keys()) - {m} for m, p in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as the modules along it, the first repeated at the end; None without any."""
    state: dict[str, str] = {}  # "open" while on the walk's path, "done" once all it reaches is seen

    def walk(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for dep in sorted(graph[module]):
            if state.get(dep) == "open":
                return [*path[path.index(dep) :], dep]
            if dep not in state and (cycle := walk(dep, [*path, dep])):
                return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := walk(module, [module])):
            return cycle
    return None


def test_no_import_cycle() -> None:
    cycle = find_cycle(module_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_walk_sees_every_layer() -> None:
    for layer in LAYERS:
        assert list((ROOT / layer).rglob("*.py")), f"{layer}/ has no module"
    for part in ("cli", "modes", "report", "engine", "inputs"):
        assert list((ROOT / "flows" / part).rglob("*.py")), f"flows/{part}/ has no module"


def function_level_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import inside a function of ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in (s for stmt in node.body for s in ast.walk(stmt)):
                if isinstance(sub, ast.Import):
                    found += [(sub.lineno, a.name) for a in sub.names]
                elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                    found.append((sub.lineno, sub.module))
    return sorted(set(found))


def test_imports_inside_functions_only_at_declared_seams() -> None:
    from flows.engine.prefetch import LAZY_WHAT, LAZY_WHERE

    def declared(name: str, table: dict[str, str]) -> bool:
        return any(name == key or name.startswith(key + ".") for key in table)

    bad = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            if declared(module_name(path), LAZY_WHERE):
                continue
            bad += [
                f"{path.relative_to(ROOT)}:{line} imports {name}"
                for line, name in function_level_imports(path)
                if not declared(name, LAZY_WHAT)
            ]
    assert not bad, (
        "imports inside functions, not at a declared seam (flows/engine/prefetch.py):\n" + "\n".join(bad)
    )
