"""What each agent CLI does with a skill, as recorded from the CLIs themselves: the tools it offers
under Claude Code's names, the SKILL.md fields it acts on, how it lists skills to the model and where
that listing runs out. Each agent executor declares its :class:`SkillSupport` (``support``); the
portability lint (graders/portability.py) and the listing model (:meth:`ListingRule.states`) read
only that. The facts were measured on this machine against the scripted model server, read in each
CLI's installed code, or taken from its documentation (docs/research/portability.md keeps which),
for Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, Copilot CLI 1.0.102 and OpenCode 1.18.33.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from executors.schema import ListingState

#: Claude Code's tool names a skill may use, the vocabulary every CLI's support is stated in.
CLAUDE_TOOLS = (
    "Bash", "Read", "Write", "Edit", "Glob", "Grep", "Agent", "Task", "TodoWrite",
    "AskUserQuestion", "WebFetch", "WebSearch", "NotebookEdit", "Skill", "ExitPlanMode",
)  # fmt: skip
#: Front-matter fields of a SKILL.md (Claude Code's schema): what a CLI acts on is a subset.
SKILL_FIELDS = (
    "name", "description", "when_to_use", "paths", "hooks", "context", "agent", "background",
    "metadata", "model", "effort", "allowed-tools", "disallowed-tools", "argument-hint", "arguments",
    "disable-model-invocation", "user-invocable", "shell", "version",
)  # fmt: skip


@dataclass(frozen=True)
class ListingRule:
    """How a CLI lists installed skills to the model before one is loaded, and where that runs out."""

    share: float | None = None  # of the model's context window (tokens); None: no budget
    chars_per_token: int = 4
    fallback_chars: int | None = None  # the budget when the window is unknown
    fixed_chars: int | None = None  # a budget in characters, whatever the window
    description_cap: int | None = None  # longer descriptions are cut, or the skill is not loaded
    over_cap: Literal["cut", "not loaded"] = "cut"
    past_budget: Literal["name only", "shortened, then left out", "none"] = "none"
    warns: bool = False  # says so when skills are left out
    default_window: int | None = None  # tokens, for a model whose window is not given
    entry_extra: int = 4  # characters an entry adds to its name and description ("- ", ": ")

    def budget(self, window: int | None) -> int | None:
        """The listing's budget in characters for a context ``window`` (tokens); None: unbounded."""
        if self.fixed_chars is not None:
            return self.fixed_chars
        if self.share is None:
            return None
        window = self.default_window if window is None else window
        if not window:  # a window the CLI does not know (0)
            return self.fallback_chars
        return max(1, int(window * self.share * self.chars_per_token))

    def states(
        self, skills: Sequence[tuple[str, str]], window: int | None, builtin: int = 0
    ) -> dict[str, ListingState]:
        """Each skill's state in the listing this rule gives ``skills`` ((name, description), in the
        CLI's order) beside ``builtin`` characters of the CLI's own entries."""
        out: dict[str, ListingState] = {}
        capped = []
        for name, description in skills:
            cap = self.description_cap
            if cap is not None and len(description) > cap and self.over_cap == "not loaded":
                out[name] = ListingState.ABSENT
                continue
            cut = cap is not None and len(description) > cap
            capped.append((name, min(len(description), cap or len(description)), cut))
        budget = self.budget(window)
        whole = builtin + sum(len(n) + d + self.entry_extra for n, d, _ in capped)
        if budget is None or whole <= budget or self.past_budget == "none":
            return out | {n: ListingState.TRUNCATED if cut else ListingState.FULL for n, _, cut in capped}
        if self.past_budget == "shortened, then left out":
            names_only = builtin + sum(len(n) + self.entry_extra for n, _, _ in capped)
            if names_only <= budget:
                return out | {n: ListingState.TRUNCATED for n, _, _ in capped}
            left, states = budget - builtin, {}
            for n, _, _ in capped:
                left -= len(n) + self.entry_extra
                states[n] = ListingState.DROPPED if left >= 0 else ListingState.ABSENT
            return out | states
        left, states = budget - builtin, {}  # name only past the budget, in order
        for n, d, cut in capped:
            cost = len(n) + d + self.entry_extra
            full = left >= cost
            left -= cost if full else 0
            states[n] = (
                (ListingState.TRUNCATED if cut else ListingState.FULL) if full else ListingState.DROPPED
            )
        return out | states


@dataclass(frozen=True)
class SkillSupport:
    """What one agent CLI does with a skill."""

    #: Claude Code's tool name -> this CLI's tool for it (the same name, another, or None: it has none).
    tools: Mapping[str, str | None]
    #: Tools it has but does not offer in a headless session, as skillab runs it, with why.
    headless: Mapping[str, str]
    #: SKILL.md front-matter fields it acts on (the others it reads past).
    fields: frozenset[str]
    #: It expands ``$ARGUMENTS``, ``${CLAUDE_SKILL_DIR}`` and ``!`cmd``` blocks in a skill's body.
    substitutes: bool
    listing: ListingRule
    #: A front-matter name that is not the skill's folder name stops the skill loading.
    name_is_folder: bool = False
    #: A skill without a description is not loaded (or not listed).
    needs_description: bool = False

    def tool(self, claude_name: str) -> str | None:
        """This CLI's tool for a Claude Code tool (None: none)."""
        return self.tools.get(claude_name, claude_name)


def same_names(*names: str) -> dict[str, str | None]:
    return {n: n for n in names}


