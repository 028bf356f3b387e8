"""MCP servers recorded once and replayed: a task's ``## MCP`` server may name a real server
(``record: {command: [...], folder: ...}``). ``--mocks record`` (opt-in, not hermetic) runs the sessions
with the real server behind each stand-in, which keeps every ``tools/list`` and ``tools/call`` with its
answer; afterwards those become ``recordings/<task>/<server>.json`` beside the task files. Every other
run (``--mocks replay``, the default) serves the server from its recording: its tools as listed, each
recorded call answered as it was, any other call a tool error, with nothing real started.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from executors.contents import inspect_tree
from executors.errors import InputError
from executors.parsing import load_json
from executors.schema import McpResponse, McpServer, McpTool
from graders.agent_task import AgentTask
from graders.checks import inside
from tasks.store.files import atomic_write_text

RECORDINGS = "recordings"
RECORD_LOG = "mcp_record.jsonl"  # a session's outputs: what its stand-ins relayed, with the answers
MocksMode = Literal["replay", "record"]


class Recording(BaseModel):
    """One server's recording: its tools as the real server listed them, each with the calls made of
    it and their answers as responses (``when``: the call's arguments)."""

    server: str
    recorded_at: str
    tools: list[McpTool]


def recording_path(tasks_dir: Path, task_id: str, server: str) -> Path:
    return tasks_dir / RECORDINGS / task_id / f"{server}.json"


def with_recordings(tasks: list[AgentTask], tasks_dir: Path, mode: MocksMode) -> tuple[list[AgentTask], str]:
    """The tasks with each recorded server as it runs in ``mode``: replayed from its recording (an
    InputError when none was made), or, recording, its files' folder found beside the task files. And
    the recordings' text, for the suite's hash (a new recording is a changed suite)."""
    out, texts, problems = [], [], []
    for task in tasks:
        servers = dict(task.mcp or {})
        for name, server in servers.items():
            if server.record is None:
                continue
            where = f"{tasks_dir / task.task_id}.md: MCP.{name}"
            try:
                if mode == "record":
                    servers[name] = _recording_from(server, tasks_dir, where)
                else:
                    servers[name], text = _replayed(
                        server, recording_path(tasks_dir, task.task_id, name), where
                    )
                    texts.append(text)
            except InputError as exc:
                problems += exc.lines
        out.append(task.model_copy(update={"mcp": servers or None}) if task.mcp else task)
    if problems:
        raise InputError(problems)
    return out, "\0".join(texts)


def _recording_from(server: McpServer, tasks_dir: Path, where: str) -> McpServer:
    record = server.record
    if record is None or not record.folder:
        return server
    folder = inside(tasks_dir, record.folder)
    if folder is None or not folder.is_dir():
        raise InputError(f"{where}: record.folder: {record.folder!r} must be a folder beside the task files")
    inspect_tree(folder, f"{where}: record.folder")  # no link out, bounded, before anything is copied
    return server.model_copy(update={"record": record.model_copy(update={"folder": str(folder.resolve())})})


def _replayed(server: McpServer, path: Path, where: str) -> tuple[McpServer, str]:
    if not path.is_file():
        raise InputError(
            f"{where}: no recording at {path}: run once with --mocks record (the real server runs in "
            "each session's sandbox; --allow-network when it needs the network), then review and keep it"
        )
    text = path.read_text(encoding="utf-8")
    try:
        recorded = Recording.model_validate(load_json(text))
    except (ValueError, ValidationError) as exc:
        raise InputError(f"{path}: not a recording ({str(exc).splitlines()[0]})") from None
    scripted = {t.name for t in server.tools}  # a scripted tool of the case wins over its recording
    tools = (*server.tools, *(t for t in recorded.tools if t.name not in scripted))
    return server.model_copy(update={"tools": tools, "record": None}), text


def write_recordings(sessions: Iterable[tuple[AgentTask, Path]], tasks_dir: Path) -> list[Path]:
    """After a ``--mocks record`` run: each recorded server's tools and calls, from every session's
    ``outputs`` (both arms), merged into its recording (a call made twice kept once, as first answered)."""
    found: dict[tuple[str, str], list[dict[str, object]]] = {}
    for task, outputs in sessions:
        log = outputs / RECORD_LOG
        if not log.is_file():
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("server"), str):
                found.setdefault((task.task_id, entry["server"]), []).append(entry)
    written = []
    for (task_id, server), entries in sorted(found.items()):
        path = recording_path(tasks_dir, task_id, server)
        path.parent.mkdir(parents=True, exist_ok=True)
        recording = Recording(server=server, recorded_at=_now(), tools=_tools(entries))
        atomic_write_text(path, recording.model_dump_json(indent=2, exclude_defaults=True) + "\n")
        written.append(path)
    return written


def _tools(entries: list[dict[str, object]]) -> list[McpTool]:
    listed: list[object] = next(
        (
            r.get("tools") or []
            for e in entries
            if e.get("method") == "tools/list" and isinstance(r := e.get("result"), dict)
        ),
        [],
    )
    calls: dict[str, dict[str, McpResponse]] = {}
    for e in entries:
        params, result = e.get("params"), e.get("result")
        if e.get("method") != "tools/call" or not isinstance(params, dict) or not isinstance(result, dict):
            continue
        given, content = params.get("arguments"), result.get("content")
        arguments = given if isinstance(given, dict) else {}
        content = content if isinstance(content, list) else []
        text = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        key = json.dumps(arguments, sort_keys=True)
        answered = McpResponse(when=arguments or None, text=text, error=bool(result.get("isError")))
        calls.setdefault(str(params.get("name")), {}).setdefault(key, answered)
    tools = []
    for tool in listed if isinstance(listed, list) else []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        answers = sorted(
            calls.get(tool["name"], {}).values(), key=lambda r: -len(r.when or {})
        )  # exact first
        schema = tool.get("inputSchema")
        tools.append(
            McpTool(
                name=tool["name"],
                description=str(tool.get("description") or ""),
                input_schema=schema if isinstance(schema, dict) else None,
                responses=tuple(answers),
            )
        )
    return tools


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
