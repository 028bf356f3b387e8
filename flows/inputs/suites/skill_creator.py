"""Suites written by Anthropic's skill-creator skill, run unchanged as agentic tasks.

skill-creator keeps a skill's evals at ``<skill>/evals/evals.json``::

    {"skill_name": "pdf", "evals": [{"id": 1, "prompt": "...", "expected_output": "...",
      "files": ["evals/files/form.pdf"], "expectations": ["The output includes X", ...]}]}

``files`` are relative to the skill's root folder (the folder holding ``evals/``); each is copied
into every session's sandbox at the same relative path before the agent starts, and the prompt names
them as skill-creator's runner does ("Input files: ..."). ``expectations`` are judged one by one
(graders.expectations); an eval without expectations falls back to the four-criterion judge against
its ``expected_output``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath
from typing import Any

from executors.agent import shipped_configuration
from executors.contents import copy_file, copy_tree, inspect_file, inspect_tree
from executors.errors import InputError, warn
from executors.parsing import JsonObject, load_json
from flows.inputs.files import read_text
from graders.agent_task import AgentTask

EVALS = Path("evals") / "evals.json"
FIELDS = ("id", "prompt", "expected_output", "files", "expectations", "eval_name")
#: Keys other writers of the format use for the same thing: agentskills.io's guide names the
#: statements ``assertions``; an eval's title is ``name`` there and ``eval_name`` in skill-creator.
ASSERTIONS, TITLES = ("expectations", "assertions"), ("eval_name", "name")
KNOWN = {*FIELDS, *ASSERTIONS, *TITLES}
NO_EXPECTATIONS_RUBRIC = (
    "This eval lists no expectations: judge the result against the expected output above."
)


def evals_file(path: Path) -> Path | None:
    """The evals.json a ``--tasks`` value names: a file called evals.json (or another JSON file with
    skill-creator's top-level ``evals``), or a skill folder that holds ``evals/evals.json``; None
    for anything else (a folder of task-*.md files, another suite format)."""
    if path.name == "evals.json" and not path.is_dir():
        return path
    if path.suffix == ".json" and path.is_file():
        try:
            data = load_json(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if isinstance(data, list):  # the list alone: evals have a prompt (a trigger set, a query)
            return path if data and all(isinstance(e, dict) and "prompt" in e for e in data) else None
        return path if isinstance(data, dict) and "evals" in data else None
    if path.is_dir() and (path / EVALS).is_file():
        return path / EVALS
    return None


def skill_root(evals: Path) -> Path:
    """The folder ``files`` are relative to: the skill's root when evals.json sits in ``evals/``."""
    parent = evals.resolve().parent
    return parent.parent if parent.name == "evals" else parent


def input_path(root: Path, value: str) -> tuple[str, Path]:
    """(the normalised relative path, the file) of one ``files`` entry; ValueError when it is
    absolute, climbs out with ``..``, leads outside the skill folder through a link, or is missing."""
    if PurePosixPath(value).is_absolute() or re.match(r"^[A-Za-z]:[\\/]", value) or not value.strip():
        raise ValueError(f"{value!r} is not a path relative to the skill folder {root}")
    parts = [p for p in re.split(r"[\\/]", value) if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{value!r} climbs out of the skill folder with '..'")
    path = root.joinpath(*parts)
    if not path.exists():
        raise ValueError(f"{value!r}: no such file ({path})")
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"{value!r} leads outside the skill folder {root} (a symbolic link)")
    try:  # a link inside it that leads out, a fifo, a huge tree or file: refused now, before any read
        if path.is_dir():
            inspect_tree(path, "files")
        else:
            inspect_file(path.resolve(), "files")  # a link inside the folder: its target, checked
    except InputError as exc:
        raise ValueError(str(exc)) from None
    relative = "/".join(parts)
    shipped = shipped_configuration(path, f"files {value!r}", PurePosixPath(relative))
    if shipped is not None:  # copied into both arms' working folders: the agent's config may not be
        raise ValueError(shipped)
    return relative, path


def strings(value: Any, field: str) -> list[str]:
    """A list of non-empty strings, or ValueError naming the entry that is not one."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{field}: expected a list of strings (got {type(value).__name__})")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"{field}[{i}]: expected a non-empty string (got {item!r})")
    return [str(v).strip() for v in value]


def eval_task(raw: JsonObject, ident: str, root: Path, skill_name: str) -> AgentTask:
    """One eval as an agentic task; ValueError('field: problem') when it is malformed."""
    prompt = raw.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"prompt: required, a non-empty string (got {prompt!r})")
    expected = raw.get("expected_output", "")
    if not isinstance(expected, str):
        raise ValueError(f"expected_output: expected a string (got {type(expected).__name__})")
    expectations = list(dict.fromkeys(e for key in ASSERTIONS for e in strings(raw.get(key), key)))
    files = []
    for i, value in enumerate(strings(raw.get("files"), "files")):
        try:
            files.append(input_path(root, value)[0])
        except ValueError as exc:
            raise ValueError(f"files[{i}]: {exc}") from None
    shown = prompt.strip() + (f"\n\nInput files: {', '.join(files)}" if files else "")
    first = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", " ", prompt.strip().splitlines()[0])
    key = next((k for k in TITLES if raw.get(k) is not None), TITLES[0])
    title = raw.get(key)  # the author's name for the eval, where it has one
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ValueError(f"{key}: expected a non-empty string (got {title!r})")
    shown_name = " ".join(title.split()) if title else first[:60] + ("…" if len(first) > 60 else "")
    name = f"eval {ident}: {shown_name}"
    return AgentTask(
        task_id=f"eval-{ident}",
        name=name,
        difficulty="-",
        category=skill_name,
        type="positive",
        prompt=shown,
        expected_outcome=expected.strip() or "(no expected_output given)",
        checks=(),
        rubric="\n".join(f"- {e}" for e in expectations) or NO_EXPECTATIONS_RUBRIC,
        tags=("skill-creator",),
        input_files=tuple(files),
        input_root=str(root),
        expectations=tuple(expectations),
    )


def eval_id(raw: Any, index: int, seen: dict[str, int]) -> str:
    """The eval's id as text (its index when it has none); ValueError on a bad or repeated id."""
    ident = raw.get("id", index) if isinstance(raw, dict) else index
    if isinstance(ident, bool) or not isinstance(ident, int | str) or str(ident).strip() == "":
        raise ValueError(f"id: expected an integer or a string (got {ident!r})")
    text = str(ident).strip()
    if text in seen:
        raise ValueError(f"id: {text!r} repeats the id of evals[{seen[text]}]")
    seen[text] = index
    return text


def load_evals(path: Path) -> tuple[list[AgentTask], str]:
    """Every eval of a skill-creator evals.json as a task, and the suite's hash (evals.json and
    every input file, so a changed input is a changed suite)."""
    if not path.is_file():
        raise InputError(f"{path}: no such evals.json (--tasks)")
    text = read_text(path)
    try:
        data = load_json(text)
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    evals = data if isinstance(data, list) else data.get("evals") if isinstance(data, dict) else None
    if not isinstance(evals, list) or not evals:
        got = (
            "an empty list"
            if evals == []
            else f"a {type(evals).__name__}"
            if evals is not None
            else "no evals key"
            if isinstance(data, dict)
            else f"a JSON {type(data).__name__}"
        )
        raise InputError(
            f'{path}: evals: expected a list of evals, {{"skill_name": ..., "evals": [...]}} or the list '
            f"alone; got {got}"
        )
    skill_name = data.get("skill_name") if isinstance(data, dict) else None
    if skill_name is not None and not isinstance(skill_name, str):
        raise InputError(f"{path}: skill_name: expected a string (got {skill_name!r})")
    root = skill_root(path)
    tasks: list[AgentTask] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(evals):
        where = f"{path}: evals[{index}]"
        try:
            ident = eval_id(raw, index, seen)
            where = f"{path}: eval {ident} (evals[{index}])"
            if not isinstance(raw, dict):
                raise ValueError(f"expected an object with {', '.join(FIELDS)}")
            tasks.append(eval_task(raw, ident, root, skill_name or root.name))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        raise InputError(problems)
    ignored = sorted({str(k) for raw in evals if isinstance(raw, dict) for k in raw} - KNOWN)
    if ignored:  # another writer's keys: read past, said once
        warn(f"{path}: evals: ignored key(s) {', '.join(ignored)} (skillab reads {', '.join(sorted(KNOWN))})")
    return tasks, suite_hash(text, root, tasks)


def suite_hash(text: str, root: Path, tasks: list[AgentTask]) -> str:
    digest = hashlib.sha256(b"evals.json\0" + text.encode())
    for rel in sorted({f for t in tasks for f in t.input_files}):
        path = root / rel
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def stage_inputs(task: AgentTask, sandbox: Path) -> list[str]:
    """Copy the task's input files into the sandbox at their relative paths, before the agent
    starts; confinement is checked again (a file may have become a link since the suite loaded)."""
    if not task.input_files or task.input_root is None:
        return []
    root = Path(task.input_root)
    for rel in task.input_files:
        _, source = input_path(root, rel)
        target = sandbox.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            copy_tree(source, target, "files")
        else:
            copy_file(source.resolve(), target, "files")
    return list(task.input_files)