#: Claude Code 2.1.332: the reference vocabulary. Headless (-p) it offers neither Glob, Grep nor
#: TodoWrite (search goes through Bash), AskUserQuestion only on a conversation's stream-json input.
CLAUDE_SUPPORT = SkillSupport(
    tools=same_names(*CLAUDE_TOOLS),
    headless={
        "Glob": "not offered in a headless session (search goes through Bash)",
        "Grep": "not offered in a headless session (search goes through Bash)",
        "TodoWrite": "not offered in a headless session",
        "AskUserQuestion": "offered only to a session with a simulated user (## User)",
        "ExitPlanMode": "plan mode only",
    },
    fields=frozenset(SKILL_FIELDS),
    substitutes=True,
    # 1% of the window at 4 characters a token (8,000 at 200k), descriptions cut at 1,536; past it the
    # CLI's own skills keep theirs and the rest are listed by name, in its order; a debug log only
    listing=ListingRule(
        share=0.01, description_cap=1_536, past_budget="name only", default_window=200_000, warns=False
    ),
)
#: Codex 0.171.0: a shell and a patch tool; no skill tool (it reads SKILL.md); name and description only.
CODEX_SUPPORT = SkillSupport(
    tools={
        "Bash": "exec_command",
        "Read": None,
        "Write": "apply_patch",
        "Edit": "apply_patch",
        "Glob": None,
        "Grep": None,
        "Agent": "spawn_agent",
        "Task": "spawn_agent",
        "TodoWrite": None,
        "AskUserQuestion": "request_user_input",
        "WebFetch": None,
        "WebSearch": "web_search",
        "NotebookEdit": None,
        "Skill": None,
        "ExitPlanMode": None,
    },
    headless={"request_user_input": "plan mode only"},
    fields=frozenset({"name", "description", "metadata"}),
    substitutes=False,
    # 2% of the window in tokens (8,000 characters when the window is unknown), descriptions cut at
    # 1,024; past it every description is shortened evenly (silently), then all are removed and
    # skills left out (said as an error item)
    listing=ListingRule(
        share=0.02,
        fallback_chars=8_000,
        description_cap=1_024,
        past_budget="shortened, then left out",
        warns=True,
        default_window=272_000,
        entry_extra=30,
    ),
    needs_description=True,
)
#: Gemini CLI 0.61.0: activate_skill; every description listed whole; name and description only.
GEMINI_SUPPORT = SkillSupport(
    tools={
        "Bash": "run_shell_command",
        "Read": "read_file",
        "Write": "write_file",
        "Edit": "replace",
        "Glob": "glob",
        "Grep": "grep_search",
        "Agent": "invoke_agent",
        "Task": "invoke_agent",
        "TodoWrite": "write_todos",
        "AskUserQuestion": "ask_user",
        "WebFetch": "web_fetch",
        "WebSearch": "google_web_search",
        "NotebookEdit": None,
        "Skill": "activate_skill",
        "ExitPlanMode": "exit_plan_mode",
    },
    headless={"ask_user": "not offered in a headless session", "exit_plan_mode": "not offered headless"},
    fields=frozenset({"name", "description"}),
    substitutes=False,
    listing=ListingRule(entry_extra=60),
    needs_description=True,
)
#: Copilot CLI 1.0.102: about 15,000 characters of listing, a description over 1,024 characters and
#: the skill is silently not loaded; honours disable-model-invocation and argument-hint.
COPILOT_SUPPORT = SkillSupport(
    tools={
        "Bash": "bash",
        "Read": "view",
        "Write": "create",
        "Edit": "edit",
        "Glob": "glob",
        "Grep": "grep",
        "Agent": "task",
        "Task": "task",
        "TodoWrite": "sql",
        "AskUserQuestion": "ask_user",
        "WebFetch": "web_fetch",
        "WebSearch": "web_search",
        "NotebookEdit": None,
        "Skill": "skill",
        "ExitPlanMode": "exit_plan_mode",
    },
    headless={
        "ask_user": "turned off in a headless session (--no-ask-user)",
        "web_fetch": "not offered offline",
        "web_search": "not offered offline",
    },
    fields=frozenset({"name", "description", "disable-model-invocation", "user-invocable", "argument-hint"}),
    substitutes=False,
    listing=ListingRule(
        fixed_chars=15_000,
        description_cap=1_024,
        over_cap="not loaded",
        past_budget="name only",
        entry_extra=60,
    ),
)
#: OpenCode 1.18.33: a skill tool; every description listed whole; a name must be its folder's.
OPENCODE_SUPPORT = SkillSupport(
    tools={
        "Bash": "bash",
        "Read": "read",
        "Write": "write",
        "Edit": "edit",
        "Glob": "glob",
        "Grep": "grep",
        "Agent": "task",
        "Task": "task",
        "TodoWrite": "todowrite",
        "AskUserQuestion": "question",
        "WebFetch": "webfetch",
        "WebSearch": "websearch",
        "NotebookEdit": None,
        "Skill": "skill",
        "ExitPlanMode": "plan_exit",
    },
    headless={
        "question": "refused in a headless run",
        "plan_exit": "refused in a headless run",
        "websearch": "offered only with OPENCODE_ENABLE_EXA",
    },
    fields=frozenset({"name", "description"}),
    substitutes=False,
    listing=ListingRule(entry_extra=60),
    name_is_folder=True,
    needs_description=True,
)
