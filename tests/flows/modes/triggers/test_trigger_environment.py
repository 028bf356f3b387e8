"""Trigger mode in the user's real environment: the real claude CLI with an installed setup (skills,
settings, instruction files) snapshotted from a HOME, against a scripted model that can only pick a
skill whose description its request lists in full; the listing's budget, who steals from whom, a
filled window, and a HOME's secrets never copied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.cli.main import main
from tests.agents import need, write
from tests.browser import chromium, serving
from tests.fakes.provider import FakeProvider, RouteScript

pytestmark = pytest.mark.usefixtures("prefect_harness")

CANARY = "CANARY-7f3a9e-do-not-copy"
FILLER = "Handles the {topic} chores of the team, " + "routine upkeep and notes " * 20


def skill(folder: Path, name: str, description: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n# {name}\nDo it.\n"
    )
    return folder


def queries(root: Path, rows: list[tuple[str, str, str]]) -> None:
    data = [{"id": i, "query": q, "expect": e} for i, q, e in rows]
    (root / "queries.yaml").write_text(yaml.safe_dump({"queries": data}))


def run(root: Path, server: FakeProvider, *args: str) -> int:
    need("claude")
    common = ["skill", "triggers", "run", "--queries", "queries.yaml", "--base-url", server.url, "--quiet"]
    common += ["--results-dir", str(root / "results"), "--cache-dir", str(root / "cache"), "--timeout", "90"]
    return main([*common, *args])


def report_of(root: Path) -> dict[str, object]:
    (path,) = sorted((root / "results").glob("*.json"))
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_a_skill_dropped_from_an_over_budget_listing_is_reported_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    team = tmp_path / "team-project"  # project skills, listed in name order like the skill under test
    for i in range(40):  # 40 x ~520 characters: far over the 8,000 of a 200,000-token window
        skill(team / ".claude" / "skills" / f"s{i:02d}", f"s{i:02d}", FILLER.format(topic=f"topic{i}"))
    # as long as the others: the CLI keeps whole descriptions, greedily, while they fit the budget
    new = skill(
        tmp_path / "new" / "zz-late", "zz-late", "Writes release notes, " + "from the merged work " * 30
    )
    queries(
        tmp_path,
        [
            ("r1", "Write the release notes", "zz-late"),
            ("r2", "Draft notes for the release", "zz-late"),
            ("t0", "Do the topic0 chores", "s00"),
            ("n1", "What is 17 times 3?", "none"),
        ],
    )
    monkeypatch.chdir(tmp_path)
    prefs = {"Write the release notes": [("zz-late", 1.0)], "Draft notes for the release": [("zz-late", 1.0)]}
    prefs["Do the topic0 chores"] = [("s00", 1.0)]
    with FakeProvider() as server:
        script = RouteScript(prefs).install(server)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["--skill", str(new), "--environment-project", str(team), "--runner-model", "claude-haiku-4-5"]
        assert run(tmp_path, server, *args, "--runs", "1", "--dry-run") == 0
        plan = capsys.readouterr().out
        assert "= 8 sessions of claude" in plan and "40 skills, 0 plugins" in plan
        assert (
            "budget 8,000 at a 200,000-token window); over the budget: descriptions will be dropped" in plan
        )
        assert not server.calls
        code = run(tmp_path, server, *args, "--runs", "1")
        out = capsys.readouterr().out
    assert code == 0, out
    assert all(
        listing.get("zz-late") == "" for sid, listing in script.listings.items() if "zz-late" in listing
    )
    report = report_of(tmp_path)
    summaries = {s["variant"]: s for s in report["triggers"]["summaries"]}  # type: ignore[index]
    assert set(summaries) == {"environment", "+zz-late"}
    listing = summaries["+zz-late"]["listing"]
    assert listing["budget"] == 8000 and listing["chars"] <= 8000 and listing["over_budget"] == 4
    late = next(s for s in listing["skills"] if s["skill"] == "zz-late")
    assert (late["dropped"], late["full"], late["recall_when"]["dropped"]["k"]) == (4, 0, 0)
    s00 = next(s for s in listing["skills"] if s["skill"] == "s00")
    assert s00["full"] == 4 and s00["recall_when"]["full"]["k"] == 1
    assert "zz-late: recall 0%" in out
    assert "its description was dropped to fit the listing budget: the model could not choose it" in out
    assert (
        "WARN listing: 1 skill(s) with queries listed without their whole description in most sessions" in out
    )
    assert report["meta"]["environment"]["skills"][:2] == ["s00", "s01"]  # type: ignore[index]


def test_a_neighbour_that_loses_its_queries_is_found_and_no_secret_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    skill(home / ".claude" / "skills" / "changelog-bot", "changelog-bot", "Keeps CHANGELOG.md up to date.")
    skill(home / ".claude" / "skills" / "lint-fixer", "lint-fixer", "Fixes lint warnings in Python code.")
    (home / ".claude" / "CLAUDE.md").write_text("Prefer short answers.\n")
    plugin = home / ".claude" / "plugins" / "cache" / "team-market" / "helper" / "1.0.0"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "helper", "version": "1.0.0"}))
    skill(plugin / "skills" / "tidy", "tidy", "Tidies import blocks.")
    installed = {
        "scope": "user",
        "installPath": f"/home/someone-else/.claude/plugins/{plugin.relative_to(home / '.claude' / 'plugins')}",
    }
    (home / ".claude" / "plugins" / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": {"helper@team-market": [installed]}})
    )
    (home / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "skillListingMaxDescChars": 900,
                "enabledPlugins": {"helper@team-market": True},
                "apiKeyHelper": f"echo {CANARY}",
                "env": {"ANTHROPIC_API_KEY": CANARY},
                "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": f"echo {CANARY}"}]}]},
            }
        )
    )
    secrets = (
        ".claude/.credentials.json",
        ".claude.json",
        ".claude/history.jsonl",
        ".claude/projects/p/s.jsonl",
    )
    write(home, dict.fromkeys(secrets, json.dumps({"token": CANARY})))
    new = skill(tmp_path / "new" / "release-notes", "release-notes", "Writes release notes and changelogs.")
    # also installed, unchanged: the environment arm leaves it out, so the comparison is "adding it"
    skill(
        home / ".claude" / "skills" / "release-notes", "release-notes", "Writes release notes and changelogs."
    )
    asks = [
        "Update the changelog",
        "Add this fix to CHANGELOG.md",
        "Log the new feature in the changelog",
        "Record the API break in the changelog",
        "Changelog entry for the login bug",
        "Note the dependency bump in CHANGELOG.md",
    ]
    rows = [(f"c{i}", q, "changelog-bot") for i, q in enumerate(asks)]
    rows += [
        ("r1", "Write the release notes", "release-notes"),
        ("l1", "Fix the lint warnings", "lint-fixer"),
    ]
    rows += [("t1", "Tidy the imports", "helper:tidy")]
    queries(tmp_path, [*rows, ("n1", "What is 17 times 3?", "none")])
    prefs = {q: [("release-notes", 1.0), ("changelog-bot", 1.0)] for q in asks}
    prefs |= {
        "Write the release notes": [("release-notes", 1.0)],
        "Fix the lint warnings": [("lint-fixer", 1.0)],
    }
    prefs["Tidy the imports"] = [("helper:tidy", 1.0)]
    monkeypatch.chdir(tmp_path)
    with FakeProvider() as server:
        RouteScript(prefs).install(server)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        code = run(tmp_path, server, "--skill", str(new), "--environment", str(home), "--runs", "1")
        out, err = capsys.readouterr()
        bodies = [json.dumps(c.body) for c in server.calls]
    assert code == 0, out
    line = next(x for x in out.splitlines() if "changelog-bot's recall" in x)
    assert line.startswith(
        "adding +release-notes lowered changelog-bot's recall from 100% to 0% (-100 points"
    )
    assert line.endswith("6 queries): WORSE")
    assert "lint-fixer's recall at 100%" in out and "helper:tidy's recall at 100%" in out
    assert any("Prefer short answers." in b for b in bodies)  # the user's CLAUDE.md reached the model
    assert not any(CANARY in b for b in bodies)
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and p.is_relative_to(tmp_path / "results")]
    assert leaked and not any(CANARY in p.read_text(errors="replace") for p in leaked)
    env = report_of(tmp_path)["meta"]["environment"]  # type: ignore[index]
    assert env["settings"] == ["home:skillListingMaxDescChars"] and env["memory"] == [
        "home/.claude/CLAUDE.md"
    ]
    assert env["skills"] == ["changelog-bot", "lint-fixer", "release-notes", "helper:tidy"]
    assert env["plugins"] == ["helper"] and "release-notes is installed in the environment unchanged" in err
    assert len(env["sha256"]) == 64
    # the fingerprint: the snapshot's digest and, per variant, the skills the real CLI listed
    fingerprint = report_of(tmp_path)["meta"]["fingerprint"]  # type: ignore[index]
    assert fingerprint["environment"] == env["sha256"][:12] and fingerprint["agentCli"].startswith("claude")
    assert len(fingerprint["listing"]) == 2 and len(set(fingerprint["listing"].values())) == 2
    page = page_text(tmp_path)
    assert "Who steals from whom" in page and "Listing the model received" in page
    row = next(x for x in page.splitlines() if x.startswith("changelog-bot") and "recall" in x)
    assert "100%" in row and "WORSE" in row, row


def page_text(root: Path) -> str:
    """The run's page as a reader sees it (its visible text), with no script error."""
    from flows.report.server import create_app

    run_id = next((root / "results").glob("*.json")).stem
    problems: list[str] = []
    with serving(lambda port: create_app(root / "results", port=port)) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{url}/run/{run_id}")
        text: str = page.locator("body").inner_text()
    assert not problems, problems
    return text


