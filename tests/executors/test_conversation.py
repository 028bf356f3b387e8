"""Sessions that talk to the world: the simulated user and the permission policy, played by the
conversation alone, then over the real claude CLI's stream-json input against the scripted server."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.conversation import ASK_TOOL, Conversation
from executors.schema import (
    AgentSession,
    McpResponse,
    McpServer,
    McpTool,
    PermissionPolicy,
    PermissionRule,
    Reply,
    SimulatedUser,
)
from tests.agents import agent_request, need
from tests.fakes.provider import FakeProvider, tool_results

USER = SimulatedUser(
    persona="a sales lead",
    goal="a report of one region",
    facts={"region": "EMEA", "year": "2025"},
    replies=(Reply(when=r"format", say="Plain text."),),
    turns=2,
)


def ask(rid: str, tool: str, given: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_request",
        "request_id": rid,
        "request": {"subtype": "can_use_tool", "tool_name": tool, "input": given},
    }


def said(text: str) -> dict[str, Any]:
    return {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}


DONE = {"type": "result", "subtype": "success", "is_error": False}


def step(talk: Conversation, line: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """What the conversation writes back for one line of the CLI's stream."""
    return asyncio.run(talk.on_line(line))


def test_the_user_tells_a_fact_only_when_asked_for_it_and_leaves_after_their_turns() -> None:
    talk = Conversation("Write the report.", USER, None)
    assert talk.opening() == [{"type": "user", "message": {"role": "user", "content": "Write the report."}}]
    question = {"questions": [{"question": "Which region and which year?", "header": "Scope", "options": []}]}
    (reply,), ended = step(talk, ask("r1", ASK_TOOL, question))
    assert not ended and reply["response"]["request_id"] == "r1"
    assert reply["response"]["response"] == {
        "behavior": "allow",
        "updatedInput": {**question, "answers": {"Which region and which year?": "EMEA 2025"}},
    }
    step(talk, said("Which format do you want?"))
    assert step(talk, DONE) == (
        [{"type": "user", "message": {"role": "user", "content": "Plain text."}}],
        False,
    )
    step(talk, said("And the currency?"))  # the user's two answers are spent: the session ends
    assert step(talk, DONE) == ([], True)
    assert [(u.who, u.kind, u.text) for u in talk.log] == [
        ("user", "prompt", "Write the report."),
        ("agent", "question", "Which region and which year?"),
        ("user", "answer", "EMEA 2025"),
        ("agent", "question", "Which format do you want?"),
        ("user", "answer", "Plain text."),
        ("agent", "question", "And the currency?"),
    ]


def test_a_turn_that_ends_without_a_question_ends_the_session() -> None:
    talk = Conversation("Go.", USER, None)
    step(talk, said("Done: report.txt written."))
    assert step(talk, DONE) == ([], True)


def test_the_policy_allows_denies_and_asks_the_user() -> None:
    policy = PermissionPolicy(
        default="allow",
        rules=(
            PermissionRule(tool="Bash", when=r"\brm\b", decision="deny"),
            PermissionRule(tool="mcp__*", decision="ask"),
        ),
    )
    yes = SimulatedUser(replies=(Reply(when="deploy", say="Yes, go ahead."),), default="No.")
    talk = Conversation("Clean up.", yes, policy)

    def verdict(tool: str, given: dict[str, Any]) -> dict[str, Any]:
        (reply,), _ = step(talk, ask("r", tool, given))
        return dict(reply["response"]["response"])

    assert verdict("Bash", {"command": "ls"}) == {"behavior": "allow", "updatedInput": {"command": "ls"}}
    assert verdict("Bash", {"command": "rm -rf build"})["behavior"] == "deny"
    assert verdict("mcp__ops__deploy", {"target": "prod"})["behavior"] == "allow"  # the user said yes
    assert verdict("mcp__ops__delete", {"target": "prod"})["behavior"] == "deny"  # "No."
    decisions = [(u.who, u.tool, u.decision) for u in talk.log if u.kind == "permission"]
    assert decisions == [
        ("policy", "Bash", "allow"),
        ("policy", "Bash", "deny"),
        ("user", "mcp__ops__deploy", "allow"),
        ("user", "mcp__ops__delete", "deny"),
    ]
    # no user to ask: an "ask" is a refusal
    alone = Conversation("Go.", None, PermissionPolicy(default="ask"))
    (reply,), _ = step(alone, ask("r", "Write", {"file_path": "x"}))
    assert reply["response"]["response"]["behavior"] == "deny"


