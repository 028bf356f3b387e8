"""An MCP server recorded once and replayed: the real claude CLI against the scripted model, a task
whose `## MCP` names a real server (a standard-library MCP server here). Without a recording the
run is refused before any session; `--mocks record` runs the sessions with the real server behind
each stand-in and writes the recording; a replaying run then answers every call from it, the real
server never started (it is broken by then), and a call the recording lacks is a tool error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.inputs.recordings import Recording
from tests.agents import need
from tests.executors.test_conversation import crm_agent
from tests.fakes.provider import FakeProvider

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = (
    "---\nname: crm-notes\ndescription: Writes customer notes. Use for CRM tasks.\n---\nLook it up first.\n"
)
REAL_SERVER = """import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, params = m.get("method"), m.get("params") or {}
    if method == "initialize":
        r = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
             "serverInfo": {"name": "crm", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "lookup_customer", "description": "Find a customer by name",
                        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}]}
    elif method == "tools/call":
        who = params["arguments"].get("name")
        r = {"content": [{"type": "text", "text": f"{who} Corp: EMEA (answered live)"}], "isError": False}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def task(name: str, customer: str) -> str:
    return f"""# Task: {name}
difficulty: easy
category: crm
type: positive

## Prompt
Look up {customer} in the CRM and write what it says to customer.txt.

## Expected Outcome
customer.txt holds the CRM's answer.

## Verification Checks
- file_contains: Corp in customer.txt

## Grading Rubric
- Correctness: the CRM's words

## MCP
```yaml
crm:
  record:
    command: [python3, server.py]
    folder: crm-server
```
"""


def agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Looks the customer the prompt names up through the CRM's tool, then writes what it said."""
    return crm_agent(body, "Acme" if "Look up Acme" in json.dumps(body) else "Globex")


def run(root: Path, url: str, *extra: str) -> int:
    args = ["skill", "run", "--skill", str(root / "skill" / "crm-notes"), "--tasks", str(root / "suite")]
    args += ["--base-url", url, "--results-dir", str(root / "results"), "--judge-model", "claude-opus-4"]
    return main([*args, "--timeout", "90", "--no-diagnose", *extra])


def customers(root: Path) -> dict[str, str]:
    """What each session wrote, by task and arm, in the newest run."""
    newest = sorted((root / "results").glob("crm-notes-*"))[-1]
    return {
        f"{p.parts[-3]}/{p.parts[-2]}": p.read_text()
        for p in sorted((newest / "sandbox").glob("*/*/customer.txt"))
    }


def test_record_once_then_replay_hermetically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    need("claude")
    (tmp_path / "skill" / "crm-notes").mkdir(parents=True)
    (tmp_path / "skill" / "crm-notes" / "SKILL.md").write_text(SKILL)
    suite = tmp_path / "suite"
    (suite / "crm-server").mkdir(parents=True)
    (suite / "crm-server" / "server.py").write_text(REAL_SERVER)
    (suite / "task-01.md").write_text(task("Acme notes", "Acme"))
    (suite / "task-02.md").write_text(task("Acme again", "Acme"))
    monkeypatch.chdir(tmp_path)
    with FakeProvider(agent=agent) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        assert run(tmp_path, server.url) == 2  # nothing recorded yet: refused, no session
        err = capsys.readouterr().err
        assert "MCP.crm: no recording at" in err and "--mocks record" in err and not server.calls
        run(tmp_path, server.url, "--mocks", "record")
        recorded = capsys.readouterr()
        assert "not hermetic" in recorded.err + recorded.out
        live = customers(tmp_path)
        (suite / "crm-server" / "server.py").write_text("raise SystemExit(3)\n")  # never started again
        (suite / "task-02.md").write_text(task("Globex", "Globex"))  # a call the recording lacks
        run(tmp_path, server.url)
        replayed = customers(tmp_path)
    assert set(live.values()) == {"Acme Corp: EMEA (answered live)"} and len(live) == 4
    path = suite / "recordings" / "task-01" / "crm.json"
    recording = Recording.model_validate_json(path.read_text())
    (tool,) = recording.tools
    assert (
        tool.name == "lookup_customer" and tool.input_schema and tool.description == "Find a customer by name"
    )
    assert [(r.when, r.text, r.error) for r in tool.responses] == [
        ({"name": "Acme"}, "Acme Corp: EMEA (answered live)", False)
    ]
    assert replayed["task-01/with-skill"] == replayed["task-01/baseline"] == "Acme Corp: EMEA (answered live)"
    assert all(
        "no scripted response matches" in replayed[f"task-02/{arm}"] for arm in ("with-skill", "baseline")
    )
