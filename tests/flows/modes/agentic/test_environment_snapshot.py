"""The environment snapshot (flows/inputs/environment.py): an allowlist copied under the hostile-input
rules, hashed by content; what it refuses, each in one line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from executors.errors import InputError
from flows.inputs.environment import snapshot
from tests.agents import write

CANARY = "CANARY-e5b1-never-copied"


def skill(folder: Path, name: str, description: str = "Does a thing.") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nbody\n")


def a_home(root: Path) -> Path:
    home = root / "home"
    skill(home / ".claude" / "skills" / "notes", "notes")
    (home / ".claude" / "CLAUDE.md").write_text("Be brief.\n")
    settings = {
        "skillListingBudgetFraction": 0.02,
        "env": {"ANTHROPIC_API_KEY": CANARY},
        "apiKeyHelper": CANARY,
    }
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    secrets = (".claude/.credentials.json", ".claude.json", ".claude/history.jsonl", ".claude/todos/t.json")
    write(home, dict.fromkeys(secrets, CANARY))
    return home


def test_only_the_allowlist_is_copied_and_the_hash_names_the_content(tmp_path: Path) -> None:
    home = a_home(tmp_path)
    project = tmp_path / "project"
    skill(project / ".claude" / "skills" / "deploy", "deploy", "Deploys the app. " * 200)
    (project / "AGENTS.md").write_text("Run the tests first.\n")
    env = snapshot(home, project, tmp_path / "store", "given")
    files = sorted(str(p.relative_to(env.path)) for p in env.path.rglob("*") if p.is_file())
    assert files == [
        "home/.claude/CLAUDE.md",
        "home/.claude/settings.json",
        "home/.claude/skills/notes/SKILL.md",
        "project/.claude/skills/deploy/SKILL.md",
        "project/AGENTS.md",
    ]
    assert not any(CANARY in (env.path / f).read_text() for f in files)
    assert json.loads((env.path / "home/.claude/settings.json").read_text()) == {
        "skillListingBudgetFraction": 0.02
    }
    assert env.skills == ("notes", "deploy") and env.settings == ("home:skillListingBudgetFraction",)
    assert env.memory == ("home/.claude/CLAUDE.md", "project/AGENTS.md") and env.budget_fraction == 0.02
    assert env.listing_chars == len("- notes: Does a thing.") + len("- deploy: ") + 1536  # capped as listed
    again = snapshot(home, project, tmp_path / "store", "given")
    assert again.sha256 == env.sha256 and again.path == env.path
    (project / "AGENTS.md").write_text("Run the tests last.\n")
    assert snapshot(home, project, tmp_path / "store", "given").sha256 != env.sha256
    assert [p.name for p in (tmp_path / "store").iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(
    "case",
    [
        "skill link",
        "skills link",
        "link inside",
        "fifo",
        "plugin outside",
        "bad settings",
        "twice",
        "fifo memo",
    ],
)
def test_hostile_or_broken_setups_are_refused_in_one_line(tmp_path: Path, case: str) -> None:
    home = a_home(tmp_path)
    skills = home / ".claude" / "skills"
    outside = tmp_path / "outside"
    skill(outside, "elsewhere")
    if case == "skill link":
        os.symlink(outside, skills / "elsewhere")
    elif case == "skills link":
        shutil.rmtree(skills)
        os.symlink(tmp_path, skills)
    elif case == "fifo memo":
        (home / ".claude" / "CLAUDE.md").unlink()
        os.mkfifo(home / ".claude" / "CLAUDE.md")
    elif case == "link inside":
        os.symlink("/etc/passwd", skills / "notes" / "passwd")
    elif case == "fifo":
        os.mkfifo(skills / "notes" / "pipe")
    elif case == "plugin outside":
        record = {"scope": "user", "installPath": "/etc/.claude/plugins/../../.."}
        (home / ".claude" / "plugins").mkdir(parents=True)
        (home / ".claude" / "plugins" / "installed_plugins.json").write_text(
            json.dumps({"plugins": {"x@m": [record]}})
        )
    elif case == "bad settings":
        (home / ".claude" / "settings.json").write_text("{not json")
    else:
        skill(tmp_path / "project" / ".claude" / "skills" / "notes", "notes")
    with pytest.raises(InputError) as caught:
        snapshot(home, tmp_path / "project" if case == "twice" else None, tmp_path / "store", "given")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("--environment")
    expected = {
        "skill link": "the skill is a link",
        "skills link": "a link that leaves the folder",
        "fifo memo": "not a regular file",
        "link inside": "a link that leaves the folder",
        "fifo": "not a regular file",
        "plugin outside": "not inside",
        "bad settings": "not JSON",
        "twice": "is installed twice (user, project or plugin)",
    }[case]
    assert expected in message
    assert not [p for p in (tmp_path / "store").iterdir()]  # nothing half-made is left


#: Flags a command refuses, and words of its one-line error.
Refusal = tuple[list[str], str]


@pytest.mark.parametrize(
    "refusal",
    [
        (["--environment", "home", "--runner", "claude,codex"], "--environment: Claude Code's skills"),
        (["--context-fill", "0.5", "--runner", "gemini-cli"], "--context-fill: Claude Code's skills"),
        (["--from-home", "--environment", "home"], "--from-home: takes your HOME and this folder"),
        (["--environment", "missing"], "--environment: "),
        (["--context-fill", "1.5"], "--context-fill"),
    ],
)
def test_bad_environment_flags_stop_before_any_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], refusal: Refusal
) -> None:
    flags, words = refusal
    a_home(tmp_path)
    (tmp_path / "queries.yaml").write_text("queries:\n  - {id: q1, query: hello, expect: none}\n")
    monkeypatch.chdir(tmp_path)
    refused(capsys, ["skill", "triggers", "run", "--queries", "queries.yaml", "--dry-run", *flags], words)


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    """The command stops with exit 2 and one line saying ``words``."""
    from flows.cli.main import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_the_whole_environment_is_bounded_not_only_each_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    for i in range(5):
        skill(home / ".claude" / "skills" / f"s{i}", f"s{i}")  # one file each: every folder is small
    monkeypatch.setenv("SKILLAB_COPY_MAX_FILES", "3")
    with pytest.raises(InputError, match=r"the environment passes 50 MB or 3 files .*: refused"):
        snapshot(home, None, tmp_path / "store", "given")
    assert not list((tmp_path / "store").iterdir())


def test_a_changed_snapshot_is_made_again_and_a_plugins_mcp_configuration_never_copied(
    tmp_path: Path,
) -> None:
    home = a_home(tmp_path)
    plugin = home / ".claude" / "plugins" / "cache" / "m" / "helper" / "1.0.0"
    (plugin / ".claude-plugin").mkdir(parents=True)
    manifest = {"name": "helper", "mcpServers": {"db": {"command": "db", "env": {"TOKEN": CANARY}}}}
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"env": {"TOKEN": CANARY}}}}))
    skill(plugin / "skills" / "tidy", "tidy", "Tidies: imports, blocks.")  # not valid YAML: listed anyway
    record = {"scope": "user", "installPath": str(plugin)}
    (home / ".claude" / "plugins" / "installed_plugins.json").write_text(
        json.dumps({"plugins": {"helper@m": [record]}})
    )
    env = snapshot(home, None, tmp_path / "store", "given")
    assert env.skills == ("notes", "helper:tidy") and env.plugins == ("helper",)
    assert not any(CANARY in p.read_text() for p in env.path.rglob("*") if p.is_file())
    assert env.listing_chars == len("- notes: Does a thing.") + len("- helper:tidy: Tidies: imports, blocks.")
    (env.path / "home/.claude/skills/notes/SKILL.md").write_text(
        "---\nname: notes\ndescription: Edited.\n---\n"
    )
    (env.path / "home/.claude/skills/injected").mkdir()
    again = snapshot(home, None, tmp_path / "store", "given")
    assert again.sha256 == env.sha256 and not (again.path / "home/.claude/skills/injected").exists()
    assert "Does a thing." in (again.path / "home/.claude/skills/notes/SKILL.md").read_text()


def test_from_home_run_in_the_home_itself_reads_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.modes.triggers.plan import TriggerOptions, environment_of

    home = a_home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    env = environment_of(TriggerOptions(from_home=True, results_dir=str(tmp_path / "r")), home)
    assert env is not None and env.skills == ("notes",) and env.source == f"--from-home: {home.resolve()}"


@pytest.mark.parametrize(
    "refusal",
    [
        (["--holdout", "0"], "--holdout: tune keeps a rewrite only when it wins on held-out queries"),
        (["--candidates", "11"], "--candidates: 1 to 10 rewrites"),
        (["--holdout", "0.5", "--seed", "3"], "--queries: no "),
    ],
)
def test_tune_refuses_what_could_keep_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], refusal: Refusal
) -> None:
    flags, words = refusal
    skill(tmp_path / "mine" / "notes", "notes")
    (tmp_path / "queries.yaml").write_text(
        "queries:\n  - {id: q1, query: take a note, expect: notes}\n  - {id: q2, query: hello, expect: none}\n"
    )
    monkeypatch.chdir(tmp_path)
    refused(
        capsys,
        ["skill", "triggers", "tune", "--skill", "mine/notes", "--queries", "queries.yaml", *flags],
        words,
    )


def test_a_rewrite_over_the_length_limit_is_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    from flows.modes.triggers.tune import parse_rewrites

    assert parse_rewrites(json.dumps(["short one", "x" * 300, "short one"]), 3, 200) == ["short one"]
    assert "a rewrite of 300 characters left out (at most 200)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no rewrite within 200 characters"):
        parse_rewrites(json.dumps(["y" * 201]), 2, 200)