def test_a_bad_rule_is_refused_when_it_loads() -> None:
    with pytest.raises(ValueError, match="when: not a regular expression"):
        PermissionRule(tool="Bash", when="(", decision="deny")


# ---------------------------------------------------------------- the real claude CLI


def workdir(body: dict[str, Any]) -> str:
    found = re.search(r"Primary working directory: (\S+)", json.dumps(body))
    assert found, "the CLI names its working directory in the system prompt"
    return found.group(1).replace("\\n", "")


def ask_first(body: dict[str, Any]) -> list[dict[str, Any]]:
    """With the instruction to ask in its system prompt, the model asks for the region (Claude
    Code's AskUserQuestion), then writes it; without, it guesses. Then it tries to delete a file."""
    results, cwd = tool_results(body), workdir(body)
    asks = "Ask the user for the region" in json.dumps(body.get("system"))
    if asks and not results:
        options = [{"label": "Europe", "description": "EMEA"}, {"label": "Asia", "description": "APAC"}]
        question = {
            "question": "Which region should the report cover?",
            "header": "Region",
            "options": options,
        }
        return [{"type": "tool_use", "id": "toolu_ask", "name": ASK_TOOL, "input": {"questions": [question]}}]
    if len(results) == (1 if asks else 0):
        region = m.group(1) if (m := re.search(r'="(\w+)"', results[-1] if results else "")) else "APAC"
        write = {"file_path": f"{cwd}/report.txt", "content": f"Region: {region}\n"}
        return [{"type": "tool_use", "id": "toolu_write", "name": "Write", "input": write}]
    if len(results) == (2 if asks else 1):
        command = {"command": f"rm {cwd}/keep.txt", "description": "remove the scratch file"}
        return [{"type": "tool_use", "id": "toolu_rm", "name": "Bash", "input": command}]
    return [{"type": "text", "text": "report.txt written."}]


def live(
    tmp_path: Path, agent: Any, prompt: str, voice: Any = None, timeout: float = 60, **fields: Any
) -> AgentSession:
    """One session of the real claude CLI against the scripted ``agent``, in ``tmp_path``."""
    need("claude")
    with FakeProvider(agent=agent) as server:
        claude = ClaudeCodeExecutor(ExecutorSettings(base_url=server.url))
        request = agent_request(tmp_path, prompt=prompt, timeout_s=timeout, **fields)
        return asyncio.run(claude.session(request, voice))


@pytest.mark.parametrize("skill", [True, False], ids=["asks", "guesses"])
def test_the_real_claude_cli_asks_the_user_and_meets_the_policy(tmp_path: Path, skill: bool) -> None:
    sandbox = tmp_path / "sb"
    sandbox.mkdir()
    (sandbox / "keep.txt").write_text("scratch\n")
    policy = PermissionPolicy(rules=(PermissionRule(tool="Bash", when=r"\brm\b", decision="deny"),))
    session = live(
        tmp_path,
        ask_first,
        "Write report.txt with the sales region.",
        system="Ask the user for the region before writing anything." if skill else None,
        user=USER,
        permissions=policy,
    )
    assert session.ok, session.error
    assert (sandbox / "report.txt").read_text() == ("Region: EMEA\n" if skill else "Region: APAC\n")
    assert (sandbox / "keep.txt").exists()  # the policy refused the deletion: nothing bypassed
    talk = [(u.who, u.kind) for u in session.conversation]
    asked = [("agent", "question"), ("user", "answer")] if skill else []
    assert talk == [("user", "prompt"), *asked, ("policy", "permission"), ("policy", "permission")]
    decisions = [(u.tool, u.decision) for u in session.conversation if u.kind == "permission"]
    assert decisions == [("Write", "allow"), ("Bash", "deny")]
    assert session.final_text == "report.txt written."


