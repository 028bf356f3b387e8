"""An MCP server that stands in for a real one: it answers ``tools/list`` and ``tools/call`` from a
case's scripted responses, over stdio (newline-delimited JSON-RPC 2.0, the transport the agent CLIs
start a local server with). It runs inside the session's sandbox, with the system's Python and the
standard library only (nothing of skillab, nothing of the host): ``python3 mcp_standin.py SPEC NAME``
where SPEC is the JSON of the case's servers and NAME the one to serve.

A response is chosen by the first ``when`` whose every key equals the call's argument (as text), or
that has no ``when``; its text may name the call's arguments as ``{{input.<name>}}``; ``error: true``
answers as a failed tool call. Every call is appended to ``<SPEC>.calls.jsonl`` (what the agent asked).

A server with ``record`` (``--mocks record`` only) is relayed instead: the stand-in starts the real
server's command and passes every message both ways, appending each ``tools/list`` and ``tools/call``
with its answer to ``<SPEC>.record.jsonl``, from which skillab writes the recording later runs replay.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

#: A JSON-RPC message or part of one (this script runs alone: it cannot import executors.parsing's).
JsonObject = dict[str, Any]
PROTOCOL = "2025-06-18"  # answered when the client asks for none
INPUT = re.compile(r"\{\{\s*input\.([A-Za-z0-9_]+)\s*\}\}")
#: ``{{file:fixtures/{input.id}.json}}``: a fixture of the server, its path naming the call's arguments.
FILE = re.compile(r"\{\{\s*file:((?:[^{}]|\{input\.[A-Za-z0-9_]+\})+?)\s*\}\}")
INNER = re.compile(r"\{input\.([A-Za-z0-9_]+)\}")


def matches(when: JsonObject | None, arguments: JsonObject) -> bool:
    return not when or all(str(arguments.get(k)) == str(v) for k, v in when.items())


def call(server: JsonObject, name: str, arguments: JsonObject) -> JsonObject:
    tool = next((t for t in server.get("tools", []) if t["name"] == name), None)
    if tool is None:
        return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}
    chosen = next((r for r in tool.get("responses", []) if matches(r.get("when"), arguments)), None)
    if chosen is None:
        return {"content": [{"type": "text", "text": "no scripted response matches"}], "isError": True}

    def value(match: re.Match[str]) -> str:
        return str(arguments.get(match.group(1), ""))

    files, missing = server.get("files") or {}, []

    def fixture(match: re.Match[str]) -> str:
        path = INNER.sub(value, match.group(1))
        if path not in files:
            missing.append(path)
        return str(files.get(path, ""))

    text = INPUT.sub(value, FILE.sub(fixture, str(chosen.get("text", ""))))
    if missing:
        return {"content": [{"type": "text", "text": f"no fixture {missing[0]}"}], "isError": True}
    return {"content": [{"type": "text", "text": text}], "isError": bool(chosen.get("error"))}


def answer(server: JsonObject, name: str, message: JsonObject) -> JsonObject | None:
    """The reply to one JSON-RPC message; None for a notification."""
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:
        return None
    if method == "initialize":
        result: JsonObject = {
            "protocolVersion": params.get("protocolVersion") or PROTOCOL,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": name, "version": "skillab-standin"},
        }
    elif method == "tools/list":
        result = {
            "tools": [
                {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "inputSchema": t.get("input_schema") or {"type": "object"},
                }
                for t in server.get("tools", [])
            ]
        }
    elif method == "tools/call":
        arguments = params.get("arguments")
        result = call(server, str(params.get("name")), arguments if isinstance(arguments, dict) else {})
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def message_of(line: str) -> JsonObject | None:
    """A JSON-RPC message of a line (its params a mapping), None for anything else."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):  # not a JSON-RPC message: nothing to answer, nothing to crash on
        return None
    return message if isinstance(message.get("params") or {}, dict) else {**message, "params": {}}


def log_call(log: Path, name: str, message: JsonObject) -> None:
    if message.get("method") == "tools/call":
        params = message.get("params") or {}
        made = {"server": name, "name": params.get("name"), "arguments": params.get("arguments") or {}}
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(made) + "\n")


def relay(spec: Path, name: str, record: JsonObject) -> None:
    """The real server behind the stand-in: every message passed both ways, each tools/list and
    tools/call recorded with its answer (``--mocks record``)."""
    calls, kept = spec.with_name(f"{spec.name}.calls.jsonl"), spec.with_name(f"{spec.name}.record.jsonl")
    folder = spec.parent / f"{name}.server"
    real = subprocess.Popen(
        [str(a) for a in record["command"]],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        cwd=folder if folder.is_dir() else spec.parent, env={**os.environ, **(record.get("env") or {})},
    )  # fmt: skip
    asked: dict[str, JsonObject] = {}
    lock = threading.Lock()

    def answers() -> None:
        for line in real.stdout or ():
            reply = message_of(line)
            with lock:
                request = asked.pop(json.dumps(reply.get("id")), None) if reply else None
            if request is not None and reply is not None and "result" in reply:
                entry = {"server": name, "method": request["method"], "params": request.get("params") or {}}
                with kept.open("a", encoding="utf-8") as out:
                    out.write(json.dumps({**entry, "result": reply["result"]}) + "\n")
            sys.stdout.write(line)
            sys.stdout.flush()

    pump = threading.Thread(target=answers, daemon=True)
    pump.start()
    for line in sys.stdin:
        message = message_of(line)
        if message is not None:
            log_call(calls, name, message)
            if message.get("method") in ("tools/list", "tools/call") and "id" in message:
                with lock:
                    asked[json.dumps(message["id"])] = message
        try:
            if real.stdin is not None:
                real.stdin.write(line)
                real.stdin.flush()
        except BrokenPipeError:  # the real server died: its answers end, and so does the session's server
            break
    if real.stdin is not None and not real.stdin.closed:
        with contextlib.suppress(BrokenPipeError):
            real.stdin.close()
    pump.join(timeout=10)
    real.terminate()


def serve(spec: Path, name: str) -> None:
    server = json.loads(spec.read_text(encoding="utf-8"))[name]
    if server.get("record"):
        relay(spec, name, server["record"])
        return
    log = spec.with_name(f"{spec.name}.calls.jsonl")
    for line in sys.stdin:
        message = message_of(line)
        if message is None:
            continue
        log_call(log, name, message)
        reply = answer(server, name, message)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2])
