"""The report: a typed model per mode (sample, agentic, trigger) on one common base, version 3.

Files keep the layout of the original tool (camelCase keys, ``meta``/``summary``/``results``/
``analysis``): Python names are snake_case and each field's JSON name is its alias. The figures
computed in ``tasks/stats`` are models defined there (``tasks/stats/figures.py``); each mode's
report builder makes its own run entries (``SampleRun``, ``AgentRun``, ``TriggerRun``) and meta, and
``flows.report.build.assemble`` puts them and the figures together by keyword, as the mode's report
class. Every reader (console, CI outputs, regression, store, server, templates) works on the models;
``load_report`` reads any mode's file as its class (or insists on one), migrating earlier versions.

Its parts live beside it: the results (``entries.py``), the diagnosis (``diagnosis_parts.py``);
``python -m flows.report.json_schema`` writes ``flows/report/report.schema.json``; a test checks that
the file in the repository is current and that every report the tests write validates against it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args, overload

from markupsafe import Markup
from pydantic import Field, TypeAdapter, ValidationError

from executors.parsing import JsonObject
from flows.report.diagnosis_parts import Ablation, Diagnosis, HumanAgreement, JudgeBias
from flows.report.entries import (
    CaseResult,
    Regression,
)
from flows.report.modes import Mode, modes, resolved
from flows.report.written import as_written
from tasks.schema import NotRun, Scale
from tasks.stats.figures import (
    Analysis,
    Comparison,
    JudgeGold,
    JudgeSummary,
    PairwiseSummary,
    VariantSummary,
    Verdict,
)
from tasks.stats.models import Model

#: 3: the JSON of version 2; its schema tells the modes apart (each mode's run entries and meta are
#: their own models), so a version 2 file is read as it is.
REPORT_VERSION = 3
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")
RP = TypeVar("RP", bound="Report")

# ---------------------------------------------------------------- the report


class Fingerprint(Model):
    """What actually ran, as the answers and sessions reported it (not as asked for): two runs of a
    suite compare fingerprints, so a changed CLI, model, judge, tool grant, listing or environment is
    named beside the verdict. Lists are sorted; digests are the first 12 hex digits of a SHA-256."""

    skillab: str
    """skillab's version"""
    executor: str
    """the executor or agent CLI asked for"""
    agent_cli: str | None = None
    """the agent CLI and its version as its sessions reported it"""
    models: list[str] = Field(default_factory=list)
    """the model ids the responses (or sessions) under test reported"""
    judge_models: list[str] = Field(default_factory=list)
    """the model ids the judge's responses reported"""
    tools: dict[str, str] = Field(default_factory=dict)
    """variant -> digest of the tools the agent CLI offered its sessions (their grants included)"""
    listing: dict[str, str] = Field(default_factory=dict)
    """variant -> digest of the skills the agent CLI listed to its sessions"""
    environment: str | None = None
    """digest of the environment snapshot the sessions ran in (--environment)"""
    sandbox: str | None = None
    """the OS sandbox and its version, and the work pool whose containers ran the sessions"""
    image: str | None = None
    """the fleet's container image the sessions ran in: its tag and its root file system's image id"""


