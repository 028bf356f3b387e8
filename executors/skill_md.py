"""A SKILL.md read as Claude Code reads it: every mode, the lint and the listing estimate use this one
reader, so what skillab says of a skill's name and description is what the agent was shown.

Claude Code (2.1.332, read from its bundle) parses the front matter as YAML; when that fails, it tries
once more with each top-level ``key: value`` line whose value holds ``": "`` or one of
``{}[]*&#!|>%@``` `` double-quoted (and leading tabs made spaces), so ``description: Use when: a user
asks`` loads. When that fails too, or there is no front matter, the skill still loads: its name is
its folder's, its description the body's first non-empty line (a heading's ``#`` dropped), cut to
100 characters."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import yaml

from executors.parsing import load_yaml

#: The opening delimiter, then everything up to the first ``---`` after it (Claude Code's pattern).
FRONT = re.compile(r"^---\s*\n([\s\S]*?)---\s*\n?")
_LINE = re.compile(r"^([a-zA-Z_-]+):\s+(\S.*)$")
_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
FALLBACK_CHARS = 100

#: How the front matter was read: as YAML, after quoting its values, or not at all (the fallbacks).
Parsed = Literal["yaml", "quoted", "none"]


@dataclass(frozen=True)
class SkillDoc:
    """A SKILL.md's front matter as the CLI takes it, and its body."""

    meta: dict[str, object] = field(default_factory=dict)
    body: str = ""
    parsed: Parsed = "none"
    #: Where the front matter ends in the text (0 when there is none): a rewrite keeps what follows.
    end: int = 0

    def description(self) -> str:
        """The description the CLI lists: the front matter's, else the body's first line."""
        given = self.meta.get("description")
        if isinstance(given, str) and given.strip():
            return given
        return first_line(self.body)

    def name(self, folder: str) -> str:
        given = self.meta.get("name")
        return str(given) if isinstance(given, str | int | float) and str(given) else folder


def first_line(body: str) -> str:
    """Claude Code's fallback description: the first non-empty line, a heading's marks dropped."""
    line = next((s.strip() for s in body.splitlines() if s.strip()), "")
    line = re.sub(r"^#+\s+", "", line)
    return line if len(line) <= FALLBACK_CHARS else line[: FALLBACK_CHARS - 3] + "..."


def _quoted(text: str) -> str:
    """The front matter with every top-level value that YAML would misread double-quoted."""
    out = []
    for raw in text.splitlines():
        line = re.sub(r"^\t+", lambda m: "  " * len(m.group(0)), raw)
        match = _LINE.match(line)
        if match:
            key, value = match.groups()
            quoted = value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1
            if not quoted and not (value.startswith("[") and value.endswith("]")) and _SPECIAL.search(value):
                line = f'{key}: "' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(line)
    return "\n".join(out) + "\n"


def read_skill_md(text: str) -> SkillDoc:
    """The front matter and body of a SKILL.md's text, read as Claude Code reads them."""
    text = text.removeprefix("\ufeff")
    match = FRONT.match(text) if text.find("---", 3) >= 0 else None
    if match is None:
        return SkillDoc(body=text)
    body, end = text[match.end() :], match.end()
    data, parsed = _yaml(match.group(1)), "yaml"
    if data is None:
        data, parsed = _yaml(_quoted(match.group(1))), "quoted"
    if not isinstance(data, dict):  # unreadable, or a list or a scalar: no front matter to the CLI
        return SkillDoc(body=body, end=end)
    return SkillDoc({str(k): v for k, v in data.items()}, body, "yaml" if parsed == "yaml" else "quoted", end)


def _yaml(text: str) -> object:
    try:
        return load_yaml(text)
    except yaml.YAMLError:
        return None
