"""Agentic mode's part of the report: its meta, the sessions it left out, the transcript analysis
and its report class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field

from executors.parsing import JsonObject
from flows.report.ci import per_case_suites, score_failure
from flows.report.diagnosis_parts import AgentMatrix, AgentPortability, Portability
from flows.report.entries import AgentVariantResult, CaseResult
from flows.report.logtext import md
from flows.report.schema import CheckStatus, JunitCase, Report, SessionMeta, ValidityCheck
from flows.report.validity import SHOWN
from tasks.schema import Arm
from tasks.stats.models import Model


class Contamination(Model):
    """A session excluded because its arm saw (or lacked) the skill."""

    task: str
    """the task"""
    mode: Arm
    """the arm"""
    run: int
    """the run"""
    reason: str
    """what the init event or the session showed"""


class AgenticMeta(SessionMeta):
    """Agentic mode's run: the skill, its task suite, and the sessions excluded."""

    skill: str | None = None
    """the skill under test"""
    skill_path: str | None = None
    """its folder"""
    skill_sha256: str | None = None
    """SHA-256 of its files"""
    runs: int | None = None
    """sessions per task and arm"""
    suite_sha256: str | None = None
    """SHA-256 of the task suite"""
    results_dir: str | None = None
    """the run's results tree"""
    contaminated: list[Contamination] = Field(default_factory=list)
    """sessions excluded as contaminated"""
    warnings: list[str] = Field(default_factory=list)
    """what the run could not do as its suite asked (a field run without, a grader bound to fail)"""
    case_settings: dict[str, str] | None = None
    """a plugin suite's cases that set their own model, turns, timeout or runs: case -> what ran"""
    reused_sessions: int | None = None
    """baseline sessions taken from earlier runs instead of run again (only the skill changed)"""
    reused_from: list[str] | None = None
    """the runs (results folders) they came from"""

    def reused_line(self) -> str | None:
        if not self.reused_sessions:
            return None
        return f"{self.reused_sessions} baseline session(s) from {', '.join(self.reused_from or [])}"


class BehaviorSummary(Model):
    """Transcript analysis of one arm, averaged over its sessions."""

    avg_tool_calls: float
    """tool calls per session"""
    avg_turns: float
    """turns per session"""
    thrashing: int
    """sessions that repeated themselves"""
    sessions: int
    """sessions counted"""
    avg_duration_s: float
    """seconds per session"""
    avg_cost_usd: float
    """cost per session"""
    total_cost_usd: float
    """cost of the arm"""
    skill_invoked: int
    """sessions that invoked the skill"""
    errors_encountered: int
    """tool errors"""
    errors_recovered: int
    """tool errors followed by a success"""
    max_turns_hit: int
    """sessions that hit the turn limit"""
    permission_denials: int
    """tool calls the CLI denied"""
    skills_called: dict[str, int] | None = None
    """skill name as called -> sessions that called it (which of a plugin's skills fired)"""


class AgenticReport(Report):
    """An agentic-mode run: the figures of every run, and the sessions' own."""

    mode: Literal["agentic"]
    meta: AgenticMeta
    results: list[CaseResult[AgentVariantResult]] = Field(default_factory=list)
    criteria: dict[str, dict[str, float | None]] | None = None
    """arm -> mean of each criterion"""
    deterministic_pass_rate: dict[str, float | None] | None = None
    """arm -> share of sessions whose checks all passed, of those whose task has checks (None: none has)"""
    deterministic_checked: dict[str, int] | None = None
    """arm -> sessions whose task has checks (the rate's denominator)"""
    negative_controls: list[CaseResult[AgentVariantResult]] | None = None
    """the negative-control tasks"""
    behavior: dict[str, BehaviorSummary] | None = None
    """arm -> transcript analysis"""
    matrix: AgentMatrix | None = Field(
        default=None, description="--runner A,B,...: the skill's lift per agent and between agents"
    )
    portability: Portability | None = Field(
        default=None, description="does the skill travel: a line per agent CLI, from the lint and the run"
    )

    def all_cases(self) -> list[CaseResult[Any]]:
        return [*self.results, *(self.negative_controls or [])]

    caches = False  # no session cache: a re-run starts the suite afresh
    judged = "four-criterion weighted total (0-100 mapped onto 1-5)"

    @classmethod
    def migrated(cls, data: JsonObject, version: int) -> JsonObject:
        """Version 1 files wrote a session grade's status in capitals."""
        if version == 1:
            for run in runs_of(data):
                grade = run.get("grade")
                if run.get("status") != "contaminated" and isinstance(grade, dict):
                    run["grade"] = {**grade, "status": str(grade.get("status", "graded")).lower()}
        return data

    def own_checks(self, limit: float) -> list[ValidityCheck]:
        return [baseline_line(self, limit)]

    def junit(self, threshold: float) -> list[tuple[str, list[JunitCase]]] | None:
        """The shared suites (one per arm), then the portability certificate: an agent --require-portable
        names fails where the skill is not portable to it; any other agent's line is skipped, not failed."""
        suites = per_case_suites(self, threshold, score_failure)
        if self.portability is not None:
            suites.append(
                (
                    "portability",
                    [portability_case(a, self.portability.required) for a in self.portability.agents],
                )
            )
        return suites

    def summary_parts(self) -> list[str]:
        if self.portability is None:
            return []
        return ["", "### Portability", "", *(f"- {md(a.line)}" for a in self.portability.agents)]


def portability_case(agent: AgentPortability, required: list[str]) -> JunitCase:
    if agent.status == "portable":
        return JunitCase(agent.agent, None, None)
    if agent.agent in required:
        return JunitCase(agent.agent, None, agent.line)
    return JunitCase(agent.agent, None, None, skipped=f"{agent.line} (--require-portable does not name it)")


def runs_of(data: JsonObject) -> Iterator[JsonObject]:
    """Every run entry of a decoded report (the variant entries and their runs), skipping whatever is
    not shaped as one."""
    cases = [
        c for key in ("results", "negativeControls") if isinstance(data.get(key), list) for c in data[key]
    ]
    for case in cases:
        variants = case.get("variants") if isinstance(case, dict) else None
        for entry in variants.values() if isinstance(variants, dict) else []:
            runs = entry.get("runs") if isinstance(entry, dict) else None
            for run in [entry, *(runs if isinstance(runs, list) else [])]:
                if isinstance(run, dict):
                    yield run


def baseline_line(report: AgenticReport, limit: float) -> ValidityCheck:
    """Did the baseline arm stay blind to the skill (and the other arm see it)?"""
    bad = list(report.meta.contaminated)
    base = report.summary.get(Arm.BASELINE)
    sessions = (base.executions if base else 0) + sum(1 for c in bad if c.mode == Arm.BASELINE)
    share = sum(1 for c in bad if c.mode == Arm.BASELINE) / sessions if sessions else 0.0
    names = [f"{c.task} {c.mode} run {c.run}: {c.reason}" for c in bad]
    if not bad:
        return ValidityCheck(
            check="baseline",
            status=CheckStatus.PASS,
            value=0.0,
            limit=limit,
            line="every session stayed in its arm",
        )
    return ValidityCheck(
        check="baseline",
        status=CheckStatus.FAIL if share > limit else CheckStatus.WARN,
        value=share,
        limit=limit,
        line=f"{len(bad)} session(s) saw or lacked the skill against their arm and were left out "
        f"({share:.0%} of the baseline)",
        items=names[:SHOWN],
    )