class Meta(Model):
    """What was run, on what, when, with which inputs (their hashes), and what it cost: what every
    mode records; each mode's subclass adds its own."""

    variants: list[str]
    """variant names (labels when blind)"""
    control: str
    """the variant others are compared with"""
    model: str
    """the model under test"""
    executor: str
    """the executor or agent CLI"""
    judge_model: str | None
    """judge ids (executor:model)"""
    sample_count: int = Field(description="cases")
    task_count: int = Field(description="executions (cases x variants x runs)")
    total_cost_usd: float
    """cost of the executions"""
    timestamp: str = Field(description="start, ISO 8601 UTC")
    cli_version: str
    """skillab's version"""
    seed: int
    """seed of shuffling, the bootstrap and the model"""
    repeat: int = 1
    """runs per case"""
    suite: str | None = None
    """suite name (regression history)"""
    blind: bool = False
    """variants are labelled Variant A/B/..."""
    judge_cost_usd: float | None = None
    """cost of the judge calls"""
    skill_hashes: dict[str, str | None] | None = None
    """variant -> SHA-256 of its artifact"""
    prefect_flow_run: str | None = None
    """the Prefect UI's page of the flow run that made this report, when a UI was known"""
    calls: int | None = Field(
        default=None, description="model calls made, or agent sessions started (cache hits excluded)"
    )
    cache_hits: int | None = None
    """units taken from the cache"""
    warm_up_calls: int | None = None
    """calls that put a variant's artifact in the provider's prompt cache before the fan-out"""
    batched_calls: int | None = None
    """calls answered through a provider's batch API (--batch)"""
    not_run: list[NotRun] = Field(default_factory=list, description="units a budget stopped")
    agent_cli_version: str | None = None
    """the agent CLI and its version as its sessions reported it (e.g. claude 2.1.330)"""
    notices: list[str] = Field(default_factory=list)
    """what the user was told before the run"""
    fingerprint: Fingerprint | None = None
    """what actually ran, as the answers reported it: compared with the previous run of the suite"""

    # What a mode's meta may add to the shared readers (regression, console), None where it records
    # nothing of the kind.

    def artifact_sizes(self) -> dict[str, int | None] | None:
        """variant -> its artifact's size in bytes, where the mode records it."""
        return None

    def caching_line(self) -> str | None:
        """What prompt caching saved, in one line."""
        return None

    def reused_line(self) -> str | None:
        """The sessions taken from earlier runs instead of run again, in words."""
        return None

    def sandbox_line(self) -> str | None:
        """The OS sandbox the units ran in, its version and work pool, for the fingerprint."""
        return None

    def environment_digest(self) -> str | None:
        """The SHA-256 of the environment snapshot the units ran in, for the fingerprint."""
        return None


class SessionMeta(Meta):
    """A run of agent sessions (agentic and trigger mode): their limits and their OS sandbox."""

    max_turns: int | None = None
    """turn limit per session"""
    isolation: str | None = None
    """OS sandbox of the agent sessions and task checks: bubblewrap, or none (--no-os-sandbox)"""
    sandbox_version: str | None = None
    """the sandbox's version (e.g. bubblewrap 0.8.0)"""
    network: str | None = None
    """what the agent sessions could reach: the model endpoint only, or the host's network"""
    fleet_pool: str | None = None
    """the Prefect Docker work pool whose containers ran the agent sessions (--fleet-pool); None: here"""
    plugin: str | None = None
    """the artifact is a whole plugin: what it holds and whether its MCP servers ran"""

    def sandbox_line(self) -> str | None:
        parts = [
            self.sandbox_version or self.isolation,
            f"pool {self.fleet_pool}" if self.fleet_pool else None,
        ]
        return " in ".join(p for p in parts if p) or None


# ---------------------------------------------------------------- can the verdict be believed?


class CheckStatus(StrEnum):
    """One line of the validity certificate."""

    PASS = "PASS"
    WARN = "WARN"  # worth a reviewer's look; the verdict stands
    FAIL = "FAIL"  # a BETTER or WORSE verdict is not certified


class ValidityCheck(Model):
    """One line of the certificate: what was checked, how it came out, with its figure."""

    check: str = Field(
        description="graders, errors, grading errors, power, judge, canaries, discrimination, baseline, listing "
        "or leakage"
    )
    status: CheckStatus = Field(description="PASS, WARN or FAIL")
    value: float | None = Field(default=None, description="the figure checked")
    limit: float | None = Field(default=None, description="the figure's limit")
    line: str = Field(description="the finding in one sentence, with its figure")
    items: list[str] = Field(default_factory=list, description="the graders, cases or comparisons concerned")


class GraderCheck(Model):
    """One grader of one case, tried on the case's reference answer and its mutants before the run."""

    grader: str = Field(description="case#N (type)")
    status: Literal["ok", "broken", "untested"] = Field(
        description="ok; broken: fails the reference or passes its violation (its results are left out); "
        "untested: passes an empty output and no violation could be derived"
    )
    reason: str = Field(description="why, in one sentence")


class Validity(Model):
    """Can the verdict be believed? The graders, the errors, the power, the judge and the design,
    each a PASS, WARN or FAIL line; any FAIL leaves a BETTER or WORSE verdict not certified."""

    certified: bool = Field(description="no line FAILs")
    line: str = Field(description="the certificate in one sentence")
    checks: list[ValidityCheck] = Field(description="one line per check")
    not_certified: list[str] = Field(
        default_factory=list, description="the BETTER or WORSE verdicts a FAIL leaves not certified"
    )
    graders: list[GraderCheck] = Field(
        default_factory=list, description="each grader tried on the reference answers (empty without any)"
    )