def test_a_filled_window_is_a_paired_factor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new = skill(tmp_path / "new" / "greeting-files", "greeting-files", "Writes greeting files.")
    asks = [
        "Write me a greeting file",
        "Put a hello into a text file",
        "Make a welcome note file",
        "Greet the new team in a file",
        "Save a birthday greeting to disk",
        "A text file that says hello, please",
    ]
    queries(
        tmp_path, [*((f"g{i}", q, "greeting-files") for i, q in enumerate(asks)), ("n1", "17 x 3?", "none")]
    )
    monkeypatch.chdir(tmp_path)
    with FakeProvider() as server:
        # fires in an empty window, never once the window holds more than 150,000 characters
        script = RouteScript({q: [("greeting-files", 1.0)] for q in asks}, crowded=(150_000, 0.0)).install(
            server
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["--skill", str(new), "--context-fill", "0.5", "--context-window", "100000"]
        code = run(tmp_path, server, *args, "--runs", "1")
        out = capsys.readouterr().out
    assert code == 0, out
    sizes = sorted(script.sizes.values())
    assert sizes[0] < 150_000 < sizes[-1] and len(sizes) == 14  # 7 queries x (empty, filled)
    assert "default@fill50% vs default [all] recall: WORSE" in out
    # the model's own window is not the 100,000 tokens asked: the share filled is said as it was
    assert (
        "warning: --context-fill: the sessions reported a 1,000,000-token window, not --context-window 100,000: the filled variants took 5% of it, not 50%"
        in out
    )
    report = report_of(tmp_path)
    assert report["meta"]["contextFill"] == 0.5 and report["meta"]["contextWindow"] == 100000  # type: ignore[index]


def test_tune_keeps_the_rewrite_that_wins_on_holdout_and_drops_the_one_that_fits_train_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from graders.queries import load_queries, split

    home = tmp_path / "home"
    skill(home / ".claude" / "skills" / "lint-fixer", "lint-fixer", "Fixes lint warnings in Python code.")
    mine = skill(tmp_path / "mine" / "greeting-files", "greeting-files", "Writes files.")
    asks = [f"Write a greeting file for team {c}" for c in "ABCDEFGHIJKL"]
    rows = [(f"g{i:02d}", q, "greeting-files") for i, q in enumerate(asks)]
    rows += [("l1", "Fix the lint warnings", "lint-fixer")] + [
        (f"n{i}", f"What is {i} times 3?", "none") for i in range(3)
    ]
    queries(tmp_path, rows)
    train, holdout = split(load_queries(tmp_path / "queries.yaml").queries, 0.5, 0)
    # a train query fires on a description that says "greeting"; a holdout one only on "welcome"
    needs = {q.query: "greeting" for q in train if q.query in asks}
    needs |= {q.query: "welcome" for q in holdout if q.query in asks}
    prefs = {q: [("greeting-files", 1.0)] for q in asks} | {"Fix the lint warnings": [("lint-fixer", 1.0)]}
    rewrites = [
        "Writes greeting files for a team.",
        "Writes greeting and welcome files for a team or a person.",
    ]
    monkeypatch.chdir(tmp_path)
    with FakeProvider(lambda system, prompt: json.dumps(rewrites)) as drafter, FakeProvider() as server:
        RouteScript(prefs, needs=needs).install(server)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", drafter.url)  # the drafting model's endpoint
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        common = ["skill", "triggers", "tune", "--skill", str(mine), "--queries", "queries.yaml", "--quiet"]
        common += ["--environment", str(home), "--holdout", "0.5", "--base-url", server.url, "--runs", "1"]
        common += [
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--candidates",
            "2",
        ]
        assert main([*common, "--dry-run"]) == 0 and not drafter.calls
        assert "x 4 variant(s) x 1 run(s) = 64 sessions" in capsys.readouterr().out
        code = main(common)
        out = capsys.readouterr().out
        prompt = drafter.calls[0].prompt
    assert code == 0, out
    assert all(q.query in prompt for q in train) and not any(q.query in prompt for q in holdout)
    c1 = next(x for x in out.splitlines() if x.startswith("c1 over current"))
    c2 = next(x for x in out.splitlines() if x.startswith("c2 over current"))
    assert ": not kept: holdout recall +0.00" in c1 and "on train +1.00" in c1 and "overfit" in c1
    assert ": kept: holdout recall +1.00: BETTER" in c2 and "lint-fixer's recall at 100%" in out
    assert (mine / "SKILL.md").read_text().count("Writes files.") == 1  # the user's skill is untouched
    (kept,) = (tmp_path / "results" / ".tune").glob("*/c2/greeting-files/SKILL.md")
    assert "welcome files" in kept.read_text() and kept.read_text().endswith("# greeting-files\nDo it.\n")
    decisions = report_of(tmp_path)["triggers"]["decisions"]  # type: ignore[index]
    assert [(d["treatment"], d["kept"]) for d in decisions] == [("c1", False), ("c2", True)]
    page = page_text(tmp_path)
    row = next(x for x in page.splitlines() if x.startswith("c2\tcurrent"))
    assert rewrites[1] in row and "\tkept" in row, row
