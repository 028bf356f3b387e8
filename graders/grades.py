"""What grading an agent session makes, as models: the sandbox checks, the transcript analysis, the
judge's grade. Their JSON names are the Python names (checks.json, behavior.json and grade.json are
the seed's files), written with ``exclude_unset`` so a part keeps only the keys it was given; the
report embeds them as they are (``flows/report/entries.py``)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Part(BaseModel):
    """A grading part: unknown keys are refused, so the report's schema is complete."""

    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, object]:
        """The JSON-ready dict of the keys that were set (a grade file as the seed writes it)."""
        return self.model_dump(mode="json", exclude_unset=True)


class CheckDetail(Part):
    """One sandbox check (or plugin-eval grader) and its verdict."""

    check: str
    """what was checked: kind and target"""
    passed: bool | None
    """passed, failed, or None: skipped or undecided"""
    reason: str = ""
    """why"""
    error: bool | None = None
    """the check could not decide (it raised or hung): a grading error"""
    indicator: bool | None = None
    """a plugin-eval grader that only indicates (with_only): not scored"""


class GraderResult(Part):
    """One grader of a Claude Code plugin eval case, as the official runner reports it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """the grader's name"""
    type: str
    """its type (regex, tool_used, llm, ...)"""
    passed: bool
    """its verdict"""
    weight: float
    """its weight in the run's score"""
    explanation: str
    """why"""
    with_only: bool = False
    """an indicator of the plugin's arm: reported, not scored"""
    votes: tuple[bool | None, ...] = ()
    """a judged grader's votes"""
    error: bool = False
    """the grader could not decide (a grading error): no pass, no model failure"""

    @property
    def scored(self) -> bool:
        return not self.with_only


class PluginEvalPart(Part):
    """A plugin eval case's grading of one run."""

    score: float | None
    """the weighted share of scored graders passed; None while judged graders are pending"""
    graders: list[GraderResult]
    """every grader's result"""
    pending: list[str] = []
    """judged graders not yet asked"""


class CheckResults(Part):
    """checks.json: each check kind's verdict, the details, and how they ran."""

    file_exists: bool | None = None
    """every file_exists check passed"""
    file_contains: dict[str, bool] | None = None
    """text -> found"""
    syntax_valid: bool | None = None
    """every syntax_valid check passed"""
    runs_without_error: bool | None = None
    """every runs_without_error check passed"""
    all_passed: bool = False
    """no check failed"""
    details: list[CheckDetail] = []
    """each check"""
    isolation: str = "none"
    """how the checks' commands ran: bubblewrap, docker, or none (nothing is run)"""
    warnings: list[str] | None = None
    """checks skipped, with why"""
    grading_error: str | None = None
    """the checks that could not decide: the session is ungraded"""
    plugin_eval: PluginEvalPart | None = None
    """a plugin eval case: its graders' verdicts"""

    def totals(self) -> CheckResults:
        """These results without the details (the report keeps those apart, as ``check_details``)."""
        return CheckResults.model_validate(self.model_dump(exclude_unset=True, exclude={"details"}))


class Behavior(Part):
    """behavior.json: what the transcript shows the agent did."""

    tool_calls: dict[str, int] = {}
    """calls per tool"""
    total_tool_calls: int = 0
    """tool calls in all"""
    turns: int | None = None
    """turns the session took"""
    thrashing_detected: bool = False
    """the same call repeated three times in a row"""
    longest_repeat: int = 0
    """the longest run of one repeated call"""
    errors_encountered: int = 0
    """tool results that were errors"""
    errors_recovered: int = 0
    """errors followed by a successful call of the same tool on the same target"""
    max_turns_hit: bool = False
    """the session ended at its turn limit"""
    permission_denials: int = 0
    """tool calls the CLI refused"""
    questions_asked: int = 0
    """questions the agent put to its simulated user (a case with a user)"""
    user_answers: int = 0
    """the simulated user's answers"""
    user_calls: int = 0
    """calls of the model playing the user (a scripted user makes none)"""
    user_cost_usd: float = 0.0
    """what the model playing the user cost, apart from the agent's session"""
    permissions_refused: int = 0
    """tool calls the case's permission policy (or its user) refused"""
    skill_invoked: bool | None = None
    """the skill under test was invoked"""
    skills_invoked: list[str] = []
    """every skill invoked, in order"""
    api_errors: int = 0
    """errors from the model API"""


class Criterion(Part):
    """One of the four criteria of the judge's grade."""

    score: float
    """0-100"""
    justification: str = ""
    """the judge's justification"""


class ExpectationResult(Part):
    """One skill-creator expectation as the judge graded it (grading.json's entry)."""

    text: str
    """the expectation, as the eval states it"""
    passed: bool
    """the judge found clear evidence that it holds"""
    evidence: str = ""
    """what the judge quoted or found"""


class ExpectationSummary(Part):
    """grading.json's summary of a session's expectations."""

    passed: int
    """expectations that passed"""
    failed: int
    """expectations that failed"""
    total: int
    """expectations in all"""
    pass_rate: float
    """passed / total; the session's score is 100 x this"""


#: The four criteria and their weights in the weighted total (the seed's 40/25/20/15).
WEIGHTS = {"correctness": 0.40, "completeness": 0.25, "quality": 0.20, "efficiency": 0.15}


class GradeStatus(StrEnum):
    """How one agentic session was graded."""

    GRADED = "graded"
    UNGRADED = "ungraded"  # the judge (or a check) could not decide: excluded from scores, counted
    CONTAMINATED = "contaminated"  # the arm saw (or lacked) the skill: excluded, with the reason
    FAILED = "failed"  # the session itself failed: an error, scored as the seed does


class SessionGrade(Part):
    """grade.json: the judgement of one session, or why there is none."""

    status: GradeStatus = GradeStatus.GRADED
    """graded, ungraded, contaminated or failed"""
    weighted_total: float | None = None
    """the score, 0-100: the four criteria weighted in code, or 100 x the share passed"""
    deterministic_checks_passed: bool | None = None
    """every sandbox check passed"""
    correctness: Criterion | None = None
    """does it solve the task correctly"""
    completeness: Criterion | None = None
    """are all requirements met"""
    quality: Criterion | None = None
    """code quality, best practices, clarity"""
    efficiency: Criterion | None = None
    """a direct solution, tokens well used"""
    summary: str | None = None
    """the judge's summary"""
    reason: str | None = None
    """why there is no judgement"""
    error: str | None = None
    """the judge's last error"""
    raw: str | None = None
    """the judge's last reply, when it could not be parsed"""
    expectations: list[ExpectationResult] | None = None
    """a skill-creator eval: each expectation with its verdict and evidence"""
    expectation_summary: ExpectationSummary | None = None
    """a skill-creator eval: passed, failed, total and pass rate"""
    plugin_eval_score: float | None = None
    """a plugin eval case: the weighted share of its graders passed"""

    def criteria(self) -> dict[str, float]:
        """The four criteria's scores, of those the judge gave."""
        return {name: c.score for name in WEIGHTS if (c := getattr(self, name)) is not None}
