"""Agentic-mode tasks in the seed's markdown format, parsed without I/O.

# Task: <name>
difficulty: easy|medium|hard
category: <domain>
type: positive|negative-control
## Prompt / ## Expected Outcome / ## Verification Checks / ## Grading Rubric / ## Tags
## User / ## Permissions / ## MCP (YAML, optional: a simulated user, a permission policy, MCP
stand-ins; docs/agentic.md)

A check's path (file_exists's file, file_contains's ``in <file>``, syntax_valid's file) names a file
inside the session's sandbox: an absolute path or a ``..`` component is rejected when the task loads.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator

from executors.errors import InputError
from executors.schema import McpServer, OneLine, PermissionPolicy, SimulatedUser, mcp_servers
from graders.plugin_eval import PluginCase

#: Checks of the sandbox's files, then of the conversation (a case with a ``## User``): ``asked``, the
#: agent asked a question matching the pattern; ``asked_before``, its first question came before its
#: first use of the tool; ``refused``, the permission policy or the user refused a call of the tool.
FILE_CHECKS = ("file_exists", "file_contains", "syntax_valid", "runs_without_error")
CONVERSATION_CHECKS = ("asked", "asked_before", "refused")
CHECK_KINDS = (*FILE_CHECKS, *CONVERSATION_CHECKS)
DIFFICULTIES = ("easy", "medium", "hard")
TYPES = ("positive", "negative-control")
SECTIONS = (
    "prompt",
    "expected outcome",
    "verification checks",
    "grading rubric",
    "tags",
    "user",
    "permissions",
    "mcp",
)


class Check(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal[
        "file_exists",
        "file_contains",
        "syntax_valid",
        "runs_without_error",
        "asked",
        "asked_before",
        "refused",
    ]
    target: str  # file, pattern, language or file, or command
    file: str | None = None  # file_contains: the file to search (None: every file)

    @model_validator(mode="after")
    def _confined(self) -> Check:
        for field, value in self.paths():
            confined(self.kind, field, value)
        return self

    def paths(self) -> list[tuple[str, str]]:
        """(field, value) of every value that names a file in the sandbox."""
        if self.kind == "file_contains":
            return [("file", self.file)] if self.file else []
        if self.kind in ("file_exists", "syntax_valid"):  # a language name passes as a relative path
            return [("path", self.target)]
        return []

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.target}" + (f" in {self.file}" if self.file else "")


class AgentTask(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: OneLine  # the file stem, e.g. task-01-easy
    name: OneLine
    difficulty: OneLine
    category: OneLine
    type: OneLine
    prompt: str
    expected_outcome: str
    checks: tuple[Check, ...]
    rubric: str
    tags: tuple[str, ...] = ()
    # skill-creator suites (flows.inputs.suites.skill_creator): files copied into each session's sandbox
    # before the agent starts (relative to input_root, kept at the same relative path), and the
    # statements the expectation judge checks instead of the four criteria.
    input_files: tuple[str, ...] = ()
    input_root: str | None = None
    expectations: tuple[str, ...] = ()
    # A case of a Claude Code plugin eval suite: its graders decide it (graders.plugin_eval).
    plugin_case: PluginCase | None = None
    case_dir: str | None = None  # the case's folder (its scaffold script is found there)
    # A case that talks to the world: who answers the agent's questions, how its permission prompts
    # are answered (executors.conversation); both arms meet the same user.
    user: SimulatedUser | None = None
    permissions: PermissionPolicy | None = None
    # MCP servers the sessions meet, played by stand-ins from scripted responses (executors.mcp_standin)
    mcp: Annotated[dict[str, McpServer] | None, AfterValidator(mcp_servers)] = None

    @model_validator(mode="after")
    def _conversation_checks(self) -> AgentTask:
        if self.user is None and (c := next((c for c in self.checks if c.kind in CONVERSATION_CHECKS), None)):
            raise ValueError(f"checks: {c.kind} grades a conversation: the task needs a '## User' section")
        return self

    @property
    def negative_control(self) -> bool:
        return self.type == "negative-control"

    @property
    def expects_skill(self) -> bool | None:
        """Whether the skill should be used: a plugin eval case says so through its graders (or
        says nothing); a task file through its type."""
        if self.plugin_case is not None:
            return self.plugin_case.expects_skill
        return not self.negative_control


def confined(kind: str, field: str, value: str) -> str:
    """``value`` when it is a path relative to the sandbox that stays inside it; else ValueError
    naming the check and the field."""
    if PurePosixPath(value).is_absolute() or re.match(r"^[A-Za-z]:[\\/]", value):
        raise ValueError(
            f"{kind}: {field} {value!r} is absolute: checks may only name files inside the sandbox, "
            "relative to it"
        )
    if ".." in re.split(r"[\\/]", value):
        raise ValueError(
            f"{kind}: {field} {value!r} climbs out of the sandbox with '..': checks may only name files "
            "inside the sandbox"
        )
    return value


def parse_check(line: str) -> Check:
    kind, sep, rest = line.partition(":")
    kind, rest = kind.strip(), rest.strip()
    if not sep or kind not in CHECK_KINDS:
        raise InputError(f"unknown check {kind!r} (use {', '.join(CHECK_KINDS)})")
    if not rest:
        raise InputError(f"{kind}: needs a value")
    rest = rest.strip("`")
    if kind == "file_contains":
        match = re.match(r"^(.*\S)\s+in\s+(\S+)$", rest)
        if match:
            file = confined(kind, "file", match.group(2).strip("`"))
            return Check(kind="file_contains", target=match.group(1).strip("`\"'"), file=file)
        return Check(kind="file_contains", target=rest.strip("\"'"))
    if kind in ("file_exists", "syntax_valid"):
        confined(kind, "path", rest)
    if kind == "asked":
        try:
            re.compile(rest)
        except re.error as exc:
            raise InputError(f"asked: not a regular expression ({exc})") from None
    return Check(kind=kind, target=rest)  # type: ignore[arg-type]


def _yaml_section(sections: dict[str, str], name: str, model: Any) -> Any:
    """A ``## User``, ``## Permissions`` or ``## MCP`` section: YAML (in a code fence or not) of
    ``model`` (a model class or a type pydantic validates)."""
    text = sections.get(name)
    if not text:
        return None
    text = re.sub(r"^```\w*\n|\n```$", "", text.strip())
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{name}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{name}: a mapping of fields, e.g. 'facts: {{region: EMEA}}'")
    try:
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        raise InputError(
            [
                f"{name}.{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            ]
        ) from None


def parse_task(text: str, task_id: str) -> AgentTask:
    """Raise ValueError('field: problem') on a malformed task file."""
    title = re.search(r"^#\s*Task:\s*(.+)$", text, re.M)
    if not title:
        raise InputError("title: the first heading must be '# Task: <name>'")
    header = text[: text.find("\n##")] if "\n##" in text else text
    fields = {
        k.lower(): v.strip()
        for k, v in re.findall(r"^(difficulty|category|type):\s*(.+)$", header, re.M | re.I)
    }
    sections: dict[str, str] = {}
    for match in re.finditer(r"^##\s*(.+?)\s*$(.*?)(?=^##\s|\Z)", text, re.M | re.S):
        sections[match.group(1).strip().lower()] = match.group(2).strip()
    for name in ("prompt", "expected outcome", "verification checks", "grading rubric"):
        if not sections.get(name):
            raise InputError(f"{name}: section '## {name.title()}' is missing or empty")
    difficulty = fields.get("difficulty", "").lower()
    kind = fields.get("type", "positive").lower()
    if difficulty not in DIFFICULTIES:
        raise InputError(
            f"difficulty: must be one of {', '.join(DIFFICULTIES)} (got {difficulty or 'nothing'!r})"
        )
    if kind not in TYPES:
        raise InputError(f"type: must be one of {', '.join(TYPES)} (got {kind!r})")
    checks = []
    for i, line in enumerate(sections["verification checks"].splitlines()):
        line = line.strip()
        if not line.startswith(("-", "*")):
            continue
        try:
            checks.append(parse_check(line[1:].strip()))
        except ValueError as exc:
            raise InputError(f"verification checks[{i}]: {exc}") from None
    tags = tuple(t.strip() for t in sections.get("tags", "").replace("\n", ",").split(",") if t.strip())
    try:
        return AgentTask(
            task_id=task_id,
            name=title.group(1).strip(),
            difficulty=difficulty,
            category=fields.get("category", "general"),
            type=kind,
            prompt=sections["prompt"],
            expected_outcome=sections["expected outcome"],
            checks=tuple(checks),
            rubric=sections["grading rubric"],
            tags=tags,
            user=_yaml_section(sections, "user", SimulatedUser),
            permissions=_yaml_section(sections, "permissions", PermissionPolicy),
            mcp=_yaml_section(sections, "mcp", dict[str, McpServer]),
        )
    except ValidationError as exc:
        raise InputError(
            [
                f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            ]
        ) from None
