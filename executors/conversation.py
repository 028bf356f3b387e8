"""Sessions that talk to the world: a simulated user who answers the agent's questions, and a
permission policy that answers the CLI's permission prompts instead of bypassing them.

The user and the policy are data (a case's ``## User`` and ``## Permissions``); a
:class:`ClaudeConversation` plays them against Claude Code's streaming JSON protocol, with no I/O
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
from typing import Any, Literal

from executors.schema import AgentRequest, PermissionPolicy, SimulatedUser, Utterance

#: The words that make a user's answer to "may I ...?" a yes.
YES = re.compile(r"^\s*(yes|y|ok|okay|sure|go ahead|allow|approved?|please do)\b", re.I)
#: Claude Code's tool for asking the user (its answers travel in the permission reply's input).
ASK_TOOL = "AskUserQuestion"


def _summary(given: dict[str, Any]) -> str:
    for key in ("command", "file_path", "path", "url"):
        if given.get(key):
            return str(given[key])[:200]
    return json.dumps(given, sort_keys=True)[:200]


def user_message(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}}


class ClaudeConversation:
    """A case's user and policy played over Claude Code's stream-json input and control protocol."""

    def __init__(self, prompt: str, user: SimulatedUser | None, policy: PermissionPolicy | None) -> None:
        self.prompt = prompt
        self.user = user
        self.policy = policy or PermissionPolicy()
        self.log: list[Utterance] = []
        self.answers = 0  # the user's answers so far (questions and permission asks)
        self.last_text = ""  # the agent's last text in the current turn

    def opening(self) -> list[dict[str, Any]]:
        self.log.append(Utterance(who="user", kind="prompt", text=self.prompt))
        return [user_message(self.prompt)]

    def on_line(self, line: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
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
            return [self._control(line)], False
        if kind == "result":
            return self._turn_ended(line)
        return [], False

    def _willing(self) -> bool:
        return self.user is not None and self.answers < self.user.turns

    def _ask_user(self, question: str) -> str | None:
        """The user's answer, counted; None once they have left (or when there is none)."""
        if self.user is None or not self._willing():
            return None
        self.answers += 1
        return self.user.answer(question)

    def _turn_ended(self, line: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
        question, self.last_text = self.last_text.strip(), ""
        if line.get("subtype") != "success" or line.get("is_error") or not question.endswith("?"):
            return [], True
        self.log.append(Utterance(who="agent", kind="question", text=question))
        answer = self._ask_user(question)
        if answer is None:
            return [], True
        self.log.append(Utterance(who="user", kind="answer", text=answer))
        return [user_message(answer)], False

    def _control(self, line: dict[str, Any]) -> dict[str, Any]:
        request = line.get("request") or {}
        rid = line.get("request_id")
        if request.get("subtype") != "can_use_tool":
            return {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": rid, "error": "not supported by skillab"},
            }
        tool = str(request.get("tool_name") or "")
        given: dict[str, Any] = request["input"] if isinstance(request.get("input"), dict) else {}
        verdict = self._ask_tool(given) if tool == ASK_TOOL else self._permission(tool, given)
        return {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": rid, "response": verdict},
        }

    def _ask_tool(self, given: dict[str, Any]) -> dict[str, Any]:
        questions = [q for q in given.get("questions") or [] if isinstance(q, dict) and q.get("question")]
        answers: dict[str, str] = {}
        for q in questions:
            text = str(q["question"])
            self.log.append(Utterance(who="agent", kind="question", text=text, tool=ASK_TOOL))
            answer = self._ask_user(text)
            if answer is None:
                break
            self.log.append(Utterance(who="user", kind="answer", text=answer, tool=ASK_TOOL))
            answers[text] = answer
        if not answers:
            return {"behavior": "deny", "message": "Nobody is there to answer: decide yourself."}
        return {"behavior": "allow", "updatedInput": {**given, "answers": answers}}

    def _permission(self, tool: str, given: dict[str, Any]) -> dict[str, Any]:
        decision = self.policy.decide(tool, given)
        who: Literal["user", "policy"] = "policy"
        if decision == "ask":
            answer = self._ask_user(f"May I use {tool}: {_summary(given)}?")
            decision, who = ("allow" if answer is not None and YES.match(answer) else "deny"), "user"
        self.log.append(
            Utterance(who=who, kind="permission", text=_summary(given), tool=tool, decision=decision)
        )
        if decision == "allow":
            return {"behavior": "allow", "updatedInput": given}
        return {"behavior": "deny", "message": f"Permission to use {tool} was refused."}


#: Why a case with a user or a permission policy cannot run on a CLI (said in one line).
NO_CONVERSATION = (
    "a case with a simulated user or a permission policy needs a CLI that takes a conversation on "
    "its input (claude); this CLI's non-interactive mode cannot answer its questions or prompts"
)


def talks(request: AgentRequest) -> bool:
    """The session has a user to answer it, or a policy for its permission prompts."""
    return request.user is not None or request.permissions is not None


class Talking:
    """A conversation on a running CLI: its opening written, each whole line of the CLI's stream
    answered on its input, the input closed when the conversation ends (which ends the session)."""

    def __init__(self, talk: ClaudeConversation, stdin: asyncio.StreamWriter) -> None:
        self.talk, self.stdin, self.pending = talk, stdin, b""

    async def write(self, lines: list[dict[str, Any]]) -> None:
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
            replies, ended = self.talk.on_line(line)
            await self.write(replies)
            if ended and not self.stdin.is_closing():
                self.stdin.close()