def texts_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def question_then_write(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Ends its first turn with a question; once answered, writes the answer down."""
    question = "Which region should the report cover?"
    if not any(m["role"] == "assistant" and question in texts_of(m) for m in body["messages"]):
        return [{"type": "text", "text": question}]
    if not tool_results(body):
        write = {
            "file_path": f"{workdir(body)}/answer.txt",
            "content": texts_of(body["messages"][-1]).strip(),
        }
        return [{"type": "tool_use", "id": "toolu_w", "name": "Write", "input": write}]
    return [{"type": "text", "text": "Written."}]


def test_a_user_played_by_the_embedded_model(tmp_path: Path) -> None:
    """The user's answer comes from a model (here the embedded one, through its executor), its calls
    counted apart from the agent's; the agent's turn that ended in a question got it as a message."""
    pytest.importorskip("xllamacpp", reason="the 'local' extra is installed by scripts/setup.sh")
    from executors.local import DEFAULT_MODEL
    from executors.registry import get_executor

    user = SimulatedUser(
        persona="a sales lead", facts={"region": "EMEA"}, model=DEFAULT_MODEL, executor="local"
    )
    session = live(tmp_path, question_then_write, "Write the report.", get_executor("local"), 120, user=user)
    assert session.ok, session.error
    (answer,) = [u.text for u in session.conversation if u.kind == "answer"]
    assert answer.strip() and answer != user.default  # the model's words, not a fallback
    assert (tmp_path / "sb" / "answer.txt").read_text() == answer
    assert session.meta.user_calls == 1 and not session.meta.user_errors


def crm_agent(body: dict[str, Any], who: str = "Acme") -> list[dict[str, Any]]:
    """Looks the customer up through the CRM's MCP tool, then writes what it said."""
    done = tool_results(body)
    if not done:
        # the CLI defers MCP tools (named in the request, their schemas fetched on demand)
        if "mcp__crm__lookup_customer" not in json.dumps(body):
            return [{"type": "text", "text": "no CRM tool in the request"}]
        lookup = {"name": who}
        return [{"type": "tool_use", "id": "toolu_crm", "name": "mcp__crm__lookup_customer", "input": lookup}]
    if len(done) == 1:
        said = " ".join(b["text"] for b in json.loads(done[0])) if done[0].startswith("[") else done[0]
        write = {"file_path": f"{workdir(body)}/customer.txt", "content": said}
        return [{"type": "tool_use", "id": "toolu_w", "name": "Write", "input": write}]
    return [{"type": "text", "text": "customer.txt written."}]


CRM = {
    "crm": McpServer(
        tools=(
            McpTool(
                name="lookup_customer",
                description="Find a customer by name",
                input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
                responses=(
                    McpResponse(when={"name": "Acme"}, text="{{input.name}} Corp: EMEA, 120 seats"),
                    McpResponse(text="not found", error=True),
                ),
            ),
        )
    )
}


@pytest.mark.parametrize("policy", [None, PermissionPolicy()], ids=["bypassed", "with-a-policy"])
def test_an_mcp_stand_in_serves_the_real_claude_cli(tmp_path: Path, policy: PermissionPolicy | None) -> None:
    """The case's MCP server played in the session's sandbox over stdio: the CLI lists its tool, the
    call gets the scripted answer (its arguments substituted), and no other MCP server is loaded."""
    prompt = "Find Acme in the CRM and write what it says to customer.txt."
    session = live(tmp_path, crm_agent, prompt, mcp=CRM, permissions=policy)
    assert session.ok, (session.error, session.final_text)
    assert (tmp_path / "sb" / "customer.txt").read_text() == "Acme Corp: EMEA, 120 seats"
    assert session.meta.mcp_servers == ["crm"]
    calls = (tmp_path / "home" / "skillab-mcp" / "servers.json.calls.jsonl").read_text().splitlines()
    assert [json.loads(c) for c in calls] == [
        {"server": "crm", "name": "lookup_customer", "arguments": {"name": "Acme"}}
    ]
    if policy is not None:  # the stand-in's tool asked for its permission like any other
        assert next((u.tool, u.decision) for u in session.conversation if u.kind == "permission") == (
            "mcp__crm__lookup_customer",
            "allow",
        )


def test_a_stand_in_answers_the_protocol_and_refuses_what_it_does_not_know() -> None:
    from executors import mcp_standin

    spec = CRM["crm"].model_dump(mode="json")
    init = mcp_standin.answer(
        spec,
        "crm",
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}},
    )
    assert (
        init
        and init["result"]["protocolVersion"] == "2025-03-26"
        and "tools" in init["result"]["capabilities"]
    )
    assert mcp_standin.answer(spec, "crm", {"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    other = mcp_standin.call(spec, "lookup_customer", {"name": "Globex"})
    assert other == {"content": [{"type": "text", "text": "not found"}], "isError": True}
    unknown = mcp_standin.answer(spec, "crm", {"jsonrpc": "2.0", "id": 2, "method": "resources/list"})
    assert unknown and unknown["error"]["code"] == -32601
    with pytest.raises(ValueError, match="letters, digits"):
        McpTool(name="look up")


TASK = """# Task: crm
difficulty: easy
category: crm
type: positive

## Prompt
Find Acme.

## Expected Outcome
customer.txt

## Verification Checks
- file_exists: customer.txt
- asked: which customer

## Grading Rubric
- Correctness

## User
facts: {customer: Acme}

## MCP
```yaml
crm:
  tools:
    - name: lookup_customer
      responses:
        - when: {name: Acme}
          text: "{{input.name}} Corp"
```
"""


def test_a_task_carries_its_user_and_its_mcp_stand_ins_and_bad_ones_are_named() -> None:
    from executors.errors import InputError
    from graders.agent_task import parse_task

    task = parse_task(TASK, "task-01-easy")
    assert task.user is not None and task.user.facts == {"customer": "Acme"}
    assert task.mcp is not None and task.mcp["crm"].tools[0].responses[0].text == "{{input.name}} Corp"
    with pytest.raises(InputError, match=r"mcp: server: 'my crm': letters, digits"):
        parse_task(TASK.replace("\ncrm:\n", "\nmy crm:\n"), "t")
    with pytest.raises(InputError, match=r"user.turns: Input should be greater than or equal to 1"):
        parse_task(TASK.replace("facts: {customer: Acme}", "turns: 0"), "t")
    with pytest.raises(InputError, match=r"checks: asked grades a conversation: the task needs a '## User'"):
        parse_task(TASK.split("## User")[0], "t")


def codex_asks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Codex's model: asks for the region, then (the thread resumed with the answer) writes it."""
    items = [i for i in body.get("input", []) if isinstance(i, dict) and i.get("role") == "user"]
    said = [c.get("text", "") for i in items for c in i.get("content") or [] if isinstance(c, dict)]
    answered = [t for t in said if t.strip() in ("EMEA", "AMER")]
    outputs = [
        i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    if not answered:
        return [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Which region?"}],
            }
        ]
    if not outputs:
        command = {"cmd": f"printf '{answered[-1].strip()}' > region.txt"}
        return [
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "call_1",
                "arguments": json.dumps(command),
            }
        ]
    return [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "region.txt written."}],
        }
    ]