@dataclass(frozen=True)
class Named:
    """A verdict of a report, its name as its summary line gives it, and the mean difference it
    rests on (on the improvement)."""

    name: str
    verdict: Verdict
    mean: float | None
    cases: int  # paired cases the verdict rests on


@dataclass(frozen=True)
class JunitCase:
    """One JUnit test case: its name, how long it took, and why it failed (None: it passed)."""

    name: str
    seconds: float | None
    failure: str | None
    skipped: str | None = None  # not a failure, and not a pass: why (a gate not asked for)


class Report(Model):
    """A benchmark run: what ran, the figures, every case's results, and the analysis."""

    version: int = Field(REPORT_VERSION, description="report format version; older files are migrated")
    id: str = Field(description="run id; also the file name")
    mode: str
    """the mode that ran (each mode's report class holds its one value)"""
    meta: Meta
    """what ran, on what, when"""
    summary: dict[str, VariantSummary] = Field(default_factory=dict)
    """variant -> figures"""
    comparisons: list[Comparison] = Field(default_factory=list)
    """each treatment against the control"""
    multiple_comparisons: str | None = None
    """holm, when several comparisons were adjusted"""
    judge: JudgeSummary | None = None
    """per-judge figures"""
    pairwise: list[PairwiseSummary] | None = None
    """--pairwise results"""
    scale: Scale
    """the score scale"""
    guide: dict[str, str] | None = Field(default=None, description="plain-language notes for readers")
    results: list[CaseResult[Any]] = Field(default_factory=list)
    """every case with each variant's result"""
    analysis: Analysis = Field(default_factory=Analysis)
    """insights and suggestions"""
    regression: Regression | None = None
    """against the suite's previous run"""
    blind_mapping: dict[str, str] | None = None
    """label -> variant, for the reveal"""
    human_agreement: HumanAgreement | None = Field(
        default=None, description="the judge against the report server's ratings"
    )
    judge_gold: JudgeGold | None = Field(
        default=None, description="--judge-gold: the judge checked before the run"
    )
    judge_bias: JudgeBias | None = Field(default=None, description="judge bias probes")
    diagnosis: Diagnosis | None = Field(default=None, description="failing cases grouped, with suggestions")
    ablation: Ablation | None = Field(default=None, description="--ablate: each section's contribution")
    validity: Validity | None = Field(
        default=None, description="can the verdict be believed: the certificate"
    )

    def dump(self) -> JsonObject:
        """The JSON-ready dict, keeping the file's layout (fields never set are left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def variant_name(self, label: str) -> str:
        """The real variant behind a label (a blind label is resolved)."""
        return (self.blind_mapping or {}).get(label, label)

    def case_score(self, case: CaseResult[Any], label: str) -> float | None:
        """A case's score under a variant, as nights compare them: its composite (the mean over runs)."""
        score = case.variants[label].composite_score
        return None if score is None else float(score)

    def all_cases(self) -> list[CaseResult[Any]]:
        """Every case with results, the report's other lists of them included."""
        return list(self.results)

    # ------------------------------------------------------------ what its mode makes of it
    # A mode's report class overrides these; a hook that returns None leaves the reader's own way.

    unit: ClassVar[str] = "session"
    """what the mode runs, in the singular: call, session"""
    unit_verb: ClassVar[str] = "started"
    """what a run does to one: made, started"""
    caches: ClassVar[bool] = True
    """a re-run takes the finished units from the cache"""
    graded: ClassVar[bool] = True
    """outputs are graded (graders tried on reference answers, a judge that scores)"""
    plannable: ClassVar[bool] = False
    """a run can be the pilot of ``skillab plan``"""
    judged: ClassVar[str] = "judge layer"
    """what the judge's score is, in words (the report server's agreement figures)"""

    @classmethod
    def migrated(cls, data: JsonObject, version: int) -> JsonObject:
        """A decoded report of this mode and an earlier ``version``, in the current shape."""
        return data

    def verdicts(self) -> list[Named]:
        """Every verdict of the report."""
        return [
            Named(f"{c.treatment} vs {c.control}", c.verdict, c.paired.mean, c.paired.n)
            for c in self.comparisons
        ]

    def error_checks(self, limit: float) -> list[ValidityCheck] | None:
        """The certificate's error lines; None: the shared ones (failed and ungraded runs)."""
        return None

    def own_checks(self, limit: float) -> list[ValidityCheck]:
        """The certificate's lines only this mode has."""
        return []

    def idle(self) -> dict[str, str] | None:
        """variant -> why nothing of it was measured; None: the shared rule (every execution failed)."""
        return None

    def charts(self) -> dict[str, Markup] | None:
        """The report page's charts; None: the shared score charts."""
        return None

    def junit(self, threshold: float) -> list[tuple[str, list[JunitCase]]] | None:
        """JUnit test suites (name, cases); None: one per variant, a case per case of the report."""
        return None

    def summary_parts(self) -> list[str]:
        """Markdown lines of the mode's own in a CI summary (GitHub's), after the verdicts."""
        return []


