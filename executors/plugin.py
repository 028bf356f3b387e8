"""A Claude Code plugin as the artifact under test: detection, its manifest, its parts, and the copy a
session loads (the plugin's MCP servers left out unless the user opted in).

A plugin is a folder with ``.claude-plugin/plugin.json`` (``name`` required) and any of ``skills/<name>/
SKILL.md``, ``commands/*.md``, ``agents/*.md``, ``hooks/hooks.json`` and ``.mcp.json``; the manifest
may point at further command, agent and skill paths and declare hooks and ``mcpServers`` inline.
Claude Code lists a plugin's skills, commands and agents namespaced as ``<plugin>:<part>`` and its MCP
servers as ``plugin:<plugin>:<server>`` (seen in the init event of 2.1.197 and 2.1.330).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from executors.contents import copy_tree
from executors.errors import InputError
from executors.parsing import JsonObject, load_json

MANIFEST = Path(".claude-plugin") / "plugin.json"
MCP_FILE = ".mcp.json"
PART_DIRS = ("skills", "commands", "agents", "hooks")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Plugin:
    """What a plugin folder holds, as the CLI will list it."""

    name: str
    path: Path
    skills: tuple[str, ...]  # folder names under the plugin's skill paths
    commands: tuple[str, ...]
    agents: tuple[str, ...]
    hooks: bool
    mcp_servers: tuple[str, ...]
    workflows: tuple[str, ...] = ()  # workflows/*.md and the manifest's workflows paths
    version: str | None = None  # the manifest's version, when it gives one

    def namespaced(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{self.name}:{n}" for n in names)

    @property
    def parts(self) -> tuple[str, ...]:
        """Every listed name of the plugin: ``<plugin>:<skill|command|agent>``."""
        return self.namespaced(tuple(dict.fromkeys((*self.skills, *self.commands, *self.agents))))

    def skill_dirs(self) -> dict[str, Path]:
        """skill name -> its folder (holding SKILL.md)."""
        return {
            p.name: p
            for root in self._roots("skills")
            for p in sorted(root.glob("*"))
            if (p / "SKILL.md").is_file()
        }

    def _roots(self, key: str) -> list[Path]:
        return _part_roots(self.path, _manifest(self.path), key)

    def summary(self, mcp: bool) -> str:
        """One line for a report: what the plugin holds and whether its MCP servers ran."""
        counts = [
            f"{len(self.skills)} skill(s)",
            f"{len(self.commands)} command(s)",
            f"{len(self.agents)} agent(s)",
            *([f"{len(self.workflows)} workflow(s)"] if self.workflows else []),
            "hooks" if self.hooks else "no hooks",
        ]
        if not self.mcp_servers:
            servers = "no MCP servers"
        elif mcp:
            servers = f"MCP servers started: {', '.join(self.mcp_servers)} (--plugin-mcp)"
        else:
            servers = (
                f"MCP servers NOT started: {', '.join(self.mcp_servers)} (stripped; --plugin-mcp starts them)"
            )
        return f"plugin {self.name}: {', '.join(counts)}; {servers}"


def looks_like_plugin(path: Path) -> bool:
    """A folder with ``.claude-plugin/``, or without SKILL.md but with a plugin's part folders."""
    if not path.is_dir():
        return False
    if (path / ".claude-plugin").is_dir():
        return True
    if (path / "SKILL.md").exists():
        return False
    return (path / MCP_FILE).is_file() or any((path / d).is_dir() for d in PART_DIRS)


