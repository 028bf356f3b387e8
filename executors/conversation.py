"""Sessions that talk to the world: a simulated user who answers the agent's questions, and a
permission policy that answers the CLI's permission prompts instead of bypassing them.

The user and the policy are data (a case's ``## User`` and ``## Permissions``); a
:class:`Conversation` plays them against Claude Code's streaming JSON protocol, with no I/O
of its own: the executor feeds it each line the CLI writes and writes back what it returns. Claude
Code asks through two channels, both answered here:

- ``AskUserQuestion``, and every tool the policy governs, arrive as ``control_request`` lines of
  subtype ``can_use_tool`` (the CLI run with ``--permission-prompt-tool stdio``); the reply is a
  ``control_response`` allowing the call (AskUserQuestion's with the user's ``answers``) or denying it;
- a turn that ends with a question (the ``result`` line after an assistant text ending in "?") is
  answered by the user's next message, until the user's turns run out.

Both arms of a case meet the same user: the answers depend only on the question and the user's data.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol

from executors.base import Executor
from executors.contents import copy_tree
from executors.parsing import JsonObject
from executors.schema import AgentRequest, McpServer, PermissionPolicy, RunRequest, SimulatedUser, Utterance

#: The words that make a user's answer to "may I ...?" a yes.
YES = re.compile(r"^\s*(yes|y|ok|okay|sure|go ahead|allow|approved?|please do)\b", re.I)
#: Claude Code's tool for asking the user (its answers travel in the permission reply's input).
ASK_TOOL = "AskUserQuestion"
MAX_ANSWER = 500  # characters of a model-played user's answer


def conversation_text(log: tuple[Utterance, ...], user: SimulatedUser | None) -> str | None:
    """A conversation as the judge reads it: who said what, each permission decision, and when the
    user would be satisfied; None for a session with none."""
    if not log:
        return None
    lines = [
        f"{u.who}: {u.tool} {u.decision}: {u.text}" if u.kind == "permission" else f"{u.who}: {u.text}"
        for u in log
    ]
    if user is not None and user.satisfied:
        lines.append(f"(the user is satisfied when: {user.satisfied})")
    return "\n".join(lines)


def _summary(given: JsonObject) -> str:
    for key in ("command", "file_path", "path", "url"):
        if given.get(key):
            return str(given[key])[:200]
    return json.dumps(given, sort_keys=True)[:200]


def user_message(text: str) -> JsonObject:
    return {"type": "user", "message": {"role": "user", "content": text}}


def role_prompt(user: SimulatedUser) -> str:
    """The instructions of a model playing the user."""
    facts = "\n".join(f"- {k}: {v}" for k, v in user.facts.items()) or "- (none)"
    return (
        "You play a user talking to an AI assistant that is doing a task for you. Stay in your role: "
        "answer the assistant's question in one or two short sentences, as this user would, and never "
        "do the task yourself.\n"
        f"Who you are: {user.persona or 'a user'}\nWhat you want: {user.goal or 'the task done'}\n"
        f"What only you know (tell it when the question asks for it):\n{facts}\n"
        f"When you do not know the answer, say: {user.default}"
    )


class UserVoice:
    """The simulated user's answers: a scripted reply first; then, for a user played by a model
    (``model``), that model's answer through its executor (its calls and cost counted apart from
    the agent's); else the facts the question names, or the user's default."""

    def __init__(self, user: SimulatedUser, executor: Executor | None = None) -> None:
        self.user = user
        self.executor = executor  # the user's model's (tasks.agent makes it from user.executor)
        self.calls = 0
        self.cost_usd = 0.0
        self.errors: list[str] = []

    async def answer(self, question: str, log: list[Utterance]) -> str:
        scripted = self.user.scripted(question)
        if scripted is not None or self.user.model is None:
            return scripted if scripted is not None else self.user.answer(question)
        if self.executor is None:
            self.errors.append(f"no executor {self.user.executor!r} for the user's model")
            return self.user.default

        said = "\n".join(f"{u.who}: {u.text}" for u in log if u.kind in ("prompt", "question", "answer"))
        request = RunRequest(
            executor=self.user.executor,
            model=self.user.model,
            system=role_prompt(self.user),
            prompt=f"The conversation so far:\n{said}\n\nThe assistant asks you: {question}\nYour answer:",
            temperature=0.0,
            max_tokens=200,
            seed=0,
        )
        self.calls += 1
        try:
            result = await self.executor.run(request)
        except Exception as exc:  # the user's model failing is the user not answering, not a crash
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return self.user.default
        self.cost_usd += result.cost_usd
        # a user says one line; a small model goes on to play both parts, which is cut off
        said = next((line.strip() for line in result.output.splitlines() if line.strip()), "")
        return said[:MAX_ANSWER] or self.user.default


class Conversation:
    """A case's user and policy: played over Claude Code's stream-json input and control protocol,
    or, for a CLI that resumes a session (``AgentExecutor.resumes``), one run per turn."""

    def __init__(
        self,
        prompt: str,
        user: SimulatedUser | None,
        policy: PermissionPolicy | None,
        voice: Executor | None = None,
    ) -> None:
        self.prompt = prompt
        self.user = user
        self.voice = UserVoice(user, voice) if user is not None else None
        self.policy = policy or PermissionPolicy()
        self.log: list[Utterance] = []
        self.answers = 0  # the user's answers so far (questions and permission asks)
        self.last_text = ""  # the agent's last text in the current turn

    def opening(self) -> list[JsonObject]:
        self.log.append(Utterance(who="user", kind="prompt", text=self.prompt))
        return [user_message(self.prompt)]

    async def on_line(self, line: JsonObject) -> tuple[list[JsonObject], bool]:
        """What to write back for one line of the CLI's stream, and whether the conversation ended
        (the CLI's input is then closed, which ends the session)."""
        kind = line.get("type")
        if kind == "assistant":
            texts = [
                str(b.get("text") or "")
                for b in (line.get("message") or {}).get("content") or []
                if isinstance(b, dict) and b.get("type") == "text"
            ]
            if any(t.strip() for t in texts):
                self.last_text = "\n".join(t for t in texts if t.strip())
            return [], False
        if kind == "control_request":
            return [await self._control(line)], False
        if kind == "result":
            return await self._turn_ended(line)
        return [], False

    def _willing(self) -> bool:
        return self.user is not None and self.answers < self.user.turns

    async def _ask_user(self, question: str) -> str | None:
        """The user's answer, counted; None once they have left (or when there is none)."""
        if self.voice is None or not self._willing():
            return None
        self.answers += 1
        return await self.voice.answer(question, self.log)

    async def _turn_ended(self, line: JsonObject) -> tuple[list[JsonObject], bool]:
        text, self.last_text = self.last_text, ""
        answer = await self.follow_up(text, line.get("subtype") == "success" and not line.get("is_error"))
        return ([user_message(answer)], False) if answer is not None else ([], True)

    async def follow_up(self, text: str, ok: bool) -> str | None:
        """The user's next message after a turn that ended with ``text``: their answer when the turn
        ended well with a question and they have answers left; None ends the conversation."""
        question = text.strip()
        if not ok or not question.endswith("?"):
            return None
        self.log.append(Utterance(who="agent", kind="question", text=question))
        answer = await self._ask_user(question)
        if answer is not None:
            self.log.append(Utterance(who="user", kind="answer", text=answer))
        return answer

    async def _control(self, line: JsonObject) -> JsonObject:
        request = line.get("request") or {}
        rid = line.get("request_id")
        if request.get("subtype") != "can_use_tool":
            return {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": rid, "error": "not supported by skillab"},
            }
        tool = str(request.get("tool_name") or "")
        given: JsonObject = request["input"] if isinstance(request.get("input"), dict) else {}
        verdict = await (self._ask_tool(given) if tool == ASK_TOOL else self._permission(tool, given))
        return {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": rid, "response": verdict},
        }

    async def _ask_tool(self, given: JsonObject) -> JsonObject:
        questions = [q for q in given.get("questions") or [] if isinstance(q, dict) and q.get("question")]
        answers: dict[str, str] = {}
        for q in questions:
            text = str(q["question"])
            self.log.append(Utterance(who="agent", kind="question", text=text, tool=ASK_TOOL))
            answer = await self._ask_user(text)
            if answer is None:
                break
            self.log.append(Utterance(who="user", kind="answer", text=answer, tool=ASK_TOOL))
            answers[text] = answer
        if not answers:
            return {"behavior": "deny", "message": "Nobody is there to answer: decide yourself."}
        return {"behavior": "allow", "updatedInput": {**given, "answers": answers}}

    async def _permission(self, tool: str, given: JsonObject) -> JsonObject:
        decision = self.policy.decide(tool, given)
        who: Literal["user", "policy"] = "policy"
        if decision == "ask":
            answer = await self._ask_user(f"May I use {tool}: {_summary(given)}?")
            decision, who = ("allow" if answer is not None and YES.match(answer) else "deny"), "user"
        self.log.append(
            Utterance(who=who, kind="permission", text=_summary(given), tool=tool, decision=decision)
        )
        if decision == "allow":
            return {"behavior": "allow", "updatedInput": given}
        return {"behavior": "deny", "message": f"Permission to use {tool} was refused."}


#: Why a case with a user or a permission policy cannot run on a CLI (said in one line).
NO_CONVERSATION = (
    "needs a CLI that takes a conversation on its input (claude); this CLI's non-interactive mode "
    "cannot answer a permission prompt, or (not resuming its sessions) a user"
)
NO_MCP = "needs a CLI whose config can start MCP servers (claude, codex, gemini-cli, opencode, copilot)"


def talks(request: AgentRequest) -> bool:
    """The session has a user to answer it, or a policy for its permission prompts."""
    return request.user is not None or request.permissions is not None


class World(Protocol):
    """What of the world a session or a case carries."""

    @property
    def user(self) -> SimulatedUser | None: ...
    @property
    def permissions(self) -> PermissionPolicy | None: ...
    @property
    def mcp(self) -> Mapping[str, McpServer] | None: ...


class Abilities(Protocol):
    """What a CLI can do with a world (``AgentExecutor.converses``, ``resumes``, ``serves_mcp``)."""

    @property
    def converses(self) -> bool: ...
    @property
    def resumes(self) -> bool: ...
    @property
    def serves_mcp(self) -> bool: ...


def world_problem(world: World, cli: Abilities) -> str | None:
    """Why a CLI cannot run a session's (or a case's) world: its user, its permission policy, its
    MCP stand-ins; the field and why, in one line; None when it can."""
    if world.permissions is not None and not cli.converses:
        return f"permissions: {NO_CONVERSATION}"
    if world.mcp and not cli.serves_mcp:
        return f"mcp: {NO_MCP}"
    if world.user is None or cli.converses or cli.resumes:
        return None
    return f"user: {NO_CONVERSATION}"


class Talking:
    """A conversation on a running CLI: its opening written, each whole line of the CLI's stream
    answered on its input, the input closed when the conversation ends (which ends the session)."""

    def __init__(self, talk: Conversation, stdin: asyncio.StreamWriter) -> None:
        self.talk, self.stdin, self.pending = talk, stdin, b""

    async def write(self, lines: list[JsonObject]) -> None:
        if lines and not self.stdin.is_closing():
            self.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            with contextlib.suppress(ConnectionError):
                await self.stdin.drain()

    async def start(self) -> None:
        await self.write(self.talk.opening())

    async def heard(self, chunk: bytes) -> None:
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for raw in lines:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict):
                continue
            replies, ended = await self.talk.on_line(line)
            await self.write(replies)
            if ended and not self.stdin.is_closing():
                self.stdin.close()


