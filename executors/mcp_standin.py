"""An MCP server that stands in for a real one: it answers ``tools/list`` and ``tools/call`` from a
case's scripted responses, over stdio (newline-delimited JSON-RPC 2.0, the transport the agent CLIs
start a local server with). It runs inside the session's sandbox, with the system's Python and the
standard library only (nothing of skillab, nothing of the host): ``python3 mcp_standin.py SPEC NAME``
where SPEC is the JSON of the case's servers and NAME the one to serve.

A response is chosen by the first ``when`` whose every key equals the call's argument (as text), or
that has no ``when``; its text may name the call's arguments as ``{{input.<name>}}``; ``error: true``
answers as a failed tool call. Every call is appended to ``<SPEC>.calls.jsonl`` (what the agent asked).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

PROTOCOL = "2025-06-18"  # answered when the client asks for none
INPUT = re.compile(r"\{\{\s*input\.([A-Za-z0-9_]+)\s*\}\}")
#: ``{{file:fixtures/{input.id}.json}}``: a fixture of the server, its path naming the call's arguments.
FILE = re.compile(r"\{\{\s*file:((?:[^{}]|\{input\.[A-Za-z0-9_]+\})+?)\s*\}\}")
INNER = re.compile(r"\{input\.([A-Za-z0-9_]+)\}")


def matches(when: dict[str, Any] | None, arguments: dict[str, Any]) -> bool:
    return not when or all(str(arguments.get(k)) == str(v) for k, v in when.items())


def call(server: dict[str, Any], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
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


def answer(server: dict[str, Any], name: str, message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message; None for a notification."""
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
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


def serve(spec: Path, name: str) -> None:
    server = json.loads(spec.read_text(encoding="utf-8"))[name]
    log = spec.with_name(f"{spec.name}.calls.jsonl")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):  # not a JSON-RPC message: nothing to answer, nothing to crash on
            continue
        if not isinstance(message.get("params") or {}, dict):
            message = {**message, "params": {}}
        if message.get("method") == "tools/call":
            params = message.get("params") or {}
            with log.open("a", encoding="utf-8") as out:
                made = {
                    "server": name,
                    "name": params.get("name"),
                    "arguments": params.get("arguments") or {},
                }
                out.write(json.dumps(made) + "\n")
        reply = answer(server, name, message)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2])
