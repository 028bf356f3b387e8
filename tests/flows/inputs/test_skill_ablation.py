"""--ablate in agentic mode: the extra arms, their copies of the skill, their sessions, and the report
section built from them against the with-skill arm."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from scipy.stats import ttest_1samp

from executors.errors import InputError
from executors.schema import AgentSession, SessionStatus
from flows.inputs.ablation import plan_skill_ablations, skill_ablations, write_ablated_skills
from flows.inputs.skill_config import Skill, SkillBenchConfig
from flows.modes.agentic.flow import session_record
from flows.modes.agentic.plan import ARMS, arm_root, plan_sessions
from flows.modes.agentic.report import AgenticRun, Graded, build_skill_report
from graders.agent_task import parse_task
from graders.behavior import analyze
from graders.grades import WEIGHTS, CheckResults, SessionGrade
from tasks.schema import Arm

SKILL_MD = """---
name: calc-skill
description: Writes small Python modules. Use for Python tasks.
---
# Calc
Intro kept in every arm.
## Rules
Use the PLUS-MARKER.
## Style
Short names.
"""

TASK = """# Task: t{n}
difficulty: easy
category: python
type: positive

## Prompt
Write calc.py ({n}).

## Expected Outcome
calc.py exists.

## Verification Checks
- file_exists: calc.py

