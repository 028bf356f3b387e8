"""Claude Code plugin eval suites (``claude plugin eval``, 2.1.269+), parsed and graded without I/O.

A case is a folder under the plugin's ``evals/``: ``case.yaml`` (``schema_version``, ``name``,
``execution: {prompt, max_turns, ...}``, ``graders: [...]``) and/or ``prompt.md`` (front matter with
the execution keys, the body is the prompt) plus ``graders/<name>.md`` (front matter with ``type:``,
the body is the pattern or the criteria). The merge, the defaults, the grader kinds and their
pass/fail rules follow Claude Code 2.1.330 as read from its own schema and graders:

- ``regex`` over ``last_message`` (text of the last assistant message), ``trace`` (every stream event
  as one JSON line), ``files`` (paths created during the run, one per line) or ``{source: file,
  path}`` (one file's content); ``match`` contains | not_contains | count:N.
- ``tool_used``: the calls of ``tool`` (input, as JSON, searched by ``input_match``) number
  ``min`` (default 1) .. ``max``.
- ``tool_order``: the first matching call of ``before`` precedes the first of ``after``.
- ``file_exists``: a created path matches the glob (``*``, ``**/``, ``?``), or none does.
- ``llm``: a judge answers PASS or FAIL; three votes, the majority wins. ``baseline`` likewise,
  with a reference transcript.

A run's score is the weighted share of passed graders that are scored. With two arms, a grader
marked ``arm: with-only`` (and a ``tool_used: Skill`` grader without ``arm``) is an indicator that
the plugin fired: reported in the with-plugin arm, left out of the score of both arms, and not run
in the baseline arm (unless every grader of the case is one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from executors.case_env import refusal
from executors.errors import InputError
from executors.parsing import JsonObject, load_yaml
from executors.schema import OneLine
from graders.loading import closest

GRADER_KINDS = ("regex", "tool_order", "tool_used", "file_exists", "llm", "baseline")
TEXT_TARGETS = ("trace", "last_message", "files", "mock_calls")
#: prompt.md front matter keys that go to the top of the case, and those that go under execution.
TOP_KEYS = ("schema_version", "name", "description", "tags", "plugins", "runs", "expected_outcome")
EXECUTION_KEYS = (
    "model",
    "max_turns",
    "timeout_seconds",
    "allowed_tools",
    "disallowed_tools",
    "artifact_publish",
    "growthbook_overrides",
    "append_system_prompt",
    "env",
)
#: What every case is offered whatever its allowed_tools list: the official runner's read-only set
#: (Claude Code 2.1.332's plugin eval; the CLI leaves out a name it does not have, Agent is its Task).
READ_ONLY_TOOLS = (
    "Read", "Glob", "Grep", "NotebookRead", "Skill", "AskUserQuestion",
    "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "TaskStop", "Agent", "TodoWrite",
)  # fmt: skip
#: The body of a grader .md fills this field when the front matter leaves it out.
BODY_FIELD = {"llm": "criteria", "baseline": "criteria", "regex": "pattern"}
SUPPORTED_MAJOR = 1
JUDGE_VOTES = 3
#: Settings skillab reads but does not act on (reported with the suite, never silently dropped).
UNSUPPORTED = ("artifact_publish", "growthbook_overrides", "plugins")
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileSource(_Strict):
    source: Literal["file"]
    path: str


Target = Literal["trace", "last_message", "files", "mock_calls"] | FileSource


class ToolRef(_Strict):
    tool: str
    input_match: str | None = None


def _tool_ref(value: Any) -> Any:
    return {"tool": value} if isinstance(value, str) else value


class _Grader(_Strict):
    name: OneLine
    weight: float = Field(1.0, gt=0)
    arm: Literal["with-only", "both"] | None = None


class RegexGrader(_Grader):
    type: Literal["regex"]
    target: Target = "last_message"
    pattern: str
    flags: str = Field("", pattern=r"^[dgimsuvy]*$")
    match: str = Field("contains", pattern=r"^(contains|not_contains|count:\d+)$")


class ToolOrderGrader(_Grader):
    type: Literal["tool_order"]
    before: ToolRef
    after: ToolRef

    _refs = field_validator("before", "after", mode="before")(_tool_ref)


class ToolUsedGrader(_Grader):
    type: Literal["tool_used"]
    tool: str
    input_match: str | None = None
    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=0)


class FileExistsGrader(_Grader):
    type: Literal["file_exists"]
    path: str
    exists: bool = True


class LlmGrader(_Grader):
    type: Literal["llm"]
    criteria: str
    focus: Target = "last_message"


class BaselineGrader(_Grader):
    type: Literal["baseline"]
    baseline_file: str
    criteria: str


Grader = Annotated[
    RegexGrader | ToolOrderGrader | ToolUsedGrader | FileExistsGrader | LlmGrader | BaselineGrader,
    Field(discriminator="type"),
]
GRADER_MODELS = (RegexGrader, ToolOrderGrader, ToolUsedGrader, FileExistsGrader, LlmGrader, BaselineGrader)
JudgedGrader = LlmGrader | BaselineGrader


class PluginCase(_Strict):
    """One case, merged from case.yaml and prompt.md + graders/*.md, with the official defaults."""

    name: OneLine = Field(min_length=1)
    description: str | None = None
    tags: tuple[str, ...] = ()
    prompt: str
    max_turns: int = Field(10, gt=0, le=200)
    timeout_seconds: int = Field(300, gt=0, le=3600)
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] | None = None
    append_system_prompt: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    runs: int = Field(3, gt=0, le=50)
    graders: tuple[Grader, ...]  # at least one: checked before validation, with the file's words
    expected_outcome: str | None = None
    scaffold_script: str | None = None
    history_file: str | None = Field(None, min_length=1)  # a recorded session the case continues
    add_dirs: tuple[str, ...] = ()  # fixture folders of the case, readable by the session (--add-dir)
    unsupported: tuple[str, ...] = ()  # documented settings this case uses that skillab ignores
    warnings: tuple[str, ...] = ()  # graders that will fail whatever the session does (a bad regex)

    @property
    def expects_skill(self) -> bool | None:
        """Whether the case expects a skill to fire: True with a Skill indicator asking for a call (a
        ``tool_used: Skill`` grader, with-only or without ``arm``, not ``max: 0``); else False with a
        ``tool_used: Skill`` grader of ``max: 0`` for any skill (or a case named ``neg-...``, an
        author's negative); None when the case says neither (then no advice about triggering)."""
        skill = [g for g in self.graders if isinstance(g, ToolUsedGrader) and g.tool == "Skill"]
        # a call asked for wins over a max: 0 (which may forbid one skill while another must fire);
        # a max: 0 of every skill (no input_match) makes the case a negative
        if any(is_indicator(g) and g.max != 0 and (g.min is None or g.min > 0) for g in skill):
            return True
        if any(g.max == 0 and g.input_match is None for g in skill):
            return False
        return False if self.name.lower().startswith(("neg-", "negative-")) else None


# ----------------------------------------------------------------- parsing


def front_matter(text: str, label: str) -> tuple[JsonObject, str, bool]:
    """(front matter, body, had front matter); InputError naming ``label`` when it is malformed."""
    text = text.removeprefix("\ufeff")
    found = FRONT_MATTER.match(text)
    if not found:
        if re.match(r"^---[ \t]*\r?\n", text):
            raise InputError(f"{label}: front matter: unterminated (an opening '---' with no closing '---')")
        return {}, text, False
    try:
        data = load_yaml(found.group(1) or "")
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "unreadable"
        raise InputError(f"{label}: front matter: invalid YAML ({first})") from None
    if data is None:
        return {}, text[found.end() :], True
    if not isinstance(data, dict):
        raise InputError(f"{label}: front matter: must be a mapping of key: value")
    return data, text[found.end() :], True


def grader_from_markdown(text: str, label: str, stem: str) -> JsonObject | None:
    """A grader's raw fields from graders/<stem>.md; None when the file has no front matter (the
    official runner skips such a file too)."""
    fm, body, had = front_matter(text, label)
    if not had:
        return None
    kind = fm.get("type")
    if not isinstance(kind, str):
        raise InputError(f"{label}: type: required in the front matter ({' | '.join(GRADER_KINDS)})")
    raw = {"name": stem, **fm}
    body_field = BODY_FIELD.get(kind)
    if body_field and body_field not in raw and body.strip():
        raw[body_field] = body.strip()
    return raw


def merge_case(
    case_yaml: JsonObject | None,
    prompt_md: tuple[str, str] | None,
    grader_mds: Sequence[tuple[str, str]],
    folder_name: str,
) -> JsonObject:
    """case.yaml's data with prompt.md's keys and body and the graders/*.md laid over it, as the
    official runner merges them. ``prompt_md`` and each grader are (label, text)."""
    base: JsonObject = dict(case_yaml) if case_yaml is not None else {"schema_version": "1.1"}
    base.setdefault("name", folder_name)
    execution = dict(base.get("execution") or {}) if isinstance(base.get("execution"), dict) else {}
    if "execution" in base and not isinstance(base["execution"], dict):
        execution = base["execution"]  # left for validation to reject
    if prompt_md is not None:
        label, text = prompt_md
        fm, body, _ = front_matter(text, label)
        for key, value in fm.items():
            if key in TOP_KEYS:
                base[key] = value
            elif key in EXECUTION_KEYS:
                if (
                    key == "disallowed_tools"
                    and isinstance(execution.get(key), list)
                    and isinstance(value, list)
                ):
                    value = [*execution[key], *value]
                execution[key] = value
            else:
                raise InputError(
                    f"{label}: {key}: unknown front matter key{closest(str(key), [*TOP_KEYS, *EXECUTION_KEYS])}"
                )
        if body.strip():
            execution["prompt"] = body.strip()
    base["execution"] = execution
    graders = [
        (label, g) for label, text in grader_mds if (g := grader_from_markdown(text, label, _stem(label)))
    ]
    if graders:
        given = list(base.get("graders") or [])
        base["graders"] = [*given, *(g for _, g in graders)]
        base[GRADER_FILES] = {len(given) + i: label for i, (label, _) in enumerate(graders)}
    return base


def _stem(label: str) -> str:
    name = label.replace("\\", "/").rsplit("/", 1)[-1]
    return name.removesuffix(".md")


def _check_version(data: JsonObject, label: str) -> None:
    version = data.get("schema_version")
    if not isinstance(version, str):
        raise InputError(f'{label}: schema_version: required (e.g. "1.0")')
    major = version.split(".", 1)[0]
    if not major.isdigit():
        raise InputError(f"{label}: schema_version: {version!r} is not a version")
    if int(major) > SUPPORTED_MAJOR:
        raise InputError(
            f"{label}: schema_version: {version!r} is newer than this reader ({SUPPORTED_MAJOR}.x)"
        )


def _sections(data: JsonObject, label: str) -> tuple[JsonObject, JsonObject]:
    """The case's execution and context mappings, every key of the case known."""
    execution = data.get("execution")
    if not isinstance(execution, dict):
        raise InputError(f"{label}: execution: must be a mapping")
    context = data.get("context") or {}
    if not isinstance(context, dict):
        raise InputError(f"{label}: context: must be a mapping")
    unknown = [k for k in data if k not in (*TOP_KEYS, "context", "execution", "graders")]
    unknown += [f"execution.{k}" for k in execution if k not in (*EXECUTION_KEYS, "prompt")]
    unknown += [f"context.{k}" for k in context if k not in ("scaffold_script", "history_file", "add_dirs")]
    if unknown:
        valid = [*TOP_KEYS, "context", "execution", "graders", *EXECUTION_KEYS, "prompt"]
        raise InputError([f"{label}: {k}: unknown field{_hint(k, valid)}" for k in unknown])
    env = execution.get("env") or {}
    for name in env if isinstance(env, dict) else ():
        why = refusal(str(name))
        if why is not None:
            raise InputError(f"{label}: execution.env.{name}: a case may not set it ({why})")
    return execution, context


def _checked(case: PluginCase, label: str) -> PluginCase:
    """The case with a prompt, unique grader names, and its warnings and unsupported parts noted."""
    if not case.prompt.strip():
        why = (
            "with context.history_file, the resumed session needs a next turn"
            if case.history_file
            else "a prompt.md body, or execution.prompt in case.yaml"
        )
        raise InputError(f"{label}: execution.prompt: required ({why})")
    seen: set[str] = set()
    for g in case.graders:
        if g.name in seen:
            raise InputError(f"{label}: graders: duplicate grader name {g.name!r}")
        seen.add(g.name)
    mocked = any(
        getattr(g, "target", None) == "mock_calls" or getattr(g, "focus", None) == "mock_calls"
        for g in case.graders
    )
    # mock_calls is a grader target, not a setting: UNSUPPORTED (settings) cannot have found it
    return case.model_copy(
        update={
            "warnings": (*regex_problems(case), *grant_problems(case)),
            "unsupported": case.unsupported + (("mock_calls",) if mocked else ()),
        }
    )


def parse_case(data: JsonObject, label: str) -> PluginCase:
    """The merged case data as a PluginCase; InputError lines naming ``label`` and the field."""
    files: dict[int, str] = data.pop(GRADER_FILES, None) or {}
    _check_version(data, label)
    problems = _grader_kind_problems(data.get("graders"), label)
    if problems:
        raise InputError(problems)
    execution, context = _sections(data, label)
    used = [k for k in UNSUPPORTED if execution.get(k) or context.get(k) or data.get(k)]
    env = execution.get("env") or {}
    copied = (
        "max_turns",
        "timeout_seconds",
        "model",
        "allowed_tools",
        "disallowed_tools",
        "append_system_prompt",
    )
    fields = {
        "name": data.get("name"),
        "description": data.get("description"),
        "tags": data.get("tags") or (),
        "prompt": execution.get("prompt") or "",
        "graders": data.get("graders") or (),
        "expected_outcome": data.get("expected_outcome"),
        "scaffold_script": context.get("scaffold_script"),
        "history_file": context.get("history_file"),
        "add_dirs": tuple(context.get("add_dirs") or ()),
        "unsupported": tuple(used),
        "env": tuple((str(k), str(v)) for k, v in env.items()) if isinstance(env, dict) else env,
        **{k: execution[k] for k in copied if k in execution},
        **({"runs": data["runs"]} if "runs" in data else {}),
    }
    try:
        case = PluginCase(**fields)
    except ValidationError as exc:
        raise InputError(_validation_lines(exc, label, files)) from None
    return _checked(case, label)


def is_indicator(grader: Grader) -> bool:
    """An arm-only grader: a plugin-fired indicator, never part of the score under ablation."""
    return grader.arm == "with-only" or (
        grader.arm is None and grader.type == "tool_used" and grader.tool == "Skill"
    )


def js_regex(pattern: str, flags: str = "") -> Any:
    """A JavaScript RegExp as a ``regex.Pattern`` (the module whose matches take a time budget):
    named groups and the i/m/s flags translated. Raises ``regex.error`` on a bad pattern."""
    import regex as engine

    py = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    py = re.sub(r"\\k<([A-Za-z_]\w*)>", r"(?P=\1)", py)
    options = engine.VERSION0
    for letter, flag in (("i", engine.IGNORECASE), ("m", engine.MULTILINE), ("s", engine.DOTALL)):
        if letter in flags:
            options |= flag
    return engine.compile(py, options)


def tool_name(rule: str) -> str:
    """``Bash(npm test:*)`` -> ``Bash``: the tool a permission rule is about."""
    return rule.split("(", 1)[0].strip()


def offered_tools(case: PluginCase) -> tuple[str, ...]:
    """The built-in tools a case's sessions are offered, in both arms: the read-only set (Skill among
    them) and the tools its allowed_tools names, minus its disallowed_tools, as under the official
    runner, where allowed_tools grants tools and never takes the read-only set away."""
    withheld = {tool_name(t) for t in case.disallowed_tools or ()}
    named = dict.fromkeys([*READ_ONLY_TOOLS, *(tool_name(t) for t in case.allowed_tools)])
    return tuple(t for t in named if t not in withheld)


def grant_problems(case: PluginCase) -> list[str]:
    """Graders that need a call of a tool the case does not offer: they cannot pass (said before
    the run, as the official runner says it)."""
    offered = set(offered_tools(case))
    out = []
    for i, g in enumerate(case.graders):
        needed = []
        if isinstance(g, ToolUsedGrader) and (g.min is None or g.min > 0):
            needed = [g.tool]
        elif isinstance(g, ToolOrderGrader):
            needed = [g.before.tool, g.after.tool]
        for tool in needed:
            if tool not in offered and not tool.startswith("mcp__"):
                out.append(
                    f"graders[{i}] ({g.name}): cannot pass: {tool} is not granted (execution.allowed_tools)"
                )
    return out


def regex_problems(case: PluginCase) -> list[str]:
    """Patterns Python cannot compile: such a grader fails at grading, as `claude plugin eval` fails a
    grader whose pattern throws; said before the sessions are spent."""
    import regex as engine

    out = []
    for i, g in enumerate(case.graders):
        patterns = {"pattern": (g.pattern, g.flags)} if isinstance(g, RegexGrader) else {}
        if isinstance(g, ToolUsedGrader) and g.input_match:
            patterns["input_match"] = (g.input_match, "")
        for key, (pattern, flags) in patterns.items():
            try:
                js_regex(pattern, flags)
            except engine.error as exc:
                problem = f"invalid regular expression ({exc}); the grader will fail"
                out.append(f"graders[{i}] ({g.name}): {key}: {problem}")
    return out


def _hint(key: str, valid: list[str]) -> str:
    """The closest valid name, or where a known field belongs when it is only misplaced."""
    name = key.split(".")[-1]
    if name in valid and "." in key:
        return f" (a top-level field of the case: {name}:, not under {key.split('.')[0]}:)"
    return closest(name, valid)


def _grader_kind_problems(graders: Any, label: str) -> list[str]:
    if not isinstance(graders, list) or not graders:
        return [f"{label}: graders: at least one grader is required (graders/*.md or a graders: list)"]
    out = []
    for i, g in enumerate(graders):
        where = f"{label}: graders[{i}]" + (f" ({g['name']})" if isinstance(g, dict) and "name" in g else "")
        if not isinstance(g, dict):
            out.append(f"{where}: must be a mapping")
        elif "type" not in g:
            out.append(f"{where}: type: required ({' | '.join(GRADER_KINDS)})")
        elif g["type"] not in GRADER_KINDS:
            out.append(
                f"{where}: type: unknown grader kind {g['type']!r}{closest(str(g['type']), list(GRADER_KINDS))}"
            )
    return out


#: How to mend a grader field that is missing or has a value of the wrong kind.
GRADER_FIXES = {
    "criteria": "write the criteria as the grader file's body, or as criteria: in its front matter",
    "pattern": "write the pattern as the grader file's body, or as pattern: in its front matter",
    "target": "one of trace, last_message, files, mock_calls, or {file: <path in the session's folder>}",
    "focus": "one of trace, last_message, files, mock_calls, or {file: <path in the session's folder>}",
}
#: Where each grader of a merged case came from: graders/<name>.md files (index -> file), kept
#: under this key by merge_case and taken off before the case is validated.
GRADER_FILES = "__grader_files__"


def _validation_lines(exc: ValidationError, label: str, files: dict[int, str] | None = None) -> list[str]:
    """One line per field that failed (a union's branches reported once), naming the grader's own
    file where it came from one, and how to mend it."""
    lines: list[str] = []
    models = {m.model_fields["type"].annotation.__args__[0]: m for m in GRADER_MODELS}  # type: ignore[union-attr]
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        model = models.get(loc[2]) if len(loc) >= 3 and loc[0] == "graders" else None
        where_label = label
        if model is not None:  # graders.0.llm.focus.<branch> -> graders[0].focus, or the grader's file
            index, field = int(loc[1]), loc[3] if len(loc) > 3 else ""
            where_label = (files or {}).get(index) or label
            loc = [*([] if where_label != label else [f"graders[{index}]"]), *([field] if field else [])]
        elif loc and loc[0] in (*EXECUTION_KEYS, "prompt"):
            loc[0] = f"execution.{loc[0]}"
        elif loc and loc[0] in ("scaffold_script", "history_file"):
            loc[0] = f"context.{loc[0]}"
        where = ".".join(loc) or "case"
        if err["type"] == "extra_forbidden":
            valid = [f for f in model.model_fields if f != "type"] if model is not None else []
            known = f"; its grader type takes {', '.join(valid)}" if model else ""
            line = f"{where_label}: {where}: unknown field{closest(loc[-1], valid)}{known}"
        elif err["type"] == "missing":
            fix = GRADER_FIXES.get(loc[-1], "") if model is not None and loc else ""
            line = f"{where_label}: {where}: required field missing" + (f" ({fix})" if fix else "")
        elif model is not None and loc and loc[-1] in ("target", "focus"):
            line = f"{where_label}: {where}: {err['input']!r} is not a target: {GRADER_FIXES[loc[-1]]}"
        else:
            line = f"{where_label}: {where}: {err['msg'].removeprefix('Value error, ')}"
        if line not in lines:
            lines.append(line)
    return lines
