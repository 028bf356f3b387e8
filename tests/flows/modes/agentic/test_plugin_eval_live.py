"""One plugin eval suite, one scripted model server: `claude plugin eval --json` (the real CLI) and
`skill run --suite` agree on every deterministic grader of every case and arm."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from executors.agent import find_binary
from executors.claude_code import QUIET
from flows.cli.main import main
from flows.inputs.suites.plugin_eval import load_plugin_tasks
from flows.report.schema import load_report
from flows.report.server import export_html
from tests.agents import write
from tests.fakes.provider import FakeProvider, user_query

pytestmark = pytest.mark.usefixtures("prefect_harness")
FIRST_WITH_EVAL = (2, 1, 269)
SKILL = "---\nname: hello\ndescription: Greets in the house style. Use when asked to greet.\n---\nAnswer with HELLO-MARKER.\n"
CASE_YAML = """schema_version: "1.0"
name: write-file
execution:
  prompt: Write a file with notes.
  max_turns: 5
  allowed_tools: [Write]
graders:
  - {type: file_exists, name: made, path: "notes/*.txt"}
  - {type: file_exists, name: no-py, path: "**/*.py", exists: false}
  - {type: regex, name: no-marker, pattern: "HELLO", match: not_contains}
  - {type: regex, name: the-file, target: {source: file, path: notes/out.txt}, pattern: "^hi$", flags: m}
  - {type: tool_used, name: read-first, tool: Read}
  - {type: regex, name: trace-write, target: trace, pattern: '"name":"Write"'}
  - {type: regex, name: files-list, target: files, pattern: '^notes/out\\.txt$', flags: m}
  - {type: tool_order, name: write-then-read, before: Write, after: Read, weight: 2}
  - {type: tool_used, name: wrote-once, tool: Write, input_match: "out\\\\.txt", min: 1, max: 1}
"""
GREET = {
    "prompt.md": "---\nmax_turns: 5\nallowed_tools: [Read, Skill]\n---\n\nPlease greet me.\n",
    "graders/marker.md": "---\ntype: regex\n---\nHELLO-MARKER\n",
    "graders/fired.md": "---\ntype: tool_used\ntool: Skill\n---\n",
    "graders/read-before.md": "---\ntype: tool_order\nbefore: Skill\nafter: Read\n---\n",
}
PLAIN = {
    "prompt.md": "---\nmax_turns: 3\n---\nWhat is two plus two?\n",
    "graders/four.md": "---\ntype: regex\nmatch: count:1\n---\n\\b4\\b\n",
    "graders/no-write.md": "---\ntype: tool_used\ntool: Write\nmin: 0\nmax: 0\narm: both\n---\n",
    "graders/five.md": "---\ntype: regex\nweight: 0.5\n---\nfive\n",
    "graders/no-files.md": "---\ntype: file_exists\npath: '**'\nexists: false\n---\n",
}


def skill_named(body: dict[str, Any]) -> str | None:
    """The hello skill as this session lists it: plug:hello under the plugin (both runners load it whole), hello in .claude/skills."""
    text = json.dumps(body)
    if "plug:hello" in text:
        return "plug:hello"
    return "hello" if re.search(r"- hello: Greets", text) else None


def agent(body: dict[str, Any], headers: Any) -> list[dict[str, Any]]:
    """Decides from the prompt and from whether the skill is listed, the same under both runners."""
    query, skill = user_query(body), skill_named(body)
    done = sum(
        1
        for m in body.get("messages") or []
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )
    steps: list[dict[str, Any]] = []
    if "greet" in query and skill:
        steps += [
            {"type": "tool_use", "name": "Skill", "input": {"skill": skill}},
            {"type": "tool_use", "name": "Read", "input": {"file_path": "/dev/null"}},
        ]
    if "notes" in query:
        steps.append(
            {"type": "tool_use", "name": "Write", "input": {"file_path": "notes/out.txt", "content": "hi\n"}}
        )
    if done < len(steps):
        return [steps[done]]
    if "two plus two" in query:
        return [{"type": "text", "text": "It is 4."}]
    everything = json.dumps(body.get("messages") or [])
    if "What was the codeword?" in everything:  # the turn after a resumed session's history
        told = "PAPAYA" in everything.replace("What was the codeword?", "")
        return [{"type": "text", "text": "The codeword was PAPAYA." if told else "I was never told one."}]
    return [{"type": "text", "text": "HELLO-MARKER, hi!" if "greet" in query and skill else "Done."}]


RESUME_YAML = """schema_version: "1.0"
name: resume
context:
  history_file: history.jsonl
