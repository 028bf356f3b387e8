"""Dependencies point one way: deployments -> flows -> tasks -> graders -> executors, and inside
flows/: cli -> the top flows (flows/*.py) -> the modes (flows/modes/) -> report, engine -> inputs. A
mode never imports another mode, and what every mode shares (cli's run protocol, report, engine,
inputs, the modules directly in flows/modes/) never imports a mode.

Every mode is named once, by the registry (flows/modes/registry.py); shared code never compares with
a mode's name nor asks isinstance of a mode's report class.

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
REGISTRY = "flows.modes.registry"  # the one module that names every mode (one line each)


def mode_of(module: str) -> str | None:
    """The mode folder a module belongs to (None: shared)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["flows", "modes"] and len(parts) > 2 and parts[2] in MODES else None


def test_a_mode_never_imports_another_and_shared_code_no_mode() -> None:
    bad = []
    for path in sorted((ROOT / "flows").rglob("*.py")):
        module = module_name(path)
        own = mode_of(module)
        for name in imported_modules(path):
            other = mode_of(name)
            # the registry imports each mode's descriptor (flows/modes/<mode>/mode.py), nothing else of it
            allowed = module == REGISTRY and name.startswith(f"flows.modes.{other}.mode")
            if other is not None and other != own and not allowed:
                bad.append(f"{module} ({own or 'shared'}) imports {name} ({other})")
    assert not bad, "\n".join(bad)


def mode_names() -> set[str]:
    """What the registry's modes call themselves, and their folders' names."""
    from flows.report.modes import modes

    return {m.name for m in modes()} | set(MODES)


def named_modes(path: Path, names: set[str]) -> list[str]:
    """Where ``path`` compares something with a mode's name, or types a value as one (a Literal of
    it), or asks whether a report is of a mode's class: shared code asks the mode instead."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            values = [e.value for side in sides for e in ast.walk(side) if isinstance(e, ast.Constant)]
            found += [f"line {node.lineno}: compares with {v!r}" for v in values if v in names]
        elif isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal":
            values = [e.value for e in ast.walk(node.slice) if isinstance(e, ast.Constant)]
            found += [f"line {node.lineno}: Literal of {v!r}" for v in values if v in names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "isinstance"
            and len(node.args) == 2
        ):
            classes = [n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)]
            found += [
                f"line {node.lineno}: isinstance of {c}"
                for c in classes
                if c.endswith("Report") and c != "Report"
            ]
    return found


def test_no_mode_named_outside_its_folder() -> None:
    """Shared code never compares with a mode's name, types one as a Literal, or asks isinstance of
    a mode's report class: it loops over the registry, or asks the report (its class is the mode's)."""
    names = mode_names()
    bad = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            if mode_of(module_name(path)) is None:
                bad += [f"{path.relative_to(ROOT)}: {line}" for line in named_modes(path, names)]
    assert not bad, "\n".join(bad)


def test_the_rule_finds_a_mode_named() -> None:
    probe = ROOT / "tests" / "data" / "named_mode_probe.py"
    found = named_modes(probe, {"sample", "trigger"})
    assert sorted(found, key=lambda line: int(line.split()[1].rstrip(":"))) == [
        "line 7: compares with 'trigger'",
        "line 8: Literal of 'sample'",
        "line 10: isinstance of TriggerReport",
    ], found


def top_level(path: Path) -> dict[str, ast.stmt]:
    return {n.name: n for n in ast.parse(path.read_text(encoding="utf-8")).body if hasattr(n, "name")}


def test_every_mode_is_a_folder_with_its_descriptor_command_flow_and_report() -> None:
    """A mode's folder holds its descriptor (mode.py, its ``MODE`` in the registry), its commands
    (cli.py), its Prefect flow (flow.py), its report builder (report.py) and its report class
    (model.py, the class the descriptor names)."""
    from flows.report.modes import modes
    from flows.report.schema import report_classes

    assert MODES == ["agentic", "sample", "triggers"]
    registry = {type(m).__module__ for m in modes()}
    assert registry == {f"flows.modes.{mode}.mode" for mode in MODES}, registry
    for mode in MODES:
        folder = ROOT / "flows" / "modes" / mode
        for part in ("mode", "model", "cli", "flow", "report"):
            assert (folder / f"{part}.py").is_file(), f"{mode} has no {part}.py"
        assert "MODE =" in (folder / "mode.py").read_text(encoding="utf-8"), f"{mode}/mode.py: no MODE"
        flows = [
            name
            for name, node in top_level(folder / "flow.py").items()
            if isinstance(node, ast.AsyncFunctionDef)
            and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "flow" for d in node.decorator_list
            )
        ]
        assert len(flows) == 1, f"{mode}/flow.py: {len(flows)} Prefect flows"
    assert {c.__module__ for c in report_classes()} == {f"flows.modes.{mode}.model" for mode in MODES}


def test_a_command_loads_no_report_model_before_it_runs() -> None:
    """The registry and the parser are light: building a sample command's parser imports no report
    model and no other mode's commands (its first model call comes sooner)."""
    import subprocess
    import sys

    code = (
        "import sys; from flows.cli.main import build_parser; build_parser('run');"
        "heavy = [m for m in sys.modules if m.startswith(('flows.report.schema', 'flows.modes.agentic.cli',"
        " 'flows.modes.triggers.cli', 'tasks.stats.figures')) or m.endswith('.model')]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


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
