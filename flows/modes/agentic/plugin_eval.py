"""Agentic sessions of a Claude Code plugin eval case: its settings, its scaffold, its graders.

A plugin case runs like any agentic task (both arms, skillab's sandbox, runner, statistics and
report), with three differences: the case's own tools, turns, timeout, model, env and appended
system prompt; the skill is installed but never forced (the model decides, as under ``claude
plugin eval``); and the case's graders decide it instead of the checks and the four-criterion
judge. Its grade's ``weighted_total`` is the official run score x 100.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from executors.agent import read_events, shipped_configuration
from executors.conversation import MOCK_CALLS
from executors.sandbox import Isolation
from executors.schema import AgentRequest
from flows.engine.judging import run_judge_jobs
from flows.engine.runner import UnitRunner
from flows.inputs.plan import JudgeJob, Target
from graders.checks import check_runner, inside
from graders.grades import CheckDetail, CheckResults, GraderResult, GradeStatus, PluginEvalPart, SessionGrade
from graders.judge import JudgeParseError, JudgePrompt
from graders.plugin_eval import JUDGE_VOTES, BaselineGrader, LlmGrader, PluginCase, offered_tools
from graders.plugin_grading import (
    RunEvidence,
    grade_deterministic,
    graders_for_arm,
    judge_prompt,
    judged_result,
    parse_vote,
    run_score,
)
from tasks.schema import CallPolicy

PRE_EXISTING = "pre-existing-files.json"
VOTE_SCHEMA_JSON = json.dumps(
    {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["PASS", "FAIL"]}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
)
SCAFFOLD_TIMEOUT_S = 300.0


def plugin_request(
    request: AgentRequest, case: PluginCase, skill: str | None = None, case_dir: str | None = None
) -> AgentRequest:
    """The session request with the case's settings; the skill listed, never forced. The baseline
    keeps the Skill tool (as under the official runner), so it is told the skill's name (never its
    folder): only a call of that skill, not of a built-in one, counts as contamination. A replay case
    continues its recorded session (it runs in the with-plugin arm only: sessions.single_arm)."""
    tools = offered_tools(case)
    history = inside(Path(case_dir), case.history_file) if case.history_file and case_dir else None
    return request.model_copy(
        update={
            "model": case.model or request.model,
            "max_turns": case.max_turns,
            "timeout_s": float(case.timeout_seconds),
            "tools": tools,
            "disallowed_tools": tuple(case.disallowed_tools or ()),
            "env": case.env,
            "system": case.append_system_prompt,
            "force_skill": False,
            "skill_name": request.skill_name or skill,
            "resume": str(history) if history is not None else None,
            "add_dirs": tuple(str(Path(case_dir) / d) for d in case.add_dirs) if case_dir else (),
        }
    )


def sandbox_paths(sandbox: Path) -> list[str]:
    """Every file below the sandbox, '/'-separated and relative, without the installed skills."""
    out = []
    for dirpath, dirnames, filenames in os.walk(sandbox):
        rel = Path(dirpath).relative_to(sandbox)
        if rel.parts[:2] == (".claude", "skills"):
            dirnames.clear()
            continue
        out += [(rel / f).as_posix() for f in filenames]
    return sorted(out)


def prepare_sandbox(
    case: PluginCase, case_dir: str | None, sandbox: Path, outputs: Path, isolation: Isolation
) -> str | None:
    """Run the case's scaffold script (when it has one) in the sandbox under the OS sandbox, then
    record the files that exist before the session; an error message when the scaffold failed."""
    sandbox.mkdir(parents=True, exist_ok=True)
    error = None
    if case.scaffold_script and case_dir:
        script = inside(Path(case_dir), case.scaffold_script)
        if script is None or not script.is_file():
            error = f"scaffold_script {case.scaffold_script!r}: no such file in the case folder"
        else:
            with check_runner(sandbox, isolation, SCAFFOLD_TIMEOUT_S) as runner:
                code, tail = runner.run(["/bin/bash", "-c", script.read_text(encoding="utf-8")])
            if code != 0:
                error = f"scaffold_script {case.scaffold_script}: exit {code}: {tail.strip()[-300:]}"
            else:  # what it made is the suite's, and a suite may not configure the agent of both arms
                error = shipped_configuration(sandbox, f"scaffold_script {case.scaffold_script}")
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / PRE_EXISTING).write_text(json.dumps(sandbox_paths(sandbox)))
    return error


def evidence(sandbox: Path, outputs: Path) -> RunEvidence:
    """The session's events, the files it created and a reader confined to its sandbox."""
    events = read_events(outputs / "raw_stream.jsonl")
    before_file = outputs / PRE_EXISTING
    before = set(json.loads(before_file.read_text())) if before_file.is_file() else set()
    created = [p for p in sandbox_paths(sandbox) if p not in before] if sandbox.is_dir() else []

    def read(path: str) -> bytes | None:
        found = inside(sandbox, path)
        return found.read_bytes() if found is not None and found.is_file() else None

    calls = outputs / MOCK_CALLS
    mocked = calls.read_text(encoding="utf-8", errors="replace") if calls.is_file() else None
    return RunEvidence(events=events, created_files=created, read_file=read, mock_calls=mocked)