def gemini_asks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Gemini's model: asks for the region, then (the session resumed with the answer) writes it."""
    said = [
        p.get("text", "") for c in body["contents"] if c.get("role") == "user" for p in c.get("parts", [])
    ]
    answered = [t.strip() for t in said if t.strip() in ("EMEA", "AMER")]
    done = any("functionResponse" in p for c in body["contents"] for p in c.get("parts", []))
    if not answered:
        return [{"text": "Which region?"}]
    if not done:
        write = {"file_path": "region.txt", "content": answered[-1]}
        return [{"functionCall": {"name": "write_file", "args": write}}]
    return [{"text": "region.txt written."}]


def opencode_asks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenCode's model: asks for the region, then (the session continued with the answer) writes it."""
    said = [
        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
        for m in body["messages"]
        if m["role"] == "user"
    ]
    answered = [r for r in ("EMEA", "AMER") if any(r in t for t in said)]
    if not answered:
        return [{"text": "Which region?"}]
    if not any(m["role"] == "tool" for m in body["messages"]):
        return [
            {
                "tool": "bash",
                "arguments": {"command": f"printf {answered[0]} > region.txt", "description": "write"},
            }
        ]
    return [{"text": "region.txt written."}]


def copilot_asks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Copilot's model (Anthropic's API): asks for the region, then (resumed) writes it."""
    said = [texts_of(m) for m in body["messages"] if m["role"] == "user"]
    answered = [r for r in ("EMEA", "AMER") if any(r in t for t in said)]
    if not answered:
        return [{"type": "text", "text": "Which region?"}]
    if not tool_results(body):
        shell = {"command": f"printf {answered[0]} > region.txt", "description": "write"}
        return [{"type": "tool_use", "name": "bash", "input": shell}]
    return [{"type": "text", "text": "region.txt written."}]


#: Each CLI that meets a user by resuming its session: its executor, the scripted server's hook for
#: its protocol, the path of its endpoint, a model, and its scripted model.
RESUMING = {
    "codex": ("codex_cli.CodexExecutor", "responses_agent", "/v1", "gpt-5.5", codex_asks),
    "gemini-cli": ("gemini_cli.GeminiCliExecutor", "gemini_agent", "", "gemini-2.5-pro", gemini_asks),
    "opencode": ("opencode.OpenCodeExecutor", "chat_agent", "/v1", "gpt-5.5", opencode_asks),
    "copilot": ("copilot_cli.CopilotCliExecutor", "agent", "", "claude-sonnet-4.5", copilot_asks),
}


@pytest.mark.parametrize("cli", list(RESUMING))
def test_a_cli_without_a_conversation_input_meets_the_user_by_resuming(tmp_path: Path, cli: str) -> None:
    """The agent's turn ends with a question; the user's answer is the next run, resuming the
    session; the last run writes the answer down. A permission policy it cannot answer is refused."""
    import importlib

    where, hook, path, model, scripted = RESUMING[cli]
    module, name = where.split(".")
    executor_class = getattr(importlib.import_module(f"executors.{module}"), name)
    need(executor_class.binary)
    with FakeProvider() as server:
        setattr(server, hook, scripted)
        executor = executor_class(ExecutorSettings(base_url=f"{server.url}{path}"))
        request = agent_request(
            tmp_path, cli, model, "Write region.txt with the sales region.", user=USER, timeout_s=90
        )
        session = asyncio.run(executor.session(request))
        refused = asyncio.run(
            executor.session(request.model_copy(update={"permissions": PermissionPolicy()}))
        )
    assert session.ok, session.error
    assert (tmp_path / "sb" / "region.txt").read_text() == "EMEA"
    assert [(u.who, u.kind, u.text) for u in session.conversation] == [
        ("user", "prompt", "Write region.txt with the sales region."),
        ("agent", "question", "Which region?"),
        ("user", "answer", "EMEA"),
    ]
    assert session.final_text == "region.txt written."
    assert not refused.ok and "permissions: needs a CLI that takes a conversation" in (refused.error or "")


CRM_SAYS = "Acme Corp: EMEA, 120 seats"


def crm_caller(call: Callable[[str, dict[str, Any]], dict[str, Any]], say: Callable[[str], dict[str, Any]]):
    """A model of any protocol: calls the stand-in's lookup tool by the name its CLI gave it (found in
    the request's tool declarations), then repeats what the tool answered."""

    def model(body: dict[str, Any]) -> list[dict[str, Any]]:
        text = json.dumps(body)
        if CRM_SAYS in text:
            return [say(f"The CRM says: {CRM_SAYS}")]
        named = re.search(r'"([A-Za-z0-9_.:-]*lookup_customer)"', text)
        return [call(named.group(1), {"name": "Acme"}) if named else say("no CRM tool in the request")]

    return model