@functools.cache
def _adapter(classes: tuple[type[Report], ...]) -> TypeAdapter[Report]:
    union: Any = classes[0]
    for cls in classes[1:]:
        union = union | cls
    return TypeAdapter(Annotated[union, Field(discriminator="mode")])


def report_classes() -> tuple[type[Report], ...]:
    """Every mode's report class, in the registry's order."""
    return _classes(modes())


@functools.cache
def _classes(every: tuple[Mode, ...]) -> tuple[type[Report], ...]:
    """The classes the modes name, imported and checked once per registry (every report read asks)."""
    found = tuple(resolved(m.report) for m in every)
    for mode, cls in zip(every, found, strict=True):
        if not (isinstance(cls, type) and issubclass(cls, Report) and mode_of(cls) == mode.name):
            raise TypeError(f"mode {mode.name}: {mode.report} is not a Report of mode {mode.name!r}")
    return found


def reports_adapter() -> TypeAdapter[Report]:
    """Any mode's report, told apart by its ``mode`` (the union of the registry's report classes)."""
    return _adapter(report_classes())


def migrate(data: JsonObject) -> JsonObject:
    """Bring a report of an earlier version to the current shape (its mode does what its files need;
    version 2 is read as it is). A part of another shape is left for the validation to name; a
    version newer than this one is refused."""
    version = data.get("version", 1)
    if not isinstance(version, int) or not 1 <= version <= REPORT_VERSION:
        raise ValueError(f"report version {version!r}: this skillab reads versions 1 to {REPORT_VERSION}")
    kind = next((c for c in report_classes() if mode_of(c) == data.get("mode")), None)
    if version < REPORT_VERSION and kind is not None:
        data = kind.migrated({**data}, version)
    return {**data, "version": REPORT_VERSION}


def parse_report(data: Any) -> Report:
    """A report from decoded JSON, as its mode's class, migrated from earlier versions; ValueError
    (with the first problem, where it is) when it is not one."""
    if not isinstance(data, dict) or "id" not in data or "meta" not in data:
        raise ValueError("not a skillab report")
    try:
        return reports_adapter().validate_python(migrate(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the report"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ValueError(f"not a valid report: {where}: {first['msg']}{more}") from None


@overload
def load_report(path: Path) -> Report: ...
@overload
def load_report(path: Path, kind: type[RP]) -> RP: ...
def load_report(path: Path, kind: type[Report] = Report) -> Report:
    """Read a report file (``kind``: the mode's class it must be); ValueError (with the reason) when
    it is unreadable, not a report, or of another mode."""
    kept = as_written(path)
    report = kept if isinstance(kept, Report) else None
    if report is None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{path}: unreadable: {exc}") from exc
        try:
            report = parse_report(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if not isinstance(report, kind):
        raise ValueError(f"{path}: {spelled(report.mode)} report, not {spelled(mode_of(kind))} one")
    return report


def mode_of(kind: type[Report]) -> str:
    """The mode a mode's report class is for (its ``mode`` field's one value)."""
    (mode,) = get_args(kind.model_fields["mode"].annotation)
    return str(mode)


def spelled(mode: str) -> str:
    """ "a sample", "an agentic"."""
    return ("an " if mode[0] in "aeiou" else "a ") + mode
