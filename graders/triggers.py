"""Did a skill fire? Detection over a whole agent session, every turn, for every agent CLI.

A firing is a tool call, never prose: a final answer that names the skill is not one. Which tool
calls load a skill is each CLI's own knowledge (``invoked_skills`` on its executor class: Claude
Code's ``Skill`` tool, Gemini CLI's ``activate_skill``, a Codex shell command reading a SKILL.md);
the names it gives are matched here against the skills under test, ``plugin:name`` and ``name``
being the same skill.

A session counts only when it ended normally (status ``success``). One that failed (API error,
timeout, crash, turn limit, flood) is an ``error``: counted and shown, excluded from every rate,
whether or not something fired before it failed (keeping only failed sessions that fired would bias
rates upwards). A session whose listing (Claude's init ``skills``) lacks a skill under test under
exactly its name is ``not_listed``: a setup failure, not a no-fire.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path

from executors.agent import agent_cli_classes
from executors.schema import AgentEvent, AgentSession, Frozen, SkillListing
from executors.skill_md import read_skill_md

MODEL_OUTPUT = ("text", "tool_use")


class TriggerStatus(StrEnum):
    OK = "ok"  # ended normally: fired or not, it counts
    ERROR = "error"  # the session failed: counted, never in a denominator
    NOT_LISTED = "not_listed"  # a skill under test was missing from the listing: a setup failure


class Firing(Frozen):
    """One call that loaded a skill."""

    skill: str  # the listed name it matched, else the name as invoked
    invoked: str  # as the model wrote it
    turn: int  # 0-based index of the model response that made the call
    event: int  # index in the session's events
    tool: str
    ok: bool | None = None  # whether the call succeeded; None when no result came back


class SessionTriggers(Frozen):
    """What fired in one session, and whether the session counts."""

    status: TriggerStatus
    session_status: str
    reason: str | None = None
    firings: tuple[Firing, ...] = ()
    listed: tuple[str, ...] | None = None  # the session's skill listing, when the CLI shows it
    missing: tuple[str, ...] = ()  # skills under test absent from that listing
    listing: SkillListing | None = None  # what the model's request listed, description by description

    @property
    def counted(self) -> bool:
        return self.status == TriggerStatus.OK

    @property
    def fired(self) -> tuple[str, ...]:
        """Distinct skills that fired, in the order they first fired."""
        return tuple(dict.fromkeys(f.skill for f in self.firings))

    def fired_skill(self, name: str) -> bool:
        return any(f.skill == name for f in self.firings)

    def first_turn(self, name: str) -> int | None:
        return next((f.turn for f in self.firings if f.skill == name), None)

    def first_turns(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.firings:
            out.setdefault(f.skill, f.turn)
        return out


def bare(name: str) -> str:
    """A skill name without a leading slash or surrounding space."""
    return name.strip().lstrip("/")


def matches(invoked: str, name: str) -> bool:
    """Whether a call naming ``invoked`` loads the skill listed as ``name``: equal, or equal once a
    ``plugin:`` prefix that only one of the two carries is dropped."""
    a, b = bare(invoked), bare(name)
    if a == b:
        return True
    if (":" in a) != (":" in b):
        return a.rsplit(":", 1)[-1] == b.rsplit(":", 1)[-1]
    return False


def turns(events: Sequence[AgentEvent]) -> list[int]:
    """The model response each event belongs to: a new one starts at the first text or tool call after
    a tool result. (Codex shows each command with its result at once, so there each command is a turn.)"""
    out, turn, after_result, seen_output = [], 0, False, False
    for event in events:
        if event.kind in MODEL_OUTPUT:
            if after_result and seen_output:
                turn += 1
            after_result, seen_output = False, True
        elif event.kind == "tool_result":
            after_result = True
        out.append(turn)
    return out


def _invoked(event: AgentEvent) -> list[str]:
    """What a skill-loading tool call names, whichever CLI's tool it is."""
    return next((names for cli in agent_cli_classes() if (names := cli.invoked_skills(event))), [])


