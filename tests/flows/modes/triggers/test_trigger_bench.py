"""Trigger mode end to end: the real claude CLI, skills listed and never forced, against a scripted
model whose firing is known per query; the figures, the cache, the gates and the A/B."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from flows.cli.main import main
from tests.agents import need
from tests.browser import chromium, serving
from tests.fakes.provider import FakeProvider, SkillScript
from tests.flows.helpers import bench_process, flow_run_artifacts, run_tags, subprocess_env

pytestmark = pytest.mark.usefixtures("prefect_harness")

NAME = "greeting-files"
SKILL = "---\nname: greeting-files\ndescription: {description}\n---\n# Greetings\nWrite greeting.txt.\n"
QUERIES = {
    "q1": ("Please write me a greeting file", NAME, ["direct"]),
    "q2": ("Could you put a friendly hello into a text file?", NAME, ["paraphrase"]),
    "q3": ("What is 17 times 3?", "none", ["unrelated"]),
    "q4": ("Explain what a greeting card is", "none", ["near-miss"]),
}


def project(root: Path, descriptions: dict[str, str]) -> Path:
    need("claude")
    for label, description in descriptions.items():
        folder = root / "skills" / label / NAME
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL.format(description=description))
    rows = [{"id": k, "query": q, "expect": e, "tags": t} for k, (q, e, t) in QUERIES.items()]
    (root / "queries.yaml").write_text(yaml.safe_dump({"queries": rows}))
    return root


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The one-skill project, the working folder, with a test key for the scripted server."""
    monkeypatch.chdir(project(tmp_path, {"v1": "Writes greeting files. Use when asked for a greeting file."}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    return tmp_path


def command(root: Path, server: FakeProvider, *args: str) -> list[str]:
    """A trigger run against the scripted server, its results and cache in the project (a later
    ``--results-dir`` or ``--timeout`` among ``args`` wins)."""
    common = ["skill", "triggers", "run", "--queries", "queries.yaml", "--base-url", server.url, "--quiet"]
    common += ["--results-dir", str(root / "results"), "--cache-dir", str(root / "cache"), "--timeout", "60"]
    return [*common, *args]


def run(root: Path, server: FakeProvider, *args: str) -> int:
    return main(command(root, server, *args))


def run_apart(root: Path, server: FakeProvider, *args: str) -> subprocess.Popen[str]:
    """The same run as a command of its own, in its own process group (a kill -9 reaches all of it),
    with this test's environment and key."""
    return bench_process(
        command(root, server, *args),
        root,
        subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def test_rates_cache_gates_and_junit(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    should = {QUERIES[k][0]: 1.0 for k in ("q1", "q2")} | {QUERIES[k][0]: 0.0 for k in ("q3", "q4")}
    with FakeProvider() as server:
        # q1's sessions read a file and run a command before they call Skill: still a trigger
        script = SkillScript(NAME, p_by_query=should, before=("Read", "Bash")).install(server)
        skill = str(root / "skills" / "v1" / NAME)
        assert run(root, server, "--skill", skill, "--runs", "2", "--dry-run") == 0
        assert "= 8 sessions of claude" in capsys.readouterr().out and not server.calls
        code = run(
            root, server, "--skill", skill, "--runs", "2", "--min-recall", "0.9", "--junit", "junit.xml"
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert f"{NAME}: recall 100%" in out and "false-fire 0%" in out
        sessions = len(script.decisions)
        assert sessions == 8
        assert run(root, server, "--skill", skill, "--runs", "2") == 0  # all cached: no new session
        assert len(script.decisions) == sessions
    reports = sorted((root / "results").glob("*.json"))
    report = json.loads(reports[0].read_text())
    assert report["mode"] == "trigger" and report["meta"]["taskCount"] == 8
    assert report["meta"]["isolation"] == "bubblewrap"
    assert report["meta"]["sandboxVersion"].startswith("bubblewrap ")
    summary = report["triggers"]["summaries"][0]
    skill_stats = summary["per_skill"][0]
    assert skill_stats["recall"]["value"] == 1.0 and skill_stats["false_fire"]["value"] == 0.0
    q1 = next(r for r in report["results"] if r["sample_id"] == "q1")
    first = q1["variants"]["default"]["runs"][0]
    assert first["fired"] == [NAME] and first["firstTurns"][NAME] == 2  # after the Read and the Bash
    assert json.loads(reports[1].read_text())["meta"]["cacheHits"] == 8
    junit = (root / "junit.xml").read_text()
    assert 'tests="4"' in junit and 'failures="0"' in junit
    capsys.readouterr()
    with FakeProvider() as server:
        SkillScript(NAME, p_by_query=should | {QUERIES["q1"][0]: 0.0}).install(server)
        # a gate that fails: q1 no longer fires (new server, so the cache key's endpoint differs)
        code = run(root, server, "--skill", skill, "--min-recall", "0.9")
    assert code == 1 and "recall 50% < 90%" in capsys.readouterr().err


def test_description_ab_finds_the_better_description(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(
        tmp_path,
        {"v1": "Writes files.", "v2": "Writes greeting files. Use when asked for a greeting or a hello."},
    )
    monkeypatch.chdir(root)
    with FakeProvider() as server:
        # fires only when the listed description carries "greeting", and never on expect-none queries
        SkillScript(NAME, p=0.0, boost=("greeting", 1.0), p_by_query={QUERIES["q3"][0]: 0.0}).install(server)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        v1, v2 = (str(root / "skills" / v / NAME) for v in ("v1", "v2"))
        # a machine without bubblewrap: the run goes on only because the user said so
        monkeypatch.setenv("SKILLAB_BWRAP", "skillab-no-such-bwrap")
        assert run(root, server, "--skill", v1, "--skill", v2, "--no-os-sandbox") == 0
    out = capsys.readouterr().out
    report = json.loads(next((root / "results").glob("*.json")).read_text())
    assert report["meta"]["variants"] == ["v1", "v2"]
    assert report["meta"]["isolation"] == "none" and report["meta"]["sandboxVersion"] is None
    comparison = report["triggers"]["comparisons"][0]
    recall = comparison["parts"]["all"]["recall"]
    assert (comparison["control"], comparison["treatment"]) == ("v1", "v2")
    assert recall["control"] == 0.0 and recall["treatment"] == 1.0 and recall["difference"] == 1.0
    assert "v2 vs v1 [all] recall:" in out
    validity = {c["check"]: c["status"] for c in report["validity"]["checks"]}
    assert validity == {"errors": "PASS", "power": validity["power"], "listing": "PASS", "leakage": "PASS"}
    assert "validity: " in out


def test_several_agents_each_a_variant_compared_by_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--runner claude,gemini-cli,opencode: the same queries on each agent, the scripted firing of
    each found, and each agent compared with the first, query by query."""
    root = project(tmp_path, {"v1": "Writes greeting files. Use when asked for a greeting file."})
    monkeypatch.chdir(root)
    asks = {QUERIES[k][0] for k in ("q1", "q2")}

    def gemini(body: dict[str, Any]) -> list[dict[str, Any]]:  # fires on the direct ask only
        done = any("functionResponse" in part for c in body["contents"] for part in c.get("parts", []))
        if not done and QUERIES["q1"][0] in json.dumps(body["contents"]):
            return [{"functionCall": {"name": "activate_skill", "args": {"name": NAME}}}]
        return [{"text": "Done."}]

    with FakeProvider() as server:
        SkillScript(NAME, p_by_query={q: 1.0 for q in asks}, p=0.0).install(server)  # claude: every ask
        server.gemini_agent = gemini
        server.chat_agent = lambda body: [{"text": "Answered without a skill."}]  # opencode: never
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        skill = str(root / "skills" / "v1" / NAME)
        urls = f"claude={server.url},gemini-cli={server.url},opencode={server.url}/v1"
        args = ["--skill", skill, "--runner", "claude,gemini-cli,opencode", "--base-url", urls, "--runs", "1"]
        assert run(root, server, *args, "--dry-run") == 0
        plan = capsys.readouterr().out
        assert "= 12 sessions of claude (sonnet), gemini-cli (gemini-2.5-pro), opencode (gpt-4.1)" in plan
        for agent in ("claude", "gemini-cli", "opencode"):  # each agent's listing rule, before any session
            assert f"listing (modelled) on {agent} for {agent}: {NAME} full" in plan
        assert run(root, server, *args) == 0
    out = capsys.readouterr().out
    report = json.loads(next((root / "results").glob("*.json")).read_text())
    assert report["meta"]["variants"] == ["claude", "gemini-cli", "opencode"]
    assert report["meta"]["agentCliVersion"].startswith("claude 2.1.")
    assert (
        "gemini-cli 0." in report["meta"]["agentCliVersion"]
        and "opencode 1." in report["meta"]["agentCliVersion"]
    )
    recall = {s["variant"]: s["per_skill"][0]["recall"]["value"] for s in report["triggers"]["summaries"]}
    assert recall == {"claude": 1.0, "gemini-cli": 0.5, "opencode": 0.0}
    compared = {c["treatment"]: c["parts"]["all"]["recall"] for c in report["triggers"]["comparisons"]}
    assert {c["control"] for c in report["triggers"]["comparisons"]} == {"claude"}
    assert compared["gemini-cli"]["difference"] == -0.5 and compared["opencode"]["difference"] == -1.0
    assert "opencode vs claude [all] recall:" in out and f"{NAME}: recall 50%" in out


def test_generate_drafts_a_reviewable_queries_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from graders.queries import load_queries

    root = project(tmp_path, {"v1": "Writes greeting files. Use when asked for a greeting file."})
    monkeypatch.chdir(root)
    drafted = [
        {"id": "q01", "query": "Write a greeting file for my team", "expect": NAME, "tags": ["direct"]},
        {"id": "q02", "query": "Say hello to Ana in a text file", "expect": NAME, "tags": ["paraphrase"]},
        {"id": "q03", "query": "What does the word greeting mean?", "expect": "none", "tags": ["near-miss"]},
        {"id": "q04", "query": "Sort this list: 3 1 2", "expect": "none", "tags": ["unrelated"]},
    ]
    replies = iter(["not json at all", "```json\n" + json.dumps(drafted) + "\n```"])  # one bad draft, retried
    with FakeProvider(lambda system, prompt: next(replies)).anthropic_env(monkeypatch) as server:
        skill = str(root / "skills" / "v1" / NAME)
        assert (
            main(["skill", "triggers", "generate", "--skill", skill, "--out", "drafted.yaml", "--count", "4"])
            == 0
        )
        assert "skill under test" in server.calls[0].prompt and len(server.calls) == 2
        assert (
            main(["skill", "triggers", "generate", "--skill", skill, "--out", "drafted.yaml"]) == 2
        )  # no overwrite
    queries = load_queries(root / "drafted.yaml").queries
    assert [q.id for q in queries] == ["q01", "q02", "q03", "q04"] and queries[2].expect is None
    assert "exists" in capsys.readouterr().err


def test_budgets_then_kill_9_and_resume_without_repeating_a_session(root: Path) -> None:
    skill = str(root / "skills" / "v1" / NAME)
    planned = len(QUERIES) * 3
    with FakeProvider() as server:
        script = SkillScript(NAME, p=0.5).install(server)
        one_at_a_time = ("--skill", skill, "--runs", "3", "--concurrency", "1", "--no-cache")
        assert run(root, server, *one_at_a_time, "--max-calls", "2") == 0
        assert len(script.decisions) == 2
        assert run(root, server, *one_at_a_time, "--budget-usd", "0.000001") == 0
        assert len(script.decisions) == 3  # the first session's cost is over the budget
        budgeted = [json.loads(p.read_text())["meta"] for p in sorted((root / "results").glob("*.json"))]
        assert sorted(len(m["notRun"]) for m in budgeted) == [planned - 2, planned - 1]
        for path in (root / "results").glob("*.json"):
            path.unlink()
        proc = run_apart(root, server, "--skill", skill, "--runs", "3", "--concurrency", "1")
        try:
            deadline = time.monotonic() + 240
            while len(list((root / "cache").rglob("*.json"))) < 2 and time.monotonic() < deadline:
                assert proc.poll() is None, "the run ended before the kill"
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
        finished = len(list((root / "cache").rglob("*.json")))
        assert 2 <= finished < planned and not list((root / "results").glob("*.json"))
        # The CLI of the session in flight runs in its own process group and outlives the kill: it
        # may still reach the server (later under 2.1.330, which starts slower). Count once quiet.
        before, quiet_since = len(script.decisions), time.monotonic()
        while time.monotonic() - quiet_since < 5 and time.monotonic() < deadline + 60:
            time.sleep(0.2)
            if len(script.decisions) != before:
                before, quiet_since = len(script.decisions), time.monotonic()
        assert run(root, server, "--skill", skill, "--runs", "3", "--concurrency", "1") == 0
        assert len(script.decisions) - before == planned - finished  # no finished session runs again
    (path,) = (root / "results").glob("*.json")
    meta = json.loads(path.read_text())["meta"]
    assert meta["cacheHits"] == finished and meta["calls"] == planned - finished and not meta["notRun"]


def suite_file(root: Path, server: FakeProvider, more: dict[str, Any] | None = None) -> Path:
    """A trigger suite's options file (triggers.yaml) for the v1 skill, one run per query."""
    options = {"skill": [f"skills/v1/{NAME}"], "queries": "queries.yaml", "runs": 1, **(more or {})}
    options |= {"base-url": server.url, "timeout": 60, "cache-dir": str(root / "cache")}
    (root / "triggers.yaml").write_text(yaml.safe_dump(options))
    return root / "triggers.yaml"


def test_a_scheduled_trigger_suite_fails_its_flow_run_on_a_missed_gate(root: Path) -> None:
    from flows.modes.triggers.nightly import nightly_triggers

    with FakeProvider() as server:
        SkillScript(NAME, p=0.0).install(server)  # never fires: recall 0
        suite_file(root, server, {"min-recall": 0.5})
        flow = nightly_triggers(str(root / "triggers.yaml"), "greetings", return_state=True)
        state: Any = asyncio.run(cast(Coroutine[Any, Any, Any], flow))
    assert state.is_failed() and state.name == "Failed" and "outcome:missed-gates" in run_tags(state)
    assert f"suite 'greetings': default: {NAME}: recall 0% < 50%" in str(state.message)
    (path,) = (root / "skill-bench" / "triggers").glob("*.json")  # results_dir under the suite's folder
    assert json.loads(path.read_text())["meta"]["suite"] == "greetings"


def test_an_ad_hoc_trigger_run_tells_its_outcome_in_prefect(root: Path) -> None:
    """Its flow run keeps Prefect's state name, its outcome a tag, and its log the run's story."""
    from flows.modes.triggers.flow import trigger_bench
    from flows.modes.triggers.plan import load_trigger_config
    from tests.flows.test_run_logs import logs_until

    with FakeProvider() as server:
        SkillScript(NAME, p=1.0).install(server)
        suite_file(root, server)
        loaded = load_trigger_config(root / "triggers.yaml")
        flow = trigger_bench(loaded, str(root), False, return_state=True)
        state: Any = asyncio.run(cast(Coroutine[Any, Any, Any], flow))
    assert state.is_completed() and state.name == "Completed"
    assert {"skillab", "trigger", "outcome:scored"} <= run_tags(state)
    logs = [m for _, m in logs_until(state.state_details.flow_run_id, "report: ")]
    assert any(m.startswith("validity: ") for m in logs) and any(m.startswith("report: ") for m in logs)
    (summary,) = [str(a.data) for a in asyncio.run(flow_run_artifacts(state.state_details.flow_run_id))]
    assert "## skillab triggers: default" in summary and "validity: " in summary


def test_the_trigger_page_in_chromium(root: Path) -> None:
    """As a reader sees it: headings, the confusion matrix, the rates chart, a transcript opened
    from a query, no horizontal overflow on a laptop screen, nothing blocked by the CSP."""
    from flows.report.server import create_app

    with FakeProvider() as server:
        SkillScript(NAME, p_by_query={QUERIES["q3"][0]: 0.0, QUERIES["q4"][0]: 0.0}).install(server)
        assert run(root, server, "--skill", str(root / "skills" / "v1" / NAME), "--runs", "1") == 0
    run_id = next((root / "results").glob("*.json")).stem
    problems: list[str] = []
    with serving(lambda port: create_app(root / "results", port=port)) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{url}/run/{run_id}")
        assert page.locator("h2", has_text="Does the skill fire?").is_visible()
        matrix = page.locator("table.confusion")
        assert matrix.is_visible() and matrix.locator("td.diag").count() >= 1
        chart = page.locator(".charts svg").first
        box = chart.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 80
        transcript = page.locator("details", has_text="transcript").first
        transcript.locator("summary").click()
        assert transcript.locator("ol.transcript li").first.is_visible()
        html = page.content()
        for text in ("confusion matrix", "How often each query triggered", "expect: none", "fired: nothing"):
            assert text in html, text
        assert "fired: greeting-files" in page.inner_text("body")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow}px wider than a laptop screen"
        shot = page.screenshot(path=str(root / "triggers.png"), full_page=True)
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    assert not problems, problems


def test_one_session_limit_across_two_runs_on_one_account(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--fleet-sessions 1 in two runs at once, each allowed 4 sessions of its own: the scripted server
    never answers two sessions at a time, through a Prefect global concurrency limit named after the
    provider and a digest of the key (never the key)."""
    from prefect.client.orchestration import get_client

    from flows.engine.fleet import fleet_name

    skill = str(root / "skills" / "v1" / NAME)
    with FakeProvider() as server:
        SkillScript(NAME, p=0.5).install(server)
        server.delay = 1.0  # long enough for sessions to overlap without the limit
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fleet-test")
        args = ["--skill", skill, "--runs", "2", "--concurrency", "4", "--no-cache", "--timeout", "120"]
        other = run_apart(root, server, *args, "--results-dir", str(root / "r2"), "--fleet-sessions", "1")
        try:
            assert run(root, server, *args, "--results-dir", str(root / "r1"), "--fleet-sessions", "1") == 0
        finally:
            _, err = other.communicate(timeout=600)
        assert other.returncode == 0, err[-2000:]
        fleet_peak = server.peak
        server.peak = 0
        assert run(root, server, *args, "--results-dir", str(root / "r3")) == 0  # the same without the limit
        free_peak = server.peak

    async def limit() -> Any:
        async with get_client() as client:
            return await client.read_global_concurrency_limit_by_name(fleet_name("claude"))

    gcl = asyncio.run(limit())
    assert gcl.limit == 1 and gcl.active_slots == 0 and "sk-fleet-test" not in gcl.name
    assert fleet_peak == 1 and free_peak > 1, (fleet_peak, free_peak)


def test_a_trigger_night_whose_model_moved_names_the_world(root: Path) -> None:
    """Two nights of an unchanged skill, the scripted server answering the second as another model
    (an alias moved), the gate missed that night: the night names the model, not the skill. A night
    read from the session cache still says which model its sessions ran on."""
    from flows.modes.triggers.nightly import nightly_triggers

    def night() -> Any:
        flow = nightly_triggers(str(root / "triggers.yaml"), "greetings", return_state=True)
        return asyncio.run(cast(Coroutine[Any, Any, Any], flow))

    with FakeProvider() as server:
        script = SkillScript(NAME, p=1.0)
        script.install(server)
        suite_file(root, server, {"min-recall": 0.5})
        assert night().is_completed()
        cached = night()  # every session from the cache: the same model, nothing changed
        assert cached.is_completed() and "changed since the previous run" not in str(cached.message)
        suite_file(root, server, {"min-recall": 0.5, "cache": False})
        (report, *_) = (root / "skill-bench" / "triggers").glob("*.json")
        asked = json.loads(report.read_text())["meta"]["fingerprint"]["models"]  # the CLI resolved its alias
        server.answered_as = dict.fromkeys(asked, "claude-sonnet-9-9")
        SkillScript(NAME, p=0.0).install(server)  # the new model never fires the skill
        moved = night()
    assert moved.is_failed() and "outcome:world-changed" in run_tags(moved)
    message = str(moved.message)
    assert f"default: {NAME}: recall 0% < 50%" in message and "the world changed, not the skills" in message
    assert "changed since the previous run: model under test (as the answers reported it): " in message
    assert message.endswith("-> claude-sonnet-9-9")
