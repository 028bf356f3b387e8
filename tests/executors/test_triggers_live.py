"""Trigger mode end to end: the real ``claude`` binary (isolated HOME, quiet env, skill installed at
``<sandbox>/.claude/skills/<name>/`` and NOT forced) against a scripted model on 127.0.0.1 that
decides per session whether to call the Skill tool. Each known way a trigger benchmark silently
measures nothing gets a session here."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path

import pytest

from executors.base import ExecutorSettings
from executors.claude_code import ClaudeCodeExecutor
from executors.schema import AgentSession
from graders.queries import Query
from graders.triggers import TriggerStatus, detect, install_problem
from tasks.stats.trigger_stats import summarize, trial
from tests.agents import agent_request, need
from tests.fakes.provider import FakeProvider, Fault, SkillScript

NAME = "greeting-files"
DESCRIPTION = "Writes greeting files. Use when asked for a greeting."
SKILL = f"---\nname: {NAME}\ndescription: {{description}}\n---\n# Greetings\nWrite greeting.txt.\n"
PROMPT = "Please write me a greeting file"


@pytest.fixture
def claude() -> ClaudeCodeExecutor:
    need("claude")
    return ClaudeCodeExecutor()


def skill_src(root: Path, description: str = DESCRIPTION) -> Path:
    digest = hashlib.sha256(description.encode()).hexdigest()[:8]
    folder = root / "src" / digest  # the source folder's name is not the installed name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(SKILL.format(description=description))
    return folder


def run(
    claude: ClaudeCodeExecutor,
    server: FakeProvider,
    root: Path,
    tag: str,
    *,
    prompt: str = PROMPT,
    installed_as: str | None = NAME,
    description: str = DESCRIPTION,
    timeout: float = 120,
) -> AgentSession:
    claude.settings = ExecutorSettings(base_url=server.url)
    request = agent_request(
        root / tag,
        "claude",
        "sonnet",
        prompt,
        skill_name=installed_as,
        skill_dir=str(skill_src(root, description)) if installed_as else None,
        force_skill=False,
        timeout_s=timeout,
    )
    return asyncio.run(claude.session(request))


def test_skill_call_after_a_read_and_a_bash_is_found_with_its_turn(
    tmp_path: Path, claude: ClaudeCodeExecutor
) -> None:
    with FakeProvider() as server:
        script = SkillScript(NAME, before=("Read", "Bash")).install(server)
        session = run(claude, server, tmp_path, "a")
        bodies = [c.body for c in server.calls]
    found = detect(session, [NAME])
    assert session.ok and found.status == TriggerStatus.OK
    assert [e.tool for e in session.events if e.kind == "tool_use"] == ["Read", "Bash", "Skill"]
    assert found.fired == (NAME,) and found.first_turn(NAME) == 2 and found.firings[0].ok is True
    # Listed under exactly its name with its description; nothing told the model to load it.
    assert NAME in (session.skills_listed or ())
    assert list(script.listings.values()) == [script.listings[str(session.meta.session_id)]]
    assert script.listings[str(session.meta.session_id)][NAME] == DESCRIPTION
    assert script.decisions == {session.meta.session_id: True}
    assert not any("MUST first call the Skill tool" in json.dumps(b) for b in bodies)
    assert all("Skill" in [t["name"] for t in b["tools"]] for b in bodies)
    assert (tmp_path / "a" / "sb" / ".claude" / "skills" / NAME / "SKILL.md").is_file()


def test_naming_the_skill_in_the_answer_is_not_a_trigger(tmp_path: Path, claude: ClaudeCodeExecutor) -> None:
    with FakeProvider() as server:
        script = SkillScript(NAME, mode="prose", before=("Bash",)).install(server)
        session = run(claude, server, tmp_path, "b")
    found = detect(session, [NAME])
    assert session.ok and NAME in session.final_text and list(script.decisions.values()) == [True]
    assert found.status == TriggerStatus.OK and found.fired == ()


def test_http_500_is_an_error_not_a_miss(tmp_path: Path, claude: ClaudeCodeExecutor) -> None:
    with FakeProvider() as server:
        SkillScript(NAME, mode="error").install(server)
        session = run(claude, server, tmp_path, "c")
    found = detect(session, [NAME])
    assert not session.ok and found.status == TriggerStatus.ERROR and not found.counted
    summary = summarize([trial(Query(id="q", query=PROMPT, expect=NAME), found)], [NAME])
    assert (summary.sessions, summary.counted, summary.errors) == (1, 0, 1)
    assert summary.per_skill[0].recall.value is None and summary.dropped_queries == ("q",)


def test_a_session_time_limit_too_short_is_an_error(tmp_path: Path, claude: ClaudeCodeExecutor) -> None:
    with FakeProvider(fault_for=lambda call: Fault(delay=60)) as server:
        started = time.monotonic()
        session = run(claude, server, tmp_path, "t", timeout=4)
    assert session.status == "timeout" and time.monotonic() - started < 30
    assert detect(session, [NAME]).status == TriggerStatus.ERROR


def test_installed_under_another_name_or_as_a_command_is_not_listed(
    tmp_path: Path, claude: ClaudeCodeExecutor
) -> None:
    with FakeProvider() as server:
        script = SkillScript(NAME).install(server)
        renamed = run(claude, server, tmp_path, "r", installed_as="candidate-1")
        commands = tmp_path / "m" / "sb" / ".claude" / "commands"
        commands.mkdir(parents=True)
        (commands / f"{NAME}.md").write_text(SKILL.format(description=DESCRIPTION))
        command = run(claude, server, tmp_path, "m", installed_as=None)
    found = detect(renamed, [NAME])
    assert renamed.ok and found.status == TriggerStatus.NOT_LISTED and found.missing == (NAME,)
    assert (
        "candidate-1" in (renamed.skills_listed or ())
        and script.decisions[str(renamed.meta.session_id)] is False
    )
    # A command in the working folder is the agent's own configuration, in both arms: refused before
    # the CLI starts (2.1.197 listed it and let Skill launch it, yet it is no skill), never measured.
    assert not command.ok and ".claude: agent configuration, read by claude" in (command.error or "")
    assert detect(command, [NAME]).status == TriggerStatus.ERROR
    assert "'greeting-files' differs" in (install_problem("candidate-1", skill_src(tmp_path)) or "")
    assert "slash command" in (install_problem(NAME, commands / f"{NAME}.md") or "")


def test_the_listed_description_decides(tmp_path: Path, claude: ClaudeCodeExecutor) -> None:
    # A description A/B with a known effect: the model fires only when the phrase is listed.
    with FakeProvider() as server:
        SkillScript(NAME, p=0.0, boost=("Use when asked for a greeting", 1.0)).install(server)
        plain = run(claude, server, tmp_path, "p", description="Writes greeting files.")
        better = run(claude, server, tmp_path, "q", description=DESCRIPTION)
    assert detect(plain, [NAME]).fired == () and detect(better, [NAME]).fired == (NAME,)


@pytest.mark.slow
def test_seeded_coin_rates_are_covered_by_wilson_intervals(
    tmp_path: Path, claude: ClaudeCodeExecutor
) -> None:
    # The scripted model fires with a known chance per query; the coin is keyed on the session's
    # position among that query's sessions, so the number of firings is fixed by the seed.
    queries = {
        Query(id="rare", query="Please write me a greeting file", expect=NAME): 0.2,
        Query(id="often", query="I need a greeting.txt saying hello", expect=NAME): 0.8,
    }
    per_query = 10
    trials, sessions = [], 0
    with FakeProvider() as server:
        script = SkillScript(
            NAME, p_by_query={q.query: p for q, p in queries.items()}, key="order", seed=11, before=("Bash",)
        ).install(server)
        started = time.monotonic()
        for query in queries:
            for i in range(per_query):
                session = run(claude, server, tmp_path, f"{query.id}-{i}", prompt=query.query)
                found = detect(session, [NAME])
                assert found.counted, found.reason
                # Detection agrees with what the server decided, session by session.
                assert found.fired_skill(NAME) == script.decisions[str(session.meta.session_id)]
                trials.append(trial(query, found))
                sessions += 1
        minutes = (time.monotonic() - started) / 60
    print(f"\n{sessions} sessions in {minutes * 60:.1f}s: {sessions / minutes:.1f} sessions/minute")
    summary = summarize(trials, [NAME], seed=0)
    print(
        {
            r.query_id: (
                r.trigger.k,
                r.trigger.n,
                round(r.trigger.low or 0, 3),
                round(r.trigger.high or 0, 3),
            )
            for r in summary.queries
        }
    )
    for rate in summary.queries:
        p = next(p for q, p in queries.items() if q.id == rate.query_id)
        assert rate.trigger.n == per_query and rate.errors == 0
        assert rate.trigger.low is not None and rate.trigger.high is not None
        assert rate.trigger.low <= p <= rate.trigger.high, (rate.query_id, rate.trigger, p)
    assert summary.per_skill[0].recall.value == pytest.approx(sum(r.trigger.k for r in summary.queries) / 20)
