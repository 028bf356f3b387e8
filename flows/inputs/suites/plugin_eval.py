"""A Claude Code plugin's eval suite (``claude plugin eval``), read in place as skillab tasks.

``--suite PLUGIN`` (or ``--tasks PLUGIN``) names the plugin folder (``.claude-plugin/plugin.json`` or
``plugin.json``; its ``experimental.evals`` names the eval folder, else ``evals/``) or the eval folder
itself. Every folder below it holding ``case.yaml``, ``prompt.md`` or ``graders/`` is a case
(``results/`` and ``mocks/`` are the official runner's own). The plugin's skills are
``skills/<name>/SKILL.md``. Parsing and grading are ``graders.plugin_eval``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from executors.agent import shipped_configuration
from executors.contents import inspect_tree
from executors.errors import InputError
from executors.parsing import JsonObject, load_json
from executors.schema import McpServer
from flows.inputs.files import parse_data, read_text
from flows.inputs.suites.plugin_mocks import mock_servers
from graders.agent_task import AgentTask
from graders.checks import inside
from graders.plugin_eval import LlmGrader, PluginCase, merge_case, parse_case

MANIFESTS = (Path(".claude-plugin") / "plugin.json", Path("plugin.json"))
SKIPPED = {"results", "mocks", "graders", "node_modules", ".git"}
CASE_FILES = ("case.yaml", "prompt.md")


def manifest(root: Path) -> JsonObject | None:
    for rel in MANIFESTS:
        path = root / rel
        if path.is_file():
            try:
                data = load_json(read_text(path))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
            except ValueError as exc:
                raise InputError(f"{path}: not valid JSON ({exc})") from None
            return data if isinstance(data, dict) else {}
    return None


def _is_case(folder: Path) -> bool:
    return any((folder / f).is_file() for f in CASE_FILES) or (folder / "graders").is_dir()


def eval_dir(folder: Path) -> Path | None:
    """The folder holding the cases: the manifest's experimental.evals or evals/ below a plugin, or
    ``folder`` itself when cases sit right in it; None when ``folder`` is no plugin suite."""
    found = manifest(folder)
    experimental = (found or {}).get("experimental")
    named = experimental.get("evals") if isinstance(experimental, dict) else None
    name: str = named if isinstance(named, str) else "evals"
    if (folder / name).is_dir() and (
        found is not None or any(_is_case(p) for p in (folder / name).iterdir())
    ):
        return folder / name
    under_plugin = folder.parent != folder and manifest(folder.parent) is not None
    if folder.is_dir() and under_plugin and eval_dir(folder.parent) == folder:
        return folder
    if folder.is_dir() and any(p.is_dir() and _is_case(p) for p in folder.iterdir()):
        return folder
    return None


def is_plugin_suite(folder: Path) -> bool:
    return folder.is_dir() and eval_dir(folder) is not None


def plugin_root(folder: Path) -> Path:
    """The plugin folder of a suite path (the eval folder's parent when given the eval folder)."""
    found = eval_dir(folder)
    return folder if found is None or found != folder else folder.parent


def case_folders(evals: Path) -> list[Path]:
    out: list[Path] = []
    for child in sorted(p for p in evals.iterdir() if p.is_dir() and p.name not in SKIPPED):
        if child.name.startswith("."):
            continue
        if _is_case(child):
            out.append(child)
        out += case_folders(child)
    return out


def load_case(folder: Path, evals: Path | None = None) -> tuple[PluginCase, str, dict[str, McpServer]]:
    """One case, the text it was read from (for the suite's hash) and its mocked MCP servers (the
    suite's ``evals/mocks`` and its own ``mocks/``, as stand-ins)."""
    yaml_path, prompt_path = folder / "case.yaml", folder / "prompt.md"
    case_yaml = None
    texts = []
    if yaml_path.is_file():
        text = read_text(yaml_path)
        texts.append(text)
        case_yaml = parse_data(yaml_path, text)
        if not isinstance(case_yaml, dict):
            raise InputError(f"{yaml_path}: case: must be a YAML mapping")
    prompt = None
    if prompt_path.is_file():
        prompt = (str(prompt_path), read_text(prompt_path))
        texts.append(prompt[1])
    graders = [(str(p), read_text(p)) for p in sorted((folder / "graders").glob("*.md"))]
    texts += [t for _, t in graders]
    label = str(yaml_path if case_yaml is not None else prompt_path if prompt else folder)
    data = merge_case(case_yaml, prompt, graders, folder.name)
    own = own_plugin_only(data.get("plugins"), folder, evals or folder)
    case = parse_case(data, label)
    if own:  # the plugin under test, named by the case: what every case gets (with it, and without)
        case = case.model_copy(update={"unsupported": tuple(u for u in case.unsupported if u != "plugins")})
    if case.history_file:
        history = inside(folder, case.history_file)
        where = f"{label}: context.history_file: {case.history_file!r}"
        if history is None or (history.exists() and not history.is_file()):
            raise InputError(f"{where}: must be a file inside the case folder")
        if not history.is_file():
            raise InputError(f"{where}: no such file in the case folder")
        texts.append(history.read_bytes().decode("utf-8", "replace"))
    for entry in case.add_dirs:  # fixture folders inside the case, copied under the copy rules
        fixture = inside(folder, entry)
        where = f"{label}: context.add_dirs: {entry!r}"
        if fixture is None or fixture.resolve() == folder.resolve():
            raise InputError(
                f"{where}: must name a folder inside the case folder (not the case folder itself)"
            )
        if not fixture.is_dir():
            raise InputError(f"{where}: no such folder in the case folder")
        inspect_tree(fixture, f"{label}: context.add_dirs")
        if (shipped := shipped_configuration(fixture, where)) is not None:  # a CLI reads add-dirs too
            raise InputError(shipped)
    servers, unplayed = mock_servers(evals or folder, folder)
    texts += [json.dumps({k: v.model_dump(mode="json") for k, v in servers.items()}, sort_keys=True)]
    graded = tuple(u for u in case.unsupported if not (servers and u == "mock_calls"))  # served: graded
    case = case.model_copy(update={"unsupported": (*graded, *unplayed)})
    return case, "\0".join(texts), servers


def own_plugin_only(entries: object, case_dir: Path, evals: Path) -> bool:
    """Whether a case's ``plugins`` names only the plugin its suite belongs to (``["../.."]`` from
    ``evals/<case>/``): paths relative to the case's folder, as the official runner resolves them, the
    plugin being the nearest folder above the case that holds a manifest."""
    if not isinstance(entries, list) or not entries or not all(isinstance(e, str) and e for e in entries):
        return False
    top = evals.resolve().parent  # never above the suite: a folder outside it is not read
    ancestors = [p for p in case_dir.resolve().parents if p.is_relative_to(top)]
    own = next((p for p in ancestors if manifest(p) is not None), None)
    return own is not None and all((case_dir / e).resolve() == own for e in entries)


def load_plugin_tasks(folder: Path) -> tuple[list[AgentTask], str]:
    """Every case of the suite as an AgentTask carrying it, and the suite's hash."""
    evals = eval_dir(folder)
    if evals is None:
        raise InputError(
            f"{folder}: no plugin eval suite (no evals/ folder with case.yaml or prompt.md cases)"
        )
    folders = case_folders(evals)
    if not folders:
        raise InputError(f"{evals}: no cases (folders with case.yaml or prompt.md + graders/*.md)")
    tasks, problems = [], []
    names: dict[str, str] = {}
    digest = hashlib.sha256()
    for sub in folders:
        rel = sub.relative_to(evals).as_posix()
        try:
            case, text, servers = load_case(sub, evals)
        except InputError as exc:
            problems += exc.lines
            continue
        if case.name in names:
            problems.append(f"{sub}: name: {case.name!r} is also the name of {names[case.name]}")
            continue
        names[case.name] = rel
        digest.update(rel.encode() + b"\0" + text.encode())
        tasks.append(case_task(case, sub, servers))
    if problems:
        raise InputError(problems)
    return tasks, digest.hexdigest()


def case_task(case: PluginCase, folder: Path, servers: dict[str, McpServer] | None = None) -> AgentTask:
    """The case in skillab's task model; its graders, not checks or the four-criterion rubric,
    decide it."""
    rubric = "\n".join(f"- {g.name}: {g.criteria}" for g in case.graders if isinstance(g, LlmGrader))
    return AgentTask(
        task_id=case.name,
        name=case.name,
        difficulty="-",  # a plugin eval case has none
        category=", ".join(case.tags) or "plugin-eval",
        type="negative-control" if case.expects_skill is False else "positive",
        prompt=case.prompt,
        expected_outcome=case.expected_outcome or case.description or "",
        checks=(),
        rubric=rubric or "(graded by the suite's graders)",
        tags=case.tags,
        plugin_case=case,
        case_dir=str(folder.resolve()),
        mcp=servers or None,
    )


def plugin_skills(folder: Path) -> list[Path]:
    """The plugin's skill folders (skills/<name>/SKILL.md)."""
    root = plugin_root(folder)
    return sorted(p.parent for p in (root / "skills").glob("*/SKILL.md"))


def suite_skill(folder: Path) -> Path:
    """The artifact of a suite: the whole plugin when it has a manifest (loaded by Claude Code's
    --plugin-dir, as `claude plugin eval` loads it), else the skill of a one-skill plugin; with
    several skills and no manifest, --skill must choose (InputError listing them)."""
    if not is_plugin_suite(folder):
        raise InputError(f"--suite: {folder} is not a plugin with an eval suite (no evals/ cases)")
    if manifest(plugin_root(folder)) is not None:
        return plugin_root(folder).resolve()
    skills = plugin_skills(folder)
    if len(skills) == 1:
        return skills[0].resolve()
    if not skills:
        raise InputError(f"--suite: {plugin_root(folder)} has no skills/<name>/SKILL.md to benchmark")
    names = ", ".join(p.name for p in skills)
    raise InputError(f"--skill: the plugin has several skills ({names}); name the one to benchmark")
