"""A user's real Claude Code setup, snapshotted for trigger runs: ``--environment HOME`` (and
``--environment-project DIR``), or ``--from-home`` (your HOME and the current folder).

What is taken, and only that (an allowlist: credentials, history, sessions, caches, MCP and hook
settings are never read):

- user level: ``~/.claude/skills/<name>/``, ``~/.claude/CLAUDE.md``, the enabled plugins of
  ``~/.claude/plugins/installed_plugins.json`` (their installed folders, MCP servers left out), and the
  keys of ``~/.claude/settings.json`` that change how skills are listed;
- project level: ``.claude/skills/<name>/``, ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``AGENTS.md`` and the
  same settings keys of ``.claude/settings.json``.

Every folder is copied under the hostile-input rules (executors/contents.py: a link that leaves it,
a special file or an oversized tree is refused, one line), into a snapshot folder named by the hash
of its content. A session's HOME and working folder receive a copy of it; a skill under test of the
same name replaces the installed one (a new version), or is added; one installed unchanged is left
out of the control arm (flows/modes/triggers/plan.with_environment).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from executors.claude_code import budget_fraction
from executors.contents import Bounds, copy_file, copy_tree, inspect_file, tree_digest
from executors.errors import InputError
from executors.limits import alive
from executors.parsing import JsonObject
from executors.plugin import looks_like_plugin, read_plugin, strip_mcp
from executors.schema import ENVIRONMENT_PARTS, control_character
from executors.skill_md import read_skill_md

#: settings.json keys that change what the model is shown of skills (Claude Code 2.1.332).
LISTING_SETTINGS = (
    "skillListingBudgetFraction",
    "skillListingMaxDescChars",
    "disableBundledSkills",
    "skillOverrides",
)
USER_MEMORY = (".claude/CLAUDE.md",)
PROJECT_MEMORY = ("CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md")
STAGING = ".staging-"
MAX_DESCRIPTION_CHARS = 1536  # Claude Code's skillListingMaxDescChars default
MAX_SKILLS = 1000  # a skills folder larger than this is not a setup anyone lists: refused
HOME_PART, PROJECT_PART, PLUGINS_PART = ENVIRONMENT_PARTS


@dataclass(frozen=True)
class Environment:
    """A snapshot: ``path`` holds ``home/``, ``project/`` and ``plugins/<name>/``."""

    path: Path
    sha256: str
    source: str  # what was given, as the report shows it
    skills: tuple[str, ...]  # the names the CLI lists them by (a plugin's as plugin:skill)
    plugins: tuple[str, ...]
    memory: tuple[str, ...]  # instruction files taken, as home/... or project/...
    settings: tuple[str, ...]  # listing settings taken, as home:key or project:key
    listing_chars: int = 0  # its skills' listing entries in full (before any budget): for --dry-run
    context_chars: int = 0  # its instruction files, sent with every request
    budget_fraction: float | None = None  # skillListingBudgetFraction, where its settings set it

    def skill_dir(self, name: str) -> Path | None:
        """The snapshot's folder of an installed (not a plugin's) skill, None when it has none."""
        found = [self.path / part / ".claude" / "skills" / name for part in (HOME_PART, PROJECT_PART)]
        return next((f for f in found if (f / "SKILL.md").is_file()), None)

    def record(self) -> JsonObject:
        """What the report keeps: the hash and what the snapshot holds (never a path's content)."""
        return {
            "source": self.source,
            "sha256": self.sha256,
            "skills": list(self.skills),
            "plugins": list(self.plugins),
            "memory": list(self.memory),
            "settings": list(self.settings),
        }


@dataclass
class Tally:
    """What a snapshot has copied so far, against one bound for the whole of it (the same as one
    copied folder's: a HOME of a thousand skills of 50 MB each is refused, not copied)."""

    bounds: Bounds = field(default_factory=Bounds.from_env)
    size: int = 0
    files: int = 0

    def copy(self, source: Path, dest: Path, what: str) -> None:
        copy_tree(source, dest, what)
        for path in dest.rglob("*"):
            if path.is_file() and not path.is_symlink():
                self.size, self.files = self.size + path.stat().st_size, self.files + 1
        if self.size > self.bounds.max_bytes or self.files > self.bounds.max_files:
            raise InputError(
                f"{what}: the environment passes {self.bounds.max_bytes // (1024 * 1024)} MB or "
                f"{self.bounds.max_files:,} files ($SKILLAB_COPY_MAX_MB, $SKILLAB_COPY_MAX_FILES): refused"
            )


def inside(path: Path, root: Path, where: str) -> Path:
    """``path``, refused (one line) when it is a link that leads out of ``root``: ``~/.claude`` or
    its ``skills`` linked elsewhere would bring in what the folder given does not hold."""
    if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root)):
        raise InputError(
            f"{where}: {path}: a link that leaves the folder (-> {os.readlink(path)}): refused; give the "
            "folder it leads to"
        )
    return path


