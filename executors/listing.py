"""What the model was shown of the installed skills, read from the request itself.

Claude Code lists skills to the model in one text of the request ("The following skills are available
for use with the Skill tool:" then ``- name: description`` lines). Its listing has a budget: by
default 1% of the model's context window at 4 characters a token (8,000 characters for a 200,000-token
window; ``skillListingBudgetFraction`` in settings changes the share), each description capped at
1,536 characters (``skillListingMaxDescChars``) and cut with an ellipsis. Past the budget, the CLI's
own skills keep their descriptions and the others are listed by name alone, in its priority order,
until the rest fits. (Read from the 2.1.332 binary and checked against its requests here.)

The system/init event lists every loaded skill whatever happened to its description, so only the
request tells whether the model could have chosen a skill: skillab's model forwarder sees every
request, and keeps each session's first listing (:func:`observe_claude`), keyed by the session id
Claude Code sends in a header.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from executors.schema import ListedSkill, ListingState, SkillListing

LISTING_START = "The following skills are available for use with the Skill tool"
SESSION_HEADER = "x-claude-code-session-id"
CODEX_SESSION_HEADER = "session-id"  # Codex's thread id, as its thread.started event gives it
OPENCODE_SESSION_HEADER = "x-session-id"  # OpenCode's session id, as its events' sessionID gives it
ELLIPSIS = "\u2026"
#: Claude Code's defaults (see the module's docstring).
BUDGET_FRACTION = 0.01
CHARS_PER_TOKEN = 4
#: The listing of a session with no skill installed: Claude Code's own skills (2.1.332, measured here).
#: A --dry-run estimate adds it to the environment's own entries.
CLAUDE_OWN_LISTING_CHARS = 6_210


def text_blocks(content: Any) -> list[str]:
    """The texts of a Messages content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]


def listing_text(body: Mapping[str, Any]) -> str | None:
    """The listing's lines (heading excluded) in a Messages request, None when it has none."""
    texts = text_blocks(body.get("system"))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            texts += text_blocks(message.get("content"))
    for text in texts:
        start = text.find(LISTING_START)
        if start >= 0:
            return text[start:].split("\n", 1)[1] if "\n" in text[start:] else ""
    return None


def parse_listing(text: str) -> dict[str, str]:
    """name -> description as listed ("" when listed by name alone). A description may run over
    several lines; the listing ends at the first blank line after an entry, or its closing tag."""
    listing: dict[str, str] = {}
    last: str | None = None
    for line in text.splitlines():
        if line.startswith("</"):
            break
        if line.startswith("- "):
            # A plugin's skill is listed as "plugin:skill: description": split at ": ".
            name, sep, description = line[2:].partition(": ")
            last = name.strip().removesuffix(":")
            listing[last] = description.strip() if sep else ""
        elif not line.strip():
            if listing:
                break
        elif last is not None:
            listing[last] = f"{listing[last]} {line.strip()}".strip()
    return listing


def skill_listing(body: Mapping[str, Any]) -> dict[str, str]:
    """name -> description of the skills a Claude Code request lists ({} when it lists none)."""
    text = listing_text(body)
    return parse_listing(text) if text is not None else {}


def listing_record(listed: Mapping[str, str], chars: int) -> SkillListing:
    """Each listed skill's state: dropped when listed by name alone, cut when its description ends
    with the CLI's ellipsis."""

    def state(description: str) -> ListingState:
        if not description:
            return ListingState.DROPPED
        return ListingState.TRUNCATED if description.endswith(ELLIPSIS) else ListingState.FULL

    skills = tuple(ListedSkill(name=n, state=state(d), chars=len(d)) for n, d in listed.items())
    return SkillListing(skills=skills, chars=chars)


CODEX_START, CODEX_END = "<skills_instructions>", "</skills_instructions>"
CODEX_SKILLS = "### Available skills"
CODEX_FILE = re.compile(r" \(file: [^)]*\)$")


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


def parse_codex(text: str) -> dict[str, str]:
    """name -> description of Codex's ``### Available skills`` lines (``- name: description (file:
    r1/name/SKILL.md)``), up to the next heading or the block's end."""
    listing: dict[str, str] = {}
    block = text.split(CODEX_SKILLS, 1)[1] if CODEX_SKILLS in text else ""
    for line in block.splitlines():
        if line.startswith(("###", CODEX_END)):
            break
        if line.startswith("- "):
            name, _, description = CODEX_FILE.sub("", line[2:]).partition(": ")
            listing[name.strip()] = description.strip()
    return listing


def _observed(
    body: bytes, marker: str, text_of: Callable[[Any], str | None], parse: Callable[[str], dict[str, str]]
) -> SkillListing | None:
    """The listing of a request body that holds ``marker`` (cheap on every other request: only such
    a body is parsed), None when it lists none."""
    if marker.encode() not in body:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    text = text_of(data)
    if text is None:
        return None
    listed = parse(text)
    entries = (f"- {n}: {d}" if d else f"- {n}" for n, d in listed.items())
    return listing_record(listed, len("\n".join(entries)))


def observe_claude(body: bytes) -> SkillListing | None:
    """The listing a Claude Code request carries, None when it carries none."""
    return _observed(
        body, LISTING_START, lambda d: listing_text(d) if isinstance(d, dict) else None, parse_listing
    )


def observe_codex(body: bytes) -> SkillListing | None:
    """The skills a Codex request lists (in its ``<skills_instructions>``), None when it lists none.
    Codex states no budget for them; a description it leaves out reads as dropped."""
    return _observed(
        body, CODEX_START, lambda d: next((t for t in _strings(d) if CODEX_START in t), None), parse_codex
    )


XML_START, XML_END = "<available_skills>", "</available_skills>"
XML_SKILL = re.compile(r"<skill>\s*<name>(.*?)</name>\s*<description>(.*?)</description>", re.S)
#: Copilot CLI's entries past its budget: names only, on one line after the XML.
BY_NAME = re.compile(r"Additional skills available \(invoke by name\): ([^\n<]+)")


def parse_xml(text: str) -> dict[str, str]:
    """name -> description of an ``<available_skills>`` block (Gemini CLI, Copilot CLI, OpenCode), and
    the skills Copilot lists by name alone past its budget (an empty description)."""
    block = text.split(XML_START, 1)[1].split(XML_END, 1)[0] if XML_START in text else ""
    listing = {n.strip(): " ".join(d.split()) for n, d in XML_SKILL.findall(block)}
    for names in BY_NAME.findall(text):
        listing |= {n.strip(): "" for n in names.split(",") if n.strip() and n.strip() not in listing}
    return listing


def observe_xml(body: bytes) -> SkillListing | None:
    """The skills a Gemini CLI, Copilot CLI or OpenCode request lists, None when it lists none."""
    return _observed(
        body, XML_START, lambda d: next((t for t in _strings(d) if XML_START in t), None), parse_xml
    )


def observe_any(*observers: Callable[[bytes], SkillListing | None]) -> Callable[[bytes], SkillListing | None]:
    """The first listing one of ``observers`` reads in a request (the CLIs of one provider differ)."""

    def observe(body: bytes) -> SkillListing | None:
        return next((found for o in observers if (found := o(body)) is not None), None)

    return observe


def claude_budget(context_window: int | None, fraction: float | None) -> int | None:
    """Claude Code's listing budget in characters for a context window (tokens), None when unknown."""
    if not context_window:
        return None
    return max(1, int(context_window * CHARS_PER_TOKEN * (fraction or BUDGET_FRACTION)))