def _manifest(path: Path) -> JsonObject:
    file = path / MANIFEST
    if not file.is_file():
        raise InputError(
            f"{path}: {MANIFEST}: missing; a plugin folder needs a manifest with at least its name "
            '({"name": "my-plugin"})'
        )
    try:
        data = load_json(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise InputError(f"{file}: not valid JSON ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a JSON object with a name")
    return data


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _part_roots(path: Path, manifest: JsonObject, key: str) -> list[Path]:
    """The default ``<key>/`` folder and any paths the manifest adds (files or folders)."""
    roots = [path / key] + [path / p for p in _paths(manifest.get(key))]
    return [r for r in dict.fromkeys(roots) if r.exists()]


def _md_names(roots: list[Path]) -> tuple[str, ...]:
    found = []
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*.md"))
        found += [f.stem for f in files if f.suffix == ".md"]
    return tuple(dict.fromkeys(found))


def _mcp_servers(path: Path, manifest: JsonObject) -> tuple[str, ...]:
    names: list[str] = []
    sources: list[Any] = []
    if (path / MCP_FILE).is_file():
        sources.append(path / MCP_FILE)
    declared = manifest.get("mcpServers")
    sources += [path / p for p in _paths(declared)] if not isinstance(declared, dict) else [declared]
    for source in sources:
        data = source
        if isinstance(source, Path):
            try:
                data = load_json(source.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                raise InputError(f"{source}: not a readable JSON file of MCP servers ({exc})") from None
        if isinstance(data, dict):
            servers = data.get("mcpServers", data)
            names += [str(k) for k in servers] if isinstance(servers, dict) else []
    return tuple(dict.fromkeys(names))


def read_plugin(path: Path) -> Plugin:
    """The plugin at ``path``; an InputError naming the file and the field when it is malformed."""
    manifest = _manifest(path)
    name = manifest.get("name")
    where = path / MANIFEST
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{where}: name: missing or empty; the plugin's name is required")
    if not NAME.fullmatch(name):
        raise InputError(f"{where}: name: {name!r} is not a plain name (letters, digits, '.', '_', '-')")
    skills = tuple(
        p.name
        for root in _part_roots(path, manifest, "skills")
        for p in sorted(root.glob("*"))
        if (p / "SKILL.md").is_file()
    )
    plugin = Plugin(
        name=name,
        path=path,
        skills=tuple(dict.fromkeys(skills)),
        commands=_md_names(_part_roots(path, manifest, "commands")),
        agents=_md_names(_part_roots(path, manifest, "agents")),
        hooks=(path / "hooks" / "hooks.json").is_file() or "hooks" in manifest,
        mcp_servers=_mcp_servers(path, manifest),
        workflows=_md_names(_part_roots(path, manifest, "workflows")),
        version=str(manifest["version"]) if isinstance(manifest.get("version"), str | int | float) else None,
    )
    if not (plugin.parts or plugin.hooks or plugin.mcp_servers):
        raise InputError(
            f"{path}: no skills/, commands/, agents/, hooks or .mcp.json: the plugin has nothing to load"
        )
    return plugin


def runner_problem(plugin: Plugin, runner: str, loads_plugins: bool) -> str | None:
    """Why ``runner`` cannot run this plugin (None when it can). Claude Code loads the whole plugin;
    Codex and Gemini have no plugin loader here, so only a plugin of skills alone runs there (its
    skills installed the way a single skill is)."""
    if loads_plugins:
        return None
    extra = [
        *(f"commands/{c}" for c in plugin.commands),
        *(f"agents/{a}" for a in plugin.agents),
        *(["hooks"] if plugin.hooks else []),
        *(f"MCP server {m}" for m in plugin.mcp_servers),
    ]
    if not plugin.skills:
        return f"{plugin.path}: --runner {runner}: the plugin has no skills, and only its skills load outside Claude Code"
    if extra:
        return (
            f"{plugin.path}: --runner {runner}: only a plugin's skills load outside Claude Code; this one also "
            f"has {', '.join(extra[:4])}{'…' if len(extra) > 4 else ''}: run it with --runner claude"
        )
    return None


def prepared_copy(plugin_dir: str | Path, dest: Path, mcp: bool) -> Path:
    """The plugin copied to ``dest`` for one session; without ``mcp``, its ``.mcp.json`` and the
    manifest's ``mcpServers`` are left out, so no server of the plugin can start."""
    if dest.exists():
        shutil.rmtree(dest)
    copy_tree(plugin_dir, dest, "plugin")
    if not mcp:
        strip_mcp(dest)
    return dest


def strip_mcp(folder: Path) -> None:
    """A copied plugin's ``.mcp.json`` and manifest ``mcpServers`` removed: no server of it can start,
    and no token an MCP configuration holds stays in the copy."""
    (folder / MCP_FILE).unlink(missing_ok=True)
    manifest = folder / MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "mcpServers" in data:
        data.pop("mcpServers")
        manifest.write_text(json.dumps(data, indent=2), encoding="utf-8")