def _skills(root: Path, dest: Path, where: str, tally: Tally) -> list[str]:
    inside(root / ".claude", root, where)
    folder = inside(root / ".claude" / "skills", root, where)
    if not folder.is_dir():
        return []
    entries = sorted(folder.iterdir())
    if len(entries) > MAX_SKILLS:
        raise InputError(f"{where}: {folder}: more than {MAX_SKILLS} entries: refused")
    names = []
    for entry in entries:
        if not (entry / "SKILL.md").is_file():
            continue
        if ":" in entry.name or control_character(entry.name):
            raise InputError(
                f"{where}: {entry!r}: a skill folder name with ':' (plugin skills are named so) or a "
                "control character: refused"
            )
        if entry.is_symlink():
            raise InputError(
                f"{where}: {entry}: the skill is a link (-> {os.readlink(entry)}): refused; copy the folder in"
            )
        tally.copy(entry, dest / ".claude" / "skills" / entry.name, f"{where} skill {entry.name}")
        names.append(entry.name)
    return names


def _settings(root: Path, dest: Path, where: str) -> tuple[list[str], JsonObject]:
    """The listing keys of ``root/.claude/settings.json`` written to ``dest``; and the whole file
    as read (for enabledPlugins), never written."""
    path = root / ".claude" / "settings.json"
    if not path.is_file():
        return [], {}
    data = _json(path, where)
    kept = {k: data[k] for k in LISTING_SETTINGS if k in data}
    if kept:
        out = dest / ".claude" / "settings.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(kept, indent=2), encoding="utf-8")
    return sorted(kept), data


def _json(path: Path, where: str) -> JsonObject:
    inspect_file(path, where)  # a regular file within the size bound, not a link or a fifo
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where}: {path}: not JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: {path}: not a JSON object")
    return data


def _memory(root: Path, dest: Path, names: tuple[str, ...], where: str) -> list[str]:
    taken = []
    for rel in names:
        if os.path.lexists(root / rel):  # a link or a fifo is refused by copy_file, never skipped
            copy_file(root / rel, dest / rel, f"{where} {rel}")
            taken.append(rel)
    return taken


def _plugins(home: Path, settings: JsonObject, project: Path | None, dest: Path, tally: Tally) -> list[str]:
    """The enabled installed plugins' folders, each copied to ``dest/<plugin name>``."""
    base = inside(home / ".claude" / "plugins", home, "--environment")
    index = base / "installed_plugins.json"
    if not index.is_file():
        return []
    plugins = _json(index, "--environment").get("plugins")
    flags = settings.get("enabledPlugins")
    enabled: JsonObject = flags if isinstance(flags, dict) else {}
    names: list[str] = []
    for key, records in (plugins if isinstance(plugins, dict) else {}).items():
        if enabled.get(key) is False or not isinstance(records, list):
            continue
        for record in records:
            folder = _install_folder(record, base, project)
            if folder is None:
                continue
            name = read_plugin(folder).name
            tally.copy(folder, dest / name, f"--environment: plugin {key}")
            strip_mcp(dest / name)  # the snapshot never holds an MCP configuration (nor its tokens)
            names.append(name)
            break
    return names


def _install_folder(record: Any, base: Path, project: Path | None) -> Path | None:
    """Where a plugin record's files are in the given HOME (its installPath names the user's own
    HOME, which the given folder may be a copy of); None for another project's plugin or a folder
    that is not a plugin. A path that leaves the plugins folder is refused."""
    if not isinstance(record, dict) or not isinstance(record.get("installPath"), str):
        return None
    scope = record.get("scope", "user")
    if scope != "user" and (project is None or record.get("projectPath") != str(project)):
        return None
    path = record["installPath"]
    marker = "/.claude/plugins/"
    rel = path.split(marker, 1)[1] if marker in path else None
    folder = (base / rel) if rel else None
    if folder is None or not Path(os.path.realpath(folder)).is_relative_to(os.path.realpath(base)):
        raise InputError(f"--environment: plugin installPath {path!r}: not inside {base}: refused")
    return folder if looks_like_plugin(folder) else None