def firings(events: Sequence[AgentEvent], candidates: Iterable[str] = ()) -> list[Firing]:
    """Every skill-loading call of a session, in order; names matched to ``candidates`` (and listed
    names) where they match, so ``plugin:x`` and ``x`` count as the same skill."""
    names = list(candidates)
    results = {e.tool_id: not e.is_error for e in events if e.kind == "tool_result" and e.tool_id}
    out = []
    for index, (event, turn) in enumerate(zip(events, turns(events), strict=True)):
        if event.kind != "tool_use" or not event.tool:
            continue
        for value in _invoked(event):
            exact = next((n for n in names if bare(n) == value), None)
            canonical = exact or next((n for n in names if matches(value, n)), value)
            out.append(
                Firing(
                    skill=canonical,
                    invoked=value,
                    turn=turn,
                    event=index,
                    tool=event.tool,
                    ok=results.get(event.tool_id) if event.tool_id else None,
                )
            )
    return out


def detect(
    session: AgentSession, skills: Sequence[str] = (), required: Sequence[str] | None = None
) -> SessionTriggers:
    """Which skills fired in ``session``, and whether it counts.

    ``skills`` are the candidates, firings matched to their names. The ``required`` ones (default:
    all; in an environment, the skills under test only: an installed skill the CLI leaves out is a
    finding, not a setup failure) must be in the session's listing under exactly their names when
    the CLI shows a listing (Claude does; Codex and Gemini do not, see :func:`install_problem` for
    a check before the run)."""
    listed = tuple(session.skills_listed) if session.skills_listed is not None else None
    found = tuple(firings(session.events, [*skills, *(listed or ())]))
    common = {
        "session_status": str(session.status),
        "firings": found,
        "listed": listed,
        "listing": session.listing,
    }
    needed = skills if required is None else required
    missing = tuple(s for s in needed if listed is not None and s not in listed)
    if missing:
        hints = [_hint(s, listed or ()) for s in missing]
        return SessionTriggers(
            status=TriggerStatus.NOT_LISTED,
            reason="not in the session's skill listing: " + "; ".join(hints),
            missing=missing,
            **common,
        )
    if not session.ok:
        return SessionTriggers(
            status=TriggerStatus.ERROR,
            reason=f"{session.status}: {session.error or 'the session did not end normally'}",
            **common,
        )
    return SessionTriggers(status=TriggerStatus.OK, **common)


def _hint(name: str, listed: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(listed), n=1, cutoff=0.5)
    return f"{name!r}" + (f" (listed: {close[0]!r}; installed under another name?)" if close else "")


def install_problem(name: str, folder: str | Path) -> str | None:
    """Why the skill in ``folder`` would not be listed as ``name`` (None when it would be).

    The CLIs list a project skill by its folder name; the executors install it as ``name``. A
    front matter ``name`` that differs means the benchmark would look for one name while the model
    sees another; a missing ``description`` leaves the model nothing to decide on. A single
    ``<name>.md`` file (a slash command in ``.claude/commands``) is not a skill at all."""
    path = Path(folder)
    skill_md = path / "SKILL.md"
    if not skill_md.is_file():
        kind = "a single .md file (a slash command, not a skill)" if path.suffix == ".md" else "no SKILL.md"
        return f"{path}: {kind}; a skill is a folder holding SKILL.md"
    doc = read_skill_md(skill_md.read_text(encoding="utf-8", errors="replace"))
    if doc.parsed == "none":
        return (
            f"{skill_md}: no front matter Claude Code can read (--- name/description ---); it would list "
            f"the body's first line as the description: {doc.description()!r}"
        )
    declared = doc.meta.get("name")
    if declared is not None and str(declared) != name:
        return (
            f"{skill_md}: name: {declared!r} differs from the name it is installed and listed as ({name!r}); "
            "rename one so they agree"
        )
    if not doc.description().strip():
        return f"{skill_md}: description: missing or empty; it is all the model sees before it decides"
    return None


def sandbox_problems(sandbox: str | Path, names: Iterable[str]) -> list[str]:
    """What in a sandbox's location would spoil a trigger measurement: skills in a parent folder's
    ``.claude/skills`` (Claude Code loads those too) and a skill's name in the path (the working
    directory is part of the system prompt, so the model would read the name there)."""
    path = Path(sandbox).resolve()
    problems = [
        f"{parent / '.claude' / 'skills'}: a parent folder of the sandbox holds skills, which the CLI also loads"
        for parent in path.parents
        if (parent / ".claude" / "skills").is_dir()
    ]
    problems += [
        f"{path}: the sandbox path contains the skill name {name!r}, which the model sees in its prompt"
        for name in names
        if name and name.lower() in str(path).lower()
    ]
    return problems