def grade_plugin_run(case: PluginCase, run: RunEvidence, with_plugin: bool) -> CheckResults:
    """The free graders' verdicts in the checks' shape; judged graders listed as pending."""
    results, pending = [], []
    for grader, with_only in graders_for_arm(case, with_plugin):
        result = grade_deterministic(grader, run, with_only)
        if result is None:
            pending.append(grader.name)
        else:
            results.append(result)
    return summarize(results, pending)


def summarize(results: list[GraderResult], pending: list[str]) -> CheckResults:
    score = run_score(results) if not pending else None
    return CheckResults(
        all_passed=all(r.passed for r in results if r.scored),
        details=[
            CheckDetail(
                check=f"{r.type}: {r.name}",
                passed=r.passed,
                reason=r.explanation,
                indicator=r.with_only,
                **({"error": True} if r.error else {}),
            )
            for r in results
        ],
        plugin_eval=PluginEvalPart(score=score, graders=results, pending=pending),
        isolation="none",  # nothing is run: the graders read the stream and the files
    )


def judge_jobs(
    case: PluginCase, run: RunEvidence, with_plugin: bool, target: Target, label: tuple[str, str, int]
) -> list[tuple[str, JudgeJob | None]]:
    """(grader name, job) per vote of each judged grader; job None when its focus cannot be read."""
    out: list[tuple[str, JudgeJob | None]] = []
    for grader, _ in graders_for_arm(case, with_plugin):
        if not isinstance(grader, LlmGrader | BaselineGrader):
            continue
        reference = None
        if isinstance(grader, BaselineGrader):
            data = run.read_file(grader.baseline_file)
            reference = None if data is None else data.decode("utf-8", errors="replace")
        prompt = judge_prompt(grader, run, reference)
        for vote in range(1, JUDGE_VOTES + 1):
            job = None
            if prompt is not None:
                job = JudgeJob(
                    target,
                    JudgePrompt(grader.name, "", prompt),
                    *label,
                    repeat=vote,
                    schema_json=VOTE_SCHEMA_JSON,
                )
            out.append((grader.name, job))
    return out


def parse_judge_vote(raw: str) -> bool:
    vote = parse_vote(raw)
    if vote is None:
        raise JudgeParseError("the judge answered neither PASS nor FAIL")
    return vote


def finish(
    case: PluginCase, checks: CheckResults, votes: dict[str, list[bool | None]], with_plugin: bool
) -> tuple[CheckResults, SessionGrade]:
    """The checks with the judged graders' majorities added, and the run's grade."""
    part = checks.plugin_eval or PluginEvalPart(score=None, graders=[])
    results = list(part.graders)
    for grader, with_only in graders_for_arm(case, with_plugin):
        if grader.name in part.pending and isinstance(grader, LlmGrader | BaselineGrader):
            results.append(judged_result(grader, votes.get(grader.name, []), with_only))
    order = [g.name for g in case.graders]
    results.sort(key=lambda r: order.index(r.name))
    done = summarize(results, [])
    undecided = [f"{r.name}: {r.explanation}" for r in results if r.error and not r.with_only]
    if undecided:  # fail closed: the run has no score, counted apart from the model's failures
        return done, SessionGrade(
            status=GradeStatus.UNGRADED, error="; ".join(undecided), weighted_total=None
        )
    score = float(done.plugin_eval.score or 0.0) if done.plugin_eval else 0.0
    return done, SessionGrade(
        status=GradeStatus.GRADED,
        deterministic_checks_passed=done.all_passed,
        weighted_total=round(100 * score, 2),
        plugin_eval_score=score,
        summary="; ".join(f"{r.name}: {'pass' if r.passed else 'FAIL'}" for r in results),
    )


async def judge_plugin_runs(
    runner: UnitRunner,
    target: Target,
    policy: CallPolicy,
    runs: list[tuple[int, PluginCase, RunEvidence, bool, tuple[str, str, int]]],
    checks: list[CheckResults],
) -> dict[int, tuple[CheckResults, SessionGrade]]:
    """Three judge votes per judged grader of each run (index, case, evidence, with plugin, label),
    majority wins; each run's completed checks and its grade, by index."""
    planned = [
        (i, name, job)
        for i, case, run, arm, label in runs
        for name, job in judge_jobs(case, run, arm, target, label)
    ]
    asked = [(i, name, job) for i, name, job in planned if job is not None]
    answers = await run_judge_jobs(runner, [job for _, _, job in asked], parse_judge_vote, lambda _: policy)
    votes: dict[int, dict[str, list[bool | None]]] = {}
    for (i, name, _), (vote, _raw, _error) in zip(asked, answers, strict=True):
        votes.setdefault(i, {}).setdefault(name, []).append(vote)
    for i, name, job in planned:
        if job is None:  # the focus file is missing: every vote is a FAIL
            votes.setdefault(i, {}).setdefault(name, []).append(False)
    return {i: finish(case, checks[i], votes.get(i, {}), arm) for i, case, _run, arm, _label in runs}
