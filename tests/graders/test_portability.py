"""The portability lint against each agent CLI's recorded behaviour, and each CLI's listing rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.agent import AgentExecutor, agent_cli_classes
from executors.schema import ListingState
from executors.support import CLAUDE_SUPPORT, CODEX_SUPPORT, COPILOT_SUPPORT, GEMINI_SUPPORT, ListingRule
from graders.portability import Finding, lint_skill

AGENTS = [(c.name, c.support) for c in agent_cli_classes()]
SKILL = """---
name: notes
description: Writes notebooks. Use when the user wants one.
allowed-tools: Bash(git:*)
hooks:
  PreToolUse: []
---
# Notes
Add the cell with NotebookEdit, after you Read the file.
Run `scripts/go.sh`, then see [the guide](reference.md) and [the other](other.md).
Arguments: $ARGUMENTS
"""


def skill(tmp_path: Path, text: str = SKILL, name: str = "notes") -> Path:
    folder = tmp_path / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(text)
    (folder / "scripts" / "go.sh").write_text("echo go\n")
    (folder / "other.md").write_text("there\n")
    return folder


def by(findings: list[Finding], what: str) -> dict[str, Finding]:
    return {f.agent: f for f in findings if f.what == what}


def test_each_construct_is_flagged_on_the_agents_that_lack_it_with_its_line(tmp_path: Path) -> None:
    findings = lint_skill(skill(tmp_path), AGENTS)
    notebook = by(findings, "NotebookEdit")
    assert set(notebook) == {"codex", "gemini-cli", "copilot", "opencode"}  # Claude Code has it
    assert all(f.severity == "breaks" and f.line == 9 for f in notebook.values())
    assert notebook["codex"].text == "codex: SKILL.md:9: names NotebookEdit, which codex lacks"
    # "Read the file" is a word, not a tool: a plain-word tool counts only when named as one
    assert "Read" not in {f.what for f in findings}
    hooks = by(findings, "hooks")
    assert set(hooks) == {"codex", "gemini-cli", "copilot", "opencode"} and hooks["codex"].line == 5
    assert by(findings, "allowed-tools")["gemini-cli"].severity == "degrades"
    assert "copilot" in by(findings, "allowed-tools")  # parsed, but no grant seen headless
    arguments = by(findings, "$ARGUMENTS")
    assert (
        set(arguments) == {"codex", "gemini-cli", "copilot", "opencode"} and arguments["opencode"].line == 11
    )
    # a file the body refers to that the folder lacks breaks everywhere; those it holds do not
    missing = [f for f in findings if f.what == "reference.md"]
    assert {f.agent for f in missing} == {c.name for c in agent_cli_classes()} and missing[0].line == 10
    assert not [f for f in findings if f.what in ("scripts/go.sh", "other.md")]
    assert not [
        f for f in findings if f.agent == "claude" and f.severity == "breaks" and f.what != "reference.md"
    ]


def test_tools_named_differently_and_headless_limits_degrade(tmp_path: Path) -> None:
    text = (
        "---\nname: ask\ndescription: Asks first.\n---\nUse the `Bash` tool, then ask with AskUserQuestion.\n"
    )
    findings = lint_skill(skill(tmp_path, text, "ask"), AGENTS)
    bash = by(findings, "Bash")
    assert set(bash) == {"codex", "gemini-cli"}  # copilot's and opencode's bash is the same word
    assert bash["codex"].severity == "degrades" and "exec_command" in bash["codex"].why
    ask = by(findings, "AskUserQuestion")
    assert ask["claude"].severity == "degrades" and "simulated user" in ask["claude"].why
    assert ask["copilot"].severity == "degrades" and "--no-ask-user" in ask["copilot"].why


def test_descriptions_and_names_against_each_cli(tmp_path: Path) -> None:
    long = "x" * 1_100
    findings = lint_skill(
        skill(tmp_path, f"---\nname: other\ndescription: {long}\n---\nbody\n", "folder"), AGENTS
    )
    description = by(findings, "description")
    assert description["copilot"].severity == "breaks" and "not loaded at all" in description["copilot"].why
    assert description["codex"].severity == "degrades" and "it is cut" in description["codex"].why
    assert "claude" not in description  # 1,536 there
    assert set(by(findings, "name")) == {"opencode"}  # a name that is not the folder's
    bare = lint_skill(skill(tmp_path, "# Just a body\n", "bare"), AGENTS)
    assert not by(bare, "description")  # the body's first line is a description to every CLI


def test_each_cli_listing_rule() -> None:
    one = [("mine", "d" * 100)]
    assert CLAUDE_SUPPORT.listing.budget(None) == 8_000 and CLAUDE_SUPPORT.listing.budget(1_000_000) == 40_000
    assert CODEX_SUPPORT.listing.budget(0) == 8_000 and CODEX_SUPPORT.listing.budget(100_000) == 8_000
    assert GEMINI_SUPPORT.listing.budget(10) is None and COPILOT_SUPPORT.listing.budget(10) == 15_000
    assert CLAUDE_SUPPORT.listing.states(one, None) == {"mine": ListingState.FULL}
    assert CLAUDE_SUPPORT.listing.states(one, None, builtin=7_950) == {"mine": ListingState.DROPPED}
    many = [(f"s{i}", "d" * 900) for i in range(20)]
    codex = CODEX_SUPPORT.listing.states(many, 100_000)  # 8,000 characters: names fit, descriptions do not
    assert set(codex.values()) == {ListingState.TRUNCATED}
    tiny = ListingRule(share=0.02, past_budget="shortened, then left out", entry_extra=30)
    states = tiny.states(many, 2_000)  # 160 characters: some names only, the rest left out
    assert ListingState.DROPPED in states.values() and ListingState.ABSENT in states.values()
    copilot = COPILOT_SUPPORT.listing.states([("big", "d" * 1_100), *many], None)
    assert copilot["big"] == ListingState.ABSENT and list(copilot.values()).count(ListingState.FULL) == 15


@pytest.mark.parametrize("cls", agent_cli_classes(), ids=lambda c: c.name)
def test_every_agent_cli_states_its_support(cls: type[AgentExecutor]) -> None:
    support = cls.support
    assert support.listing is not None and "name" in support.fields and "description" in support.fields
    assert all(own in support.tools.values() for own in support.headless)  # a limit of a tool it has
