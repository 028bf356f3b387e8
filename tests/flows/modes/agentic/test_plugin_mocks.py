"""`claude plugin eval`'s mock files run unchanged: served as MCP stand-ins in each session's
sandbox to the real claude CLI (against the scripted server), their substitutions and `error: true`
honoured, the calls graded through `target: mock_calls`; what skillab does not play is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from executors.errors import InputError
from flows.inputs.suites.plugin_mocks import mock_servers
from tests.agents import need, write
from tests.fakes.provider import FakeProvider, tool_results
from tests.flows.modes.agentic.test_published_suites import run

pytestmark = pytest.mark.usefixtures("prefect_harness")
SKILL = "---\nname: crm\ndescription: Answers questions about customers. Use for CRM questions.\n---\nLook it up.\n"
CASE = """schema_version: "1.0"
name: lookup
execution:
  prompt: How many seats does Acme have? Look it up in the CRM.
  max_turns: 4
graders:
  - {type: regex, name: seats, pattern: "120 seats"}
  - {type: regex, name: asked-the-crm, target: mock_calls, pattern: "lookup_customer.*Acme"}
  - {type: regex, name: refused-delete, target: trace, pattern: "deleting is not allowed"}
"""
MOCKS = {
    "evals/mocks/crm/lookup_customer.md": "---\ndescription: Find a customer\n---\n{{input.name}} Corp: {{file:fixtures/{input.name}.json}}\n",
    "evals/mocks/crm/fixtures/Acme.json": '{"seats": "120 seats"}',
    "evals/mocks/crm/delete_customer.md": "---\nerror: true\n---\ndeleting is not allowed\n",
    "evals/mocks/crm/_tools.json": json.dumps(
        {
            "tools": [
                {
                    "name": "lookup_customer",
                    "description": "Find a customer by name",
                    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                }
            ]
        }
    ),
}


def agent(body: dict[str, Any], headers: Any) -> list[dict[str, Any]]:
    """Looks Acme up and tries to delete it, through the CRM's tools; then quotes the lookup."""
    done = tool_results(body)
    if "mcp__crm__lookup_customer" not in json.dumps(body):
        return [{"type": "text", "text": "There is no CRM here."}]
    if not done:
        return [{"type": "tool_use", "name": "mcp__crm__lookup_customer", "input": {"name": "Acme"}}]
    if len(done) == 1:
        return [{"type": "tool_use", "name": "mcp__crm__delete_customer", "input": {"name": "Acme"}}]
    found = re.search(r"\d+ seats", done[0])
    return [{"type": "text", "text": f"Acme has {found.group(0) if found else 'no'} seats on record."}]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    need("claude")
    root = tmp_path / "plug"
    write(root, {".claude-plugin/plugin.json": '{"name": "plug"}', "skills/crm/SKILL.md": SKILL, **MOCKS})
    write(root / "evals" / "lookup", {"case.yaml": CASE})
    return root


def test_mock_files_serve_both_arms_and_grade_their_calls(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(suite.parent)
    with FakeProvider(claude_agent=agent).anthropic_env(monkeypatch) as server:
        code = run(suite, server, "--json", "official.json")
    out = capsys.readouterr()
    official = json.loads((suite.parent / "official.json").read_text())
    (case,) = official["cases"]
    for arm in ("with", "without"):  # the mocks are the case's world: both arms meet them
        graders = {g["name"]: g for g in case["arms"][arm][0]["graders"]}
        assert all(g["passed"] for g in graders.values()), (arm, graders, out.err)
    (calls,) = (suite.parent / "results").glob("*/outputs/task-01/with-skill/mock_calls.jsonl")
    assert [json.loads(line)["name"] for line in calls.read_text().splitlines()] == [
        "lookup_customer",
        "delete_customer",
    ]
    assert code in (0, 1), out.err  # one case: the comparison is insufficient


def test_a_case_overrides_the_suites_mock_and_what_is_not_played_is_named(suite: Path) -> None:
    case = suite / "evals" / "lookup"
    write(
        case,
        {
            "mocks/crm/lookup_customer.md": "Globex Corp\n",
            "mocks/crm/summary.md": "---\ntype: agent\n---\nSummarise.\n",
        },
    )
    servers, unplayed = mock_servers(suite / "evals", case)
    tools = {t.name: t for t in servers["crm"].tools}
    assert tools["lookup_customer"].responses[0].text == "Globex Corp\n"  # the case's own, file by file
    assert tools["lookup_customer"].description == "Find a customer by name"  # from _tools.json
    assert tools["delete_customer"].responses[0].error and "summary" not in tools
    assert servers["crm"].files == {"fixtures/Acme.json": '{"seats": "120 seats"}'}
    assert unplayed == ["mocks/crm/summary.md: type: agent (a model answering the tool)"]
    (case / "mocks" / "crm" / "escape.md").symlink_to("/etc/hostname")
    with pytest.raises(InputError, match="link"):
        mock_servers(suite / "evals", case)
