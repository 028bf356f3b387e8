"""Does a skill travel? A lint of a skill folder against what each agent CLI does with a skill
(executors/support.py), before any session: the tools it names, its front-matter fields, the
substitutions in its body, the files it refers to, and its description against each CLI's listing.
Each finding names the agent, the SKILL.md line and why; ``breaks`` where the skill cannot work as
written on that agent, ``degrades`` where it works with less (a field read past, a cut description).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from executors.schema import ListingState
from executors.skill_md import read_skill_md
from executors.support import CLAUDE_TOOLS, SkillSupport
from graders.grades import Part

Severity = Literal["breaks", "degrades"]
#: Tool names that are also plain words ("Read the file"): a mention counts only in backticks, as
#: "the X tool", or in allowed-tools; the distinctive ones count wherever they stand.
PLAIN_WORDS = frozenset({"Bash", "Read", "Write", "Edit", "Glob", "Grep", "Agent", "Task", "Skill"})
#: What a shell does as well: a CLI without the tool still gets it done, the model choosing how.
SHELL_WORK = frozenset({"Read", "Write", "Edit", "Glob", "Grep"})
#: What a field read past costs on a CLI that ignores it.
IGNORED = {
    "allowed-tools": (
        "degrades",
        "the tools it grants on Claude Code are not granted there (asked for, or refused)",
    ),
    "hooks": ("breaks", "its hooks never run there"),
    "context": ("degrades", "context: fork does not fork there: the skill runs in the main session"),
    "agent": ("degrades", "agent: is read past there"),
    "disable-model-invocation": ("degrades", "the model may load it there on its own"),
    "paths": ("degrades", "paths: is read past there: it may load anywhere"),
    "model": ("degrades", "model: is read past there"),
    "effort": ("degrades", "effort: is read past there"),
    "when_to_use": ("degrades", "when_to_use is not listed there: the model sees the description alone"),
    "disallowed-tools": ("degrades", "the tools it withholds stay available there"),
    "shell": ("degrades", "shell: is read past there"),
}
SUBSTITUTIONS = (
    (re.compile(r"\$\{CLAUDE_SKILL_DIR\}"), "${CLAUDE_SKILL_DIR}", "reaches the model as written"),
    (re.compile(r"\$ARGUMENTS\b|\$\d\b"), "$ARGUMENTS", "is not filled in there"),
    (re.compile(r"^\s*!`[^`]+`", re.M), "!`command`", "is not run there: the model reads the command"),
)
#: A path of the skill's own folder its body refers to: a markdown link, or a backticked relative path.
REFERENCE = re.compile(
    r"\]\((?!https?:|#|mailto:)([^)\s]+)\)|`((?:\./)?(?:scripts|references?|assets|templates|examples)/[^`\s]+)`"
)


class Finding(Part):
    """One construct of a skill that an agent CLI does not take as Claude Code does."""

    agent: str
    """the agent CLI (--runner name)"""
    line: int | None = None
    """the SKILL.md line (1-based) it stands on; None for the whole skill"""
    what: str
    """what: a tool's name, a front-matter field, a substitution, a file"""
    severity: Severity
    """breaks: it cannot work as written there; degrades: it works with less"""
    why: str
    """why, in one line"""

    @property
    def text(self) -> str:
        where = f"SKILL.md:{self.line}" if self.line else "the skill"
        return f"{self.agent}: {where}: {self.why}"


def _lines(text: str, pattern: re.Pattern[str]) -> list[int]:
    """The 1-based line numbers a pattern matches on."""
    return sorted({text.count("\n", 0, m.start()) + 1 for m in pattern.finditer(text)})


def tool_mentions(body: str, allowed: str) -> dict[str, int | None]:
    """Claude Code tools a skill names -> the first body line (1-based) naming it, None when only its
    allowed-tools grants it."""
    found: dict[str, int | None] = {}
    for tool in CLAUDE_TOOLS:
        name = re.escape(tool)
        pattern = rf"`{name}(?:\([^`]*\))?`|\b{name}\s+tool\b" if tool in PLAIN_WORDS else rf"\b{name}\b"
        lines = _lines(body, re.compile(pattern))
        if lines:
            found[tool] = lines[0]
        elif re.search(rf"(?:^|[\s,\[]){name}(?:\(|\b)", allowed):
            found[tool] = None
    return found