## Grading Rubric
- Correctness: it works
"""


def test_one_arm_per_section_with_the_front_matter_kept() -> None:
    arms = skill_ablations(Path("s/SKILL.md"), SKILL_MD, ())
    assert [(a.arm, a.heading) for a in arms] == [
        ("with-skill-no-rules", "Rules"),
        ("with-skill-no-style", "Style"),
    ]
    for a in arms:
        assert a.skill_md.startswith(SKILL_MD.split("# Calc")[0]) and "Intro kept" in a.skill_md
    assert "PLUS-MARKER" not in arms[0].skill_md and "Short names" in arms[0].skill_md
    assert "PLUS-MARKER" in arms[1].skill_md and "Short names" not in arms[1].skill_md
    (only,) = skill_ablations(Path("s/SKILL.md"), SKILL_MD, ("style",))
    assert only.arm == "with-skill-no-style"


def test_plan_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("---\nname: x\ndescription: y\n---\nno headings at all\n")
    assert plan_skill_ablations(tmp_path, False, ()) == []
    with pytest.raises(
        InputError, match=r"SKILL.md: --ablate: no markdown heading, so no section to leave out"
    ):
        plan_skill_ablations(tmp_path, True, ())
    with pytest.raises(InputError, match="--ablate-sections: needs --ablate"):
        plan_skill_ablations(tmp_path, False, ("Rules",))
    (tmp_path / "SKILL.md").write_text(SKILL_MD)
    with pytest.raises(InputError, match=r"no heading 'Nope' \(headings: Calc, Rules, Style\)"):
        plan_skill_ablations(tmp_path, True, ("Nope",))


def test_each_arm_gets_a_copy_of_the_whole_skill(tmp_path: Path) -> None:
    skill = tmp_path / "calc-skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "scripts" / "helper.py").write_text("x = 1\n")
    arms = skill_ablations(skill / "SKILL.md", SKILL_MD, ())
    dirs = write_ablated_skills(skill, "calc-skill", arms, tmp_path / "run" / "ablated-skills")
    assert list(dirs) == ["with-skill-no-rules", "with-skill-no-style"]
    for a in arms:
        copy = dirs[a.arm]
        assert copy.name == "calc-skill" and (copy / "scripts" / "helper.py").read_text() == "x = 1\n"
        assert (copy / "SKILL.md").read_text() == a.skill_md
    assert (skill / "SKILL.md").read_text() == SKILL_MD  # the original untouched


def test_ablated_arms_run_the_same_tasks_and_runs(tmp_path: Path) -> None:
    tasks = [parse_task(TASK.format(n=n), f"task-0{n}") for n in (1, 2)]
    arms = (*ARMS, "with-skill-no-rules")
    iso = tmp_path / "skillab-sandboxes" / "a1b2c3d4e5f6"
    plans = plan_sessions(tasks, tmp_path / "r", 2, iso, arms)
    assert len(plans) == 2 * 2 * 3
    grid = {(s.task.task_id, s.run, s.mode) for s in plans}
    assert grid == {(t.task_id, run, arm) for t in tasks for run in (1, 2) for arm in arms}
    cut = next(s for s in plans if s.mode == "with-skill-no-rules" and s.run == 2)
    full = next(s for s in plans if s.mode == Arm.WITH_SKILL and s.run == 2 and s.index == 1)
    assert cut.kind == Arm.WITH_SKILL and cut.sandbox.name == full.sandbox.name  # the cwd names no section
    base = next(s for s in plans if s.mode == Arm.BASELINE and s.run == 2 and s.index == 1)
    # nor the arm: one neutral name of one length for both
    assert len(base.sandbox.name) == len(full.sandbox.name) and base.sandbox.name != full.sandbox.name
    assert not {"with-skill", "baseline"} & {part for s in plans for part in s.sandbox.parts}
    assert len(str(cut.sandbox)) == len(str(full.sandbox)) and cut.sandbox != full.sandbox
    root = arm_root(iso, "with-skill-no-rules")
    assert root.parent == iso.parent and len(root.name) == len(iso.name) and root != iso
    assert cut.home == root / "home" / "task-01" / "run-2" / full.sandbox.name
    assert arm_root(iso, Arm.BASELINE) == arm_root(iso, Arm.WITH_SKILL) == iso
    assert cut.outputs == tmp_path / "r" / "outputs" / "task-01" / "run-2" / "with-skill-no-rules"
    assert {s.kind for s in plans if s.mode == Arm.BASELINE} == {Arm.BASELINE}
    assert len({s.sandbox for s in plans}) == len(plans)  # every session its own sandbox
    assert [s.mode for s in plan_sessions(tasks, tmp_path, 1, tmp_path)] == list(ARMS) * 2


def graded(plan: object, score: float, tokens: int) -> Graded:
    session = AgentSession(
        ok=True,
        status=SessionStatus.SUCCESS,
        final_text="done",
        meta={"usage": {"input_tokens": tokens, "cache_read_input_tokens": 100, "output_tokens": 5}},
    )
    grade = SessionGrade.model_validate({k: {"score": score} for k in WEIGHTS} | {"weighted_total": score})
    return Graded(plan, session, CheckResults(all_passed=score > 60), analyze(session), grade, None)  # type: ignore[arg-type]


def test_report_finds_the_section_against_the_full_skill(tmp_path: Path) -> None:
    """Scores are known: without Rules every task drops by ~50; without Style it moves by at most 3
    either way. The with-skill vs baseline comparison is the one a run without --ablate gives."""
    tasks = [parse_task(TASK.format(n=n), f"task-0{n}") for n in range(1, 7)]
    ablated = {"with-skill-no-rules": "Rules", "with-skill-no-style": "Style"}
    plans = plan_sessions(tasks, tmp_path, 1, tmp_path, (*ARMS, *ablated))
    jitter = [1, -2, 3, 0, -1, 2]
    score = {
        Arm.WITH_SKILL: lambda i: 80.0 + i,
        Arm.BASELINE: lambda i: 30.0 + 2 * i,
        "with-skill-no-rules": lambda i: 30.0 + i + jitter[i],
        "with-skill-no-style": lambda i: 80.0 + i + jitter[i],
    }
    tokens = {"with-skill-no-rules": 900, "with-skill-no-style": 950}
    rows = [graded(s, score[s.mode](s.index - 1), tokens.get(s.mode, 1000)) for s in plans]
    config = SkillBenchConfig()
    records = [session_record(g, config) for g in rows]
    skill = Skill("calc-skill", tmp_path / "calc-skill")
    started = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    run = AgenticRun(config, skill, tasks, "h", tmp_path, started, "none", ablated)
    report = build_skill_report(run, rows, records)
    (main,) = report.comparisons
    assert (main.control, main.treatment) == ("baseline", "with-skill")
    assert main.paired.p_holm == main.paired.p_ttest and report.multiple_comparisons is None
    assert set(report.summary) == {"baseline", "with-skill", *ablated}
    assert report.meta.variants == ["baseline", "with-skill", *ablated]
    assert set(report.results[0].variants) == {"baseline", "with-skill", *ablated}
    abl = report.ablation
    assert abl is not None and abl.full == "with-skill" and abl.cases == 6
    assert abl.artifact == str(tmp_path / "calc-skill" / "SKILL.md")
    rules, style = abl.sections
    assert (rules.section, rules.finding, style.section, style.finding) == (
        "Rules",
        "helps",
        "Style",
        "no detectable effect",
    )
    assert rules.contribution == pytest.approx(50 - sum(jitter) / 6)
    # Holm over the two sections, by hand: the smaller p doubled, the larger one as it is
    p_rules = ttest_1samp([50.0 - j for j in jitter], 0).pvalue
    p_style = ttest_1samp([-float(j) for j in jitter], 0).pvalue
    assert rules.p_holm == pytest.approx(2 * p_rules) and style.p_holm == pytest.approx(p_style)
    assert rules.p_holm is not None and style.p_holm is not None and rules.p_holm < 0.05 < style.p_holm
    assert rules.input_tokens == 100 and style.input_tokens == 50  # 1100 vs 1000 and 1050 per session
    assert "no detectable effect at this N (smallest detectable effect" in style.line
    assert "input tokens per session" in rules.line