execution:
  prompt: What was the codeword?
  max_turns: 2
graders:
  - {type: regex, name: remembers, pattern: PAPAYA}
  - {type: regex, name: not-lost, pattern: never told, match: not_contains}
"""


def record_history(binary: str, url: str, tmp_path: Path, case: Path) -> None:
    """A session recorded by the real CLI, as a user records one, becomes the case's history_file."""
    home, work = tmp_path / "recording-home", tmp_path / "recording-work"
    work.mkdir(parents=True)
    argv = [binary, "-p", "Remember this: the codeword is PAPAYA.", "--output-format", "json"]
    done = subprocess.run(argv, env=cli_env(home, url), cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (session,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    write(case, {"case.yaml": RESUME_YAML, "history.jsonl": session.read_text()})


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    root = tmp_path / "plug"
    write(
        root,
        {
            ".claude-plugin/plugin.json": '{"name": "plug", "version": "0.1.0"}',
            "skills/hello/SKILL.md": SKILL,
        },
    )
    write(root / "evals" / "greet", GREET)
    write(root / "evals" / "plain", PLAIN)
    write(root / "evals" / "write-file", {"case.yaml": CASE_YAML})
    return root


def cli_env(home: Path, url: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_CODE_", "CLAUDECODE", "ANTHROPIC_"))
    }
    return env | QUIET | {"HOME": str(home), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-test"}


@pytest.fixture
def claude_with_eval(tmp_path: Path) -> str:
    """The claude binary, when it has `plugin eval` (2.1.269+); the test is skipped otherwise."""
    binary = find_binary("claude")
    if binary is None:
        pytest.fail("the claude CLI is missing: scripts/install-agent-clis.sh installs it")
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    out = subprocess.run([binary, "--version"], env=env, capture_output=True, text=True, timeout=60).stdout
    found = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", out)
    version = tuple(int(p) for p in found.groups()) if found else (0, 0, 0)
    if version < FIRST_WITH_EVAL:
        pytest.skip(
            f"Claude Code {out.strip()} predates `claude plugin eval` (2.1.269): the side-by-side needs 2.1.330"
        )
    return binary


def official(binary: str, plugin: Path, url: str, tmp_path: Path) -> dict[str, Any]:
    """`claude plugin eval --json` of the suite: {case: {arm: {grader: passed, "score": x}}}."""
    home = tmp_path / "official-home"
    home.mkdir()
    env = cli_env(home, url)
    out = tmp_path / "official.json"
    argv = [
        binary,
        "plugin",
        "eval",
        str(plugin),
        "--json",
        str(out),
        "--runs",
        "1",
        "--allow-tools",
        "Write",
    ]
    argv += ["--trust-plugin", "--no-publish", "--report", str(tmp_path / "official.html")]
    done = subprocess.run(
        argv, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600
    )
    assert out.exists(), done.stderr
    data = json.loads(out.read_text())
    assert data["suite"]["ablation"] == "with-without" and data["claudeVersion"]
    return {
        case["name"]: {
            arm: {g["name"]: g["passed"] for g in runs[0]["graders"]} | {"score": runs[0]["score"]}
            for arm, runs in case["arms"].items()
        }
        for case in data["cases"]
    }


def skillab(plugin: Path, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`skill run --suite` of the same suite: the same shape, from the grades it wrote."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    results = tmp_path / "results"
    argv = ["skill", "run", "--suite", str(plugin), "--base-url", url, "--results-dir", str(results)]
    code = main([*argv, "--runs", "1", "--timeout", "120", "--concurrency", "2", "--no-diagnose"])
    assert code == 0
    (run,) = results.glob("plug-*")
    assert (run / "report.json").exists() and (run / "report.md").exists()
    tasks, _ = load_plugin_tasks(plugin)
    out: dict[str, Any] = {}
    for grades in sorted((run / "grades").glob("task-*")):
        for arm, name in (("with-skill", "with"), ("baseline", "without")):
            if not (grades / f"{arm}-checks.json").exists():
                continue  # a single-arm case
            checks = json.loads((grades / f"{arm}-checks.json").read_text())["plugin_eval"]
            grade = json.loads((grades / f"{arm}-grade.json").read_text())
            case = tasks[int(grades.name.removeprefix("task-")) - 1].task_id
            out.setdefault(case, {})[name] = {g["name"]: g["passed"] for g in checks["graders"]} | {
                "score": grade["plugin_eval_score"]
            }
    return out


def test_the_official_runner_and_skillab_agree(
    claude_with_eval: str, plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeProvider() as server:
        server.claude_agent = agent
        record_history(claude_with_eval, server.url, tmp_path, plugin / "evals" / "resume")
        history = (plugin / "evals" / "resume" / "history.jsonl").read_bytes()
        ours = skillab(plugin, server.url, tmp_path, monkeypatch)
        theirs = official(claude_with_eval, plugin, server.url, tmp_path)
    assert ours == theirs
    # a replay case runs with the plugin only (its history carries the plugin into any arm), continues
    # the recorded session, and leaves the case's file as it was
    assert theirs["resume"] == {"with": {"remembers": True, "not-lost": True, "score": 1}}
    assert (plugin / "evals" / "resume" / "history.jsonl").read_bytes() == history
    (md,) = (tmp_path / "results").glob("plug-*/report.md")
    assert (
        "on average over the 3 tasks scored in both arms, each task counted once (1 with a score in one "
        "arm only left out)" in md.read_text()
    )
    page = export_html(load_report(md.with_name("report.json")))
    assert '✓ tool_used: fired <span class="tag">indicator, not scored</span>' in page
    assert "✗ regex: marker" in page
    # the suite discriminates: the skill fires and scores only with the plugin
    assert theirs["greet"]["with"] == {"fired": True, "marker": True, "read-before": True, "score": 1}
    assert theirs["greet"]["without"] == {"marker": False, "read-before": False, "score": 0}
    failed = {k for arm in theirs["write-file"].values() for k, v in arm.items() if v is False}
    assert failed == {"read-first", "write-then-read"}
    assert theirs["write-file"]["with"]["score"] == pytest.approx(7 / 10)
    assert theirs["plain"]["with"]["score"] == theirs["plain"]["without"]["score"] == pytest.approx(3 / 3.5)


SEEN: dict[str, int] = {}


def judge(system: str, prompt: str) -> str:
    """Votes PASS when the graded reply greets in the house style; the second vote on each prompt
    dissents (the three votes of a grader are the same prompt)."""
    SEEN[prompt] = SEEN.get(prompt, 0) + 1
    good = "HELLO-MARKER" in prompt.split("Agent output", 1)[-1]
    return "PASS" if good != (SEEN[prompt] == 2) else "FAIL"


def test_llm_graders_go_to_the_judge_three_votes_majority(
    plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SEEN.clear()
    write(
        plugin / "evals" / "greet",
        {"graders/style.md": "---\ntype: llm\nweight: 2\n---\nGreets in the house style.\n"},
    )
    (plugin / "evals" / "write-file" / "case.yaml").unlink()  # two cases are enough here
    write(
        plugin / "evals" / "write-file",
        {"prompt.md": "Write a file with notes.", "graders/x.md": "---\ntype: file_exists\npath: x\n---\n"},
    )
    with FakeProvider(judge) as server:
        server.claude_agent = agent
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        argv = ["skill", "run", "--suite", str(plugin / "evals"), "--base-url", server.url, "--runs", "1"]
        code = main(
            [*argv, "--results-dir", str(tmp_path / "r"), "--judge-model", "claude-opus-4", "--no-diagnose"]
        )
        votes = server.count(lambda c: "Respond with exactly one word: PASS or FAIL." in c.prompt)
    assert code == 0 and votes == 6  # two arms x three votes; the judge's cache keeps none of them apart
    (run,) = (tmp_path / "r").glob("plug-*")
    with_arm = json.loads((run / "grades" / "task-01" / "with-skill-checks.json").read_text())["plugin_eval"]
    base = json.loads((run / "grades" / "task-01" / "baseline-checks.json").read_text())["plugin_eval"]
    style = {g["name"]: g for g in with_arm["graders"]}["style"]
    assert style["passed"] and len(style["votes"]) == 3 and style["votes"].count(True) == 2
    assert not {g["name"]: g for g in base["graders"]}["style"]["passed"]
    grade = json.loads((run / "grades" / "task-01" / "with-skill-grade.json").read_text())
    assert grade["weighted_total"] == 100 and with_arm["score"] == 1.0


def test_a_suite_of_replay_cases_only_reports_insufficient_data(
    claude_with_eval: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "plug"
    write(root, {".claude-plugin/plugin.json": '{"name": "plug"}', "skills/hello/SKILL.md": SKILL})
    with FakeProvider() as server:
        server.claude_agent = agent
        record_history(claude_with_eval, server.url, tmp_path, root / "evals" / "resume")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        argv = ["skill", "run", "--suite", str(root), "--base-url", server.url, "--runs", "1"]
        code = main([*argv, "--results-dir", str(tmp_path / "r"), "--no-diagnose"])
    err = capsys.readouterr().err
    assert code == 1 and "insufficient data: 0 task(s) completed in both arms" in err
    (md,) = (tmp_path / "r").glob("plug-*/report.md")
    text = md.read_text()
    assert "| 1 | resume | positive | - | 100% | — | — | — |" in text
    assert "Scored in one arm only, so not in the comparison: resume" in text


class Moved(dict[str, str]):
    """Every model asked for answers as one new id (a provider moving its aliases)."""

    MODEL = "claude-sonnet-9-9"

    def get(self, key: str, default: object = None) -> str:  # type: ignore[override]
        return self.MODEL


#: A case in the shape of censys/censys-ai-skills' (written here): its tools listed without Skill, its
#: own plugin named by `plugins`, a grader that expects the plugin's skill to fire.
LISTED_TOOLS_CASE = """schema_version: "1.0"
name: NAME
plugins: ["../.."]
execution:
  prompt: Please greet WHO.
  model: sonnet
  max_turns: 4
  allowed_tools: [Bash, Read]
graders:
  - {type: tool_used, name: fired, tool: Skill}
  - {type: regex, name: marker, pattern: HELLO-MARKER}
"""


def test_listed_tools_keep_the_skill_tool_and_a_case_may_name_its_own_plugin(
    claude_with_eval: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`allowed_tools` grants tools on top of the read-only set (Skill among it), in both arms, as
    `claude plugin eval` does; `plugins: ["../.."]` names the plugin under test and is no
    unsupported field: both runners fire the skill in the with-plugin arm only, and agree."""
    root = tmp_path / "plug"
    write(root, {".claude-plugin/plugin.json": '{"name": "plug"}', "skills/hello/SKILL.md": SKILL})
    for name, who in (("greet-team", "the team"), ("greet-boss", "my boss")):
        text = LISTED_TOOLS_CASE.replace("NAME", name).replace("WHO", who)
        write(root / "evals" / name, {"case.yaml": text})
    with FakeProvider() as server:
        server.claude_agent = agent
        server.answered_as = Moved()  # the alias the CLI resolved answers as a model it never named
        ours = skillab(root, server.url, tmp_path, monkeypatch)
        theirs = official(claude_with_eval, root, server.url, tmp_path)
    assert ours == theirs
    for name in ("greet-team", "greet-boss"):
        assert theirs[name]["with"] == {"fired": True, "marker": True, "score": 1}
        assert theirs[name]["without"] == {"marker": False, "score": 0}
    (run,) = (tmp_path / "results").glob("plug-*")
    report = json.loads((run / "report.json").read_text())
    assert not any("plugins" in w for w in report["meta"]["warnings"] or [])
    # the report names the model the sessions ran on, not the name a case or flag asked for
    assert report["meta"]["model"].startswith(f"{Moved.MODEL} (asked: ")
    assert all(f"model {Moved.MODEL} (asked: sonnet)" in v for v in report["meta"]["caseSettings"].values())
    assert f"Runner Model: {Moved.MODEL} (asked: " in (run / "report.md").read_text()
    assert (
        "Skill"
        in json.loads((run / "outputs" / "task-01" / "with-skill" / "transcript.json").read_text())[0][
            "tools"
        ]
    )