def _tool_findings(agent: str, support: SkillSupport, mentioned: dict[str, int | None]) -> list[Finding]:
    out = []
    for tool, line in mentioned.items():
        own = support.tool(tool)
        if own is None and tool in SHELL_WORK:
            severity: Severity = "degrades"
            why = f"names {tool}, which {agent} lacks: the model must do it with its shell"
        elif own is None:
            severity, why = "breaks", f"names {tool}, which {agent} lacks"
        elif own in support.headless:
            severity, why = "degrades", f"names {tool} ({own} there): {support.headless[own]}"
        elif own.lower() != tool.lower():
            severity, why = (
                "degrades",
                f"names {tool}: {agent} calls it {own}, and the model must make the match",
            )
        else:
            continue
        out.append(Finding(agent=agent, line=line, what=tool, severity=severity, why=why))
    return out


def _field_lines(text: str, end: int) -> dict[str, int]:
    head = text[:end]
    return {
        m.group(1): head.count("\n", 0, m.start()) + 1 for m in re.finditer(r"^([A-Za-z_-]+):", head, re.M)
    }


def _reference_findings(folder: Path, body: str, offset: int, agents: Sequence[str]) -> list[Finding]:
    """Files of the skill's folder its body refers to that are not there: broken on every agent."""
    out = []
    for m in REFERENCE.finditer(body):
        ref = (m.group(1) or m.group(2) or "").split("#", 1)[0]
        if not ref or PurePosixPath(ref).is_absolute() or "${" in ref or "://" in ref:
            continue
        parts = [p for p in PurePosixPath(ref).parts if p not in (".",)]
        if ".." in parts or (folder.joinpath(*parts)).exists():
            continue
        line = offset + body.count("\n", 0, m.start()) + 1
        why = f"refers to {ref}, which the skill's folder does not hold"
        out += [Finding(agent=a, line=line, what=ref, severity="breaks", why=why) for a in agents]
    return out


def _description_findings(
    agent: str, support: SkillSupport, name: str, description: str, folder: str
) -> list[Finding]:
    out = []
    rule = support.listing
    if support.needs_description and not description.strip():
        why = "has no description: it is not loaded or not listed there"
        out.append(Finding(agent=agent, what="description", severity="breaks", why=why))
    if rule.description_cap is not None and len(description) > rule.description_cap:
        breaks = rule.over_cap == "not loaded"
        why = (
            f"its description ({len(description):,} characters) is over {agent}'s {rule.description_cap:,}: "
            + ("the skill is not loaded at all" if breaks else "it is cut")
        )
        severity: Severity = "breaks" if breaks else "degrades"
        out.append(Finding(agent=agent, what="description", severity=severity, why=why))
    if support.name_is_folder and name != folder:
        why = f"its name {name!r} is not its folder's ({folder!r}): {agent} does not load it"
        out.append(Finding(agent=agent, what="name", severity="breaks", why=why))
    return out


def lint_skill(folder: Path, agents: Iterable[tuple[str, SkillSupport]]) -> list[Finding]:
    """Every finding of the skill in ``folder`` (holding SKILL.md) on each of ``agents`` (name, support)."""
    listed = list(agents)
    if not (folder / "SKILL.md").is_file():  # nothing to lint (the loaders refuse such a skill before a run)
        return []
    text = (folder / "SKILL.md").read_text(encoding="utf-8", errors="replace")
    doc = read_skill_md(text)
    fields = _field_lines(text, doc.end)
    granted = doc.meta.get("allowed-tools") or ""
    allowed = ", ".join(map(str, granted)) if isinstance(granted, list) else str(granted)
    offset = text.count("\n", 0, doc.end)
    mentioned = {
        tool: offset + line if line is not None else fields.get("allowed-tools")
        for tool, line in tool_mentions(doc.body, allowed).items()
    }
    findings = _reference_findings(folder, doc.body, offset, [a for a, _ in listed])
    for agent, support in listed:
        findings += _tool_findings(agent, support, mentioned)
        for field, (severity, why) in IGNORED.items():
            if field in doc.meta and field not in support.fields:
                line = fields.get(field)
                findings.append(
                    Finding(agent=agent, line=line, what=field, severity=severity, why=f"{field}: {why}")
                )
        if not support.substitutes:
            for pattern, construct, why in SUBSTITUTIONS:
                for line in _lines(doc.body, pattern)[:1]:
                    findings.append(
                        Finding(
                            agent=agent,
                            line=line + offset,
                            what=construct,
                            severity="breaks",
                            why=f"{construct} {why}",
                        )
                    )
        findings += _description_findings(
            agent, support, doc.name(folder.name), doc.description(), folder.name
        )
    return findings


def listing_states(
    skills: Sequence[tuple[str, str]], agents: Iterable[tuple[str, SkillSupport]], window: int | None = None
) -> dict[str, dict[str, ListingState]]:
    """agent -> each skill's state in the listing its CLI would give them (a --dry-run's forecast)."""
    return {agent: support.listing.states(skills, window) for agent, support in agents}