#: The stand-ins' interpreter: the system's, which every sandbox shows (the standard library suffices).
SYSTEM_PYTHON = "/usr/bin/python3"
STAND_INS = "skillab-mcp"  # in the session's HOME
CALLS = "servers.json.calls.jsonl"  # beside the stand-ins' spec: every call they answered
RECORDED = "servers.json.record.jsonl"  # --mocks record: what the real servers answered, beside it too
MOCK_CALLS = "mock_calls.jsonl"  # the session's outputs' copy (plugin eval's mock_calls target)


def stand_ins(request: AgentRequest, **extra: object) -> JsonObject:
    """The case's MCP servers made stand-ins in the session's HOME (executors.mcp_standin and its
    spec); the ``mcpServers`` mapping that starts each over stdio, each entry with the CLI's ``extra``
    keys, for the CLI's own MCP config (skillab's, the same for both arms, never the suite's)."""
    folder = Path(request.home) / STAND_INS
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "mcp_standin.py"
    shutil.copyfile(Path(__file__).with_name("mcp_standin.py"), script)
    spec = folder / "servers.json"
    for name, server in (request.mcp or {}).items():
        if server.record is not None and server.record.folder:  # the real server's files (--mocks record)
            copy_tree(server.record.folder, folder / f"{name}.server", f"MCP server {name}")
    dumped = {
        k: v.model_dump(mode="json", exclude={"record": {"folder"}}) for k, v in (request.mcp or {}).items()
    }
    spec.write_text(json.dumps(dumped))
    return {
        name: {"command": SYSTEM_PYTHON, "args": [str(script), str(spec), name], **extra}
        for name in request.mcp or {}
    }