def snapshot(home: Path | None, project: Path | None, store: Path, source: str) -> Environment:
    """Copy what the module's docstring lists from ``home`` and ``project`` into ``store/<hash>``."""
    for given, flag in ((home, "--environment"), (project, "--environment-project")):
        if given is not None and not given.is_dir():
            raise InputError(f"{flag}: {given}: {'not a folder' if given.exists() else 'no such folder'}")
    store.mkdir(parents=True, exist_ok=True)
    _sweep(store)
    stage = store / f"{STAGING}{os.getpid()}-{uuid.uuid4().hex}"
    try:
        skills, memory, settings, plugins = _stage(home, project, stage)
        sha = tree_digest(stage, "environment")
        final = store / sha[:16]
        if (
            final.exists() and tree_digest(final, "environment") != sha
        ):  # changed since it was made: made again
            shutil.rmtree(final)
        try:
            stage.rename(final)
        except OSError:  # made meanwhile by a run snapshotting the same setup: the same content
            shutil.rmtree(stage)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return Environment(
        final,
        sha,
        source,
        tuple(skills),
        tuple(plugins),
        tuple(memory),
        tuple(settings),
        listing_chars=sum(len(f"- {name}: {text}") for name, text in descriptions(final).items()),
        context_chars=sum((final / m).stat().st_size for m in memory),
        budget_fraction=budget_fraction(final / HOME_PART, final / PROJECT_PART),
    )


def descriptions(root: Path) -> dict[str, str]:
    """Each skill of a snapshot and its description, capped as Claude Code caps it in the listing."""
    out = {}
    folders = [root / part / ".claude" / "skills" for part in (HOME_PART, PROJECT_PART)]
    found = [
        (f.name, f)
        for base in folders
        if base.is_dir()
        for f in sorted(base.iterdir())
        if (f / "SKILL.md").is_file()
    ]
    for plugin_dir in sorted((root / PLUGINS_PART).iterdir()) if (root / PLUGINS_PART).is_dir() else []:
        plugin = read_plugin(plugin_dir)
        found += [(f"{plugin.name}:{n}", Path(d)) for n, d in plugin.skill_dirs().items()]
    for name, folder in found:
        text = (folder / "SKILL.md").read_text(encoding="utf-8", errors="replace")
        out[name] = read_skill_md(text).description()[:MAX_DESCRIPTION_CHARS]
    return out


def _sweep(store: Path) -> None:
    """Staging folders of snapshots whose process is gone (a run killed while copying)."""
    for folder in store.glob(f"{STAGING}*"):
        owner = folder.name.removeprefix(STAGING).split("-", 1)[0]
        if owner.isdigit() and not alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


def _stage(
    home: Path | None, project: Path | None, stage: Path
) -> tuple[list[str], list[str], list[str], list[str]]:
    skills: list[str] = []
    memory: list[str] = []
    settings: list[str] = []
    plugin_names: list[str] = []
    tally = Tally()
    for root, part, files in ((home, HOME_PART, USER_MEMORY), (project, PROJECT_PART, PROJECT_MEMORY)):
        if root is None:
            continue
        where = "--environment" if part == HOME_PART else "--environment-project"
        dest = stage / part
        dest.mkdir(parents=True, exist_ok=True)
        skills += _skills(root, dest, where, tally)
        memory += [f"{part}/{m}" for m in _memory(root, dest, files, where)]
        kept, data = _settings(root, dest, where)
        settings += [f"{part}:{k}" for k in kept]
        if part == HOME_PART:
            plugin_names = _plugins(root, data, project, stage / PLUGINS_PART, tally)
    for name in plugin_names:
        plugin = read_plugin(stage / PLUGINS_PART / name)
        skills += plugin.namespaced(plugin.skills)
    twice = sorted({s for s in skills if skills.count(s) > 1})
    if twice:
        raise InputError(
            f"--environment: skill {twice[0]!r} is installed twice (user, project or plugin); keep one"
        )
    return skills, memory, settings, plugin_names
