"""``claude plugin eval``'s tool mocks, run unchanged as skillab's MCP stand-ins.

A mock is ``mocks/<server>/<tool>.md`` in the eval folder (the suite's) or in a case folder (the
case's, overriding the suite's file by file): its body is the tool's result, with ``{{input.<name>}}``
and ``{{file:fixtures/...}}`` (which may name ``{input.<name>}``) substituted from the call and the
server's ``fixtures/`` folder; ``error: true`` answers as a failed call. ``_tools.json`` (a saved
``tools/list`` answer) gives the tools' descriptions and input schemas. What skillab does not play is
named, so the case is refused or run without it (``--skip-unsupported``): mocks answered by a model
(``type: agent``, ``_server.md``) and ``expect`` (input checks that abort the run).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from executors.contents import Bounds, inspect_tree
from executors.errors import InputError
from executors.parsing import JsonObject
from executors.schema import McpResponse, McpServer, McpTool, mcp_name
from flows.inputs.files import read_text

MOCKS = "mocks"
FIXTURES = "fixtures"
#: A server's fixtures travel in its stand-in's spec: bounded, as every input is.
FIXTURE_BYTES = 4 << 20


def front_matter(text: str, label: str) -> tuple[JsonObject, str]:
    """(the YAML front matter, the body) of a mock file."""
    if not text.startswith("---\n"):
        return {}, text
    head, sep, body = text[4:].partition("\n---")
    if not sep:
        raise InputError(f"{label}: front matter: no closing '---'")
    try:
        data = yaml.safe_load(head) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"{label}: front matter: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{label}: front matter: must be a mapping")
    return data, body.removeprefix("\n")


def _mock_files(roots: list[Path]) -> dict[str, dict[str, Path]]:
    """server -> file name -> path, a later root's file replacing an earlier one's."""
    found: dict[str, dict[str, Path]] = {}
    for root in roots:
        if not root.is_dir():
            continue
        inspect_tree(root, f"{root}: mocks")  # links out, special files, huge trees: refused
        for server in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for path in sorted(server.iterdir()):
                if path.is_file() and (path.suffix == ".md" or path.name == "_tools.json"):
                    found.setdefault(server.name, {})[path.name] = path
    return found


def _fixtures(roots: list[Path], server: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for root in roots:
        folder = root / server / FIXTURES
        if folder.is_dir():
            inspect_tree(folder, f"{folder}: fixtures", Bounds(max_bytes=FIXTURE_BYTES, max_files=1000))
            files |= {
                f"{FIXTURES}/{p.relative_to(folder).as_posix()}": read_text(p)
                for p in sorted(folder.rglob("*"))
                if p.is_file()
            }
    return files


def _schemas(path: Path | None) -> dict[str, JsonObject]:
    """tool -> its entry of a saved ``tools/list`` answer."""
    if path is None:
        return {}
    try:
        data = json.loads(read_text(path))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    tools = data.get("tools") if isinstance(data, dict) else data
    return {str(t["name"]): t for t in tools or [] if isinstance(t, dict) and t.get("name")}


def mock_servers(evals: Path, case: Path) -> tuple[dict[str, McpServer], list[str]]:
    """The case's mocked servers as stand-ins, and what of the mocks skillab does not play."""
    roots = [evals / MOCKS, case / MOCKS]
    servers: dict[str, McpServer] = {}
    unsupported: list[str] = []
    for server, files in _mock_files(roots).items():
        label = f"{MOCKS}/{server}"
        try:
            mcp_name(server, f"{label}: server")
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if "_server.md" in files:
            unsupported.append(f"{label}/_server.md (a model answering the server's tools)")
        schemas = _schemas(files.get("_tools.json"))
        tools = []
        for name, path in files.items():
            if name.startswith("_") or not name.endswith(".md"):
                continue
            meta, body = front_matter(read_text(path), str(path))
            if meta.get("type", "fixed") != "fixed":
                unsupported.append(f"{label}/{name}: type: {meta.get('type')} (a model answering the tool)")
                continue
            if "expect" in meta:
                unsupported.append(f"{label}/{name}: expect (input checks that abort the run)")
            tool = Path(name).stem
            saved = schemas.get(tool, {})
            try:
                tools.append(
                    McpTool(
                        name=tool,
                        description=str(saved.get("description") or meta.get("description") or ""),
                        input_schema=saved.get("inputSchema"),
                        responses=(McpResponse(text=body, error=bool(meta.get("error"))),),
                    )
                )
            except ValueError as exc:
                raise InputError(f"{path}: {exc}") from None
        if tools:
            servers[server] = McpServer(tools=tuple(tools), files=_fixtures(roots, server))
    return servers, unsupported