def codex_crm(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Codex defers MCP tools (a namespace named in the prompt): its tool_search finds the tool,
    then the call names it within its namespace."""
    text = json.dumps(body)
    if CRM_SAYS in text:
        return [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"The CRM says: {CRM_SAYS}"}],
            }
        ]
    if "tool_search_output" not in text:
        search = {"query": "lookup_customer"}
        return [{"type": "tool_search_call", "call_id": "ts_1", "execution": "client", "arguments": search}]
    lookup = json.dumps({"name": "Acme"})
    return [
        {
            "type": "function_call",
            "namespace": "mcp__crm",
            "name": "lookup_customer",
            "call_id": "c1",
            "arguments": lookup,
        }
    ]


#: Each other CLI's scripted model calling the stand-in, in its protocol.
MCP_CALLERS = {
    "codex": codex_crm,
    "gemini-cli": crm_caller(lambda n, a: {"functionCall": {"name": n, "args": a}}, lambda t: {"text": t}),
    "opencode": crm_caller(lambda n, a: {"tool": n, "arguments": a}, lambda t: {"text": t}),
    "copilot": crm_caller(
        lambda n, a: {"type": "tool_use", "name": n, "input": a}, lambda t: {"type": "text", "text": t}
    ),
}


@pytest.mark.parametrize("cli", list(MCP_CALLERS))
def test_an_mcp_stand_in_serves_every_other_cli(tmp_path: Path, cli: str) -> None:
    """The case's MCP server, started by the CLI from the config skillab wrote for the session: the
    model sees its tool, the call reaches the stand-in and its scripted answer reaches the model."""
    import importlib

    where, hook, path, model, _ = RESUMING[cli]
    module, name = where.split(".")
    executor_class = getattr(importlib.import_module(f"executors.{module}"), name)
    need(executor_class.binary)
    with FakeProvider() as server:
        setattr(server, hook, MCP_CALLERS[cli])
        executor = executor_class(ExecutorSettings(base_url=f"{server.url}{path}"))
        prompt = "Find Acme in the CRM and tell me what it says."
        session = asyncio.run(
            executor.session(agent_request(tmp_path, cli, model, prompt, mcp=CRM, timeout_s=90))
        )
    assert session.ok, (session.error, session.final_text)
    calls = (tmp_path / "home" / "skillab-mcp" / "servers.json.calls.jsonl").read_text().splitlines()
    assert [json.loads(c) for c in calls] == [
        {"server": "crm", "name": "lookup_customer", "arguments": {"name": "Acme"}}
    ]
    assert f"The CRM says: {CRM_SAYS}" in session.final_text
    used = [e.tool for e in session.events if e.kind == "tool_use"]
    assert any("crm" in str(t) and "lookup_customer" in str(t) for t in used), used


def test_what_a_cli_cannot_do_with_a_world_is_named_in_one_line() -> None:
    from types import SimpleNamespace

    from executors.conversation import NO_CONVERSATION, NO_MCP, world_problem

    def problem(cli: SimpleNamespace, **world: Any) -> str | None:
        return world_problem(
            SimpleNamespace(**({"user": None, "permissions": None, "mcp": None} | world)), cli
        )

    resuming = SimpleNamespace(converses=False, resumes=True, serves_mcp=True)
    bare = SimpleNamespace(converses=False, resumes=False, serves_mcp=False)
    assert problem(resuming, user=USER, mcp=CRM) is None
    assert problem(resuming, permissions=PermissionPolicy()) == f"permissions: {NO_CONVERSATION}"
    assert problem(bare, mcp=CRM) == f"mcp: {NO_MCP}"
    assert problem(bare, user=USER) == f"user: {NO_CONVERSATION}"
