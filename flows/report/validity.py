"""The validity certificate of a report: can its verdict be believed?

One pure function over a finished report of any mode, plus what only the run knew (its error limit,
its graders tried on reference answers, its leakage lint). Each check is a line PASS, WARN or FAIL
with its figure; any FAIL leaves a BETTER or WORSE verdict "not certified", and ``--require-valid``
turns that into exit code 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from flows.report.entries import AgentRun, RunEntry, SampleRun
from flows.report.schema import (
    AgenticReport,
    CheckStatus,
    GraderCheck,
    Report,
    TriggerReport,
    Validity,
    ValidityCheck,
)
from tasks.schema import Arm, VerdictLabel
from tasks.stats.figures import Verdict
from tasks.stats.statistics import MIN_SETTLED_CASES

#: Items a line names at most (the rest are counted).
SHOWN = 10
DECIDED = (VerdictLabel.BETTER, VerdictLabel.WORSE)


def _named(items: Sequence[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _rate_line(check: str, what: tuple[str, str], rates: dict[str, float], limit: float) -> ValidityCheck:
    """The worst variant's share of runs against ``limit``: FAIL above it, WARN above 0. ``what``:
    the words for none, and for some (with ``{share}`` and ``{variant}``)."""
    variant, worst = max(rates.items(), key=lambda kv: kv[1]) if rates else ("", 0.0)
    status = CheckStatus.FAIL if worst > limit else CheckStatus.WARN if worst > 0 else CheckStatus.PASS
    text = what[0] if worst == 0 else what[1].format(share=f"{worst:.0%}", variant=variant)
    return ValidityCheck(
        check=check,
        status=status,
        value=worst,
        limit=limit,
        line=f"{text} (limit {limit:.0%})",
        items=[v for v, r in rates.items() if r > limit],
    )


@dataclass(frozen=True)
class Named:
    """A verdict of the report, its name as its summary line gives it, and the mean difference it
    rests on (on the improvement)."""

    name: str
    verdict: Verdict
    mean: float | None
    cases: int  # paired cases the verdict rests on


def verdicts(report: Report) -> list[Named]:
    """Every verdict of the report."""
    out = [
        Named(f"{c.treatment} vs {c.control}", c.verdict, c.paired.mean, c.paired.n)
        for c in report.comparisons
    ]
    if isinstance(report, TriggerReport) and report.triggers is not None:
        for comp in report.triggers.comparisons:
            for part, figures in comp.parts.items():
                for metric in (figures.recall, figures.false_fire):
                    scope = comp.skill or "all skills"
                    name = f"{comp.treatment} vs {comp.control}: {scope} {metric.metric} ({part})"
                    out.append(Named(name, metric.verdict, metric.comparison.mean, metric.comparison.n))
    return out


def power_line(named: Sequence[Named]) -> ValidityCheck | None:
    """The smallest effect each comparison could read as BETTER with 80% power (its MDE) against the
    effect asked for. Short of it, a verdict of no difference says nothing about that effect (WARN);
    a BETTER or WORSE found at a difference below the MDE was found with less than 80% power, and its
    size is likely inflated by the luck that made it significant (FAIL)."""
    if not named:
        return None
    lucky = [
        n
        for n in named
        if n.verdict.label in DECIDED
        and (n.verdict.mde is None or n.mean is None or abs(n.mean) < n.verdict.mde)
    ]
    if lucky:
        return _lucky(lucky)
    if few := [n for n in named if n.cases < MIN_SETTLED_CASES]:
        return _few(few)
    if short := [n for n in named if n.verdict.mde is None or n.verdict.mde > n.verdict.min_effect]:
        return _short(short)
    worst = max(n.verdict.mde for n in named if n.verdict.mde is not None)
    asked = named[0].verdict.min_effect
    return ValidityCheck(
        check="power",
        status=CheckStatus.PASS,
        value=worst,
        limit=asked,
        line=f"an effect of {asked:g} is detected with 80% power (smallest detectable {worst:.3g})",
    )


def _lucky(lucky: Sequence[Named]) -> ValidityCheck:
    n = lucky[0]
    mde = "unknown" if n.verdict.mde is None else f"{n.verdict.mde:.3g}"
    shown = "unknown" if n.mean is None else f"{abs(n.mean):.3g}"
    return ValidityCheck(
        check="power",
        status=CheckStatus.FAIL,
        value=n.verdict.mde,
        limit=n.verdict.min_effect,
        line=f"{n.name}: {n.verdict.label} at a difference of {shown}, below the smallest effect this "
        f"run detects with 80% power ({mde}): a lucky draw, its size likely inflated",
        items=[x.name for x in lucky],
    )


def _few(few: Sequence[Named]) -> ValidityCheck:
    n = few[0]
    return ValidityCheck(
        check="power",
        status=CheckStatus.WARN,
        value=float(n.cases),
        limit=float(MIN_SETTLED_CASES),
        line=f"{n.name}: {n.cases} paired case(s), fewer than the {MIN_SETTLED_CASES} any verdict needs",
        items=[x.name for x in few],
    )


def _short(short: Sequence[Named]) -> ValidityCheck:
    n = short[0]
    found = "cannot be computed" if n.verdict.mde is None else f"is {n.verdict.mde:.3g}"
    more = f" (about {n.verdict.cases_needed} cases would reach it)" if n.verdict.cases_needed else ""
    return ValidityCheck(
        check="power",
        status=CheckStatus.WARN,
        value=n.verdict.mde,
        limit=n.verdict.min_effect,
        line=f"{n.name}: the smallest effect detectable with 80% power {found}, above the "
        f"{n.verdict.min_effect:g} asked for{more}; no verdict here rests on a smaller difference",
        items=[x.name for x in short],
    )


def judge_line(report: Report) -> ValidityCheck | None:
    """The judge against the gold set (--judge-gold), when the run has a judge."""
    gold = report.judge_gold
    if gold is not None:
        alpha = gold.agreement.krippendorff_alpha_ordinal
        shown = "unknown" if alpha is None else f"{alpha:.2f}"
        return ValidityCheck(
            check="judge",
            status=CheckStatus.PASS if gold.reliable else CheckStatus.FAIL,
            value=alpha,
            limit=gold.min_alpha,
            line=f"the judge's agreement with the gold set is alpha {shown} (at least {gold.min_alpha:g} asked)",
        )
    if report.meta.judge_model and not isinstance(report, TriggerReport):
        return ValidityCheck(
            check="judge",
            status=CheckStatus.WARN,
            line="the judge was not checked against people's scores (--judge-gold): its agreement is unmeasured",
        )
    return None


def discrimination_line(report: Report) -> ValidityCheck | None:
    """Do the deterministic criteria (assertions, checks) tell the arms apart at all? One that passes
    in every run of every arm, or fails in every one, decides nothing."""
    if len(report.summary) < 2:
        return None
    outcomes: dict[str, dict[str, list[bool]]] = {}
    for case in report.results:
        for variant, entry in case.variants.items():
            for run in entry.runs or [entry]:
                for name, passed in _criteria(case.sample_id, run):
                    outcomes.setdefault(name, {}).setdefault(variant, []).append(passed)
    seen = {name: arms for name, arms in outcomes.items() if len(arms) == len(report.summary)}
    if not seen:
        return None
    still = sorted(
        name
        for name, arms in seen.items()
        if len({tuple(runs) for runs in arms.values()}) == 1
        or len({p for r in arms.values() for p in r}) == 1
    )
    telling = len(seen) - len(still)
    return ValidityCheck(
        check="discrimination",
        status=CheckStatus.PASS if telling else CheckStatus.WARN,
        value=float(telling),
        line=f"{telling} of {len(seen)} criteria came out differently between the arms"
        + ("" if telling else ": the scores differ by the judge alone, or not at all"),
        items=still[:SHOWN],
    )


def _criteria(case: str, run: RunEntry) -> list[tuple[str, bool]]:
    """The deterministic criteria of one run: a sample's assertions, a session's checks."""
    if isinstance(run, SampleRun):
        details = run.assertions.details if run.assertions else []
        return [(f"{case}#{i + 1} ({d.type})", d.passed) for i, d in enumerate(details) if not d.error]
    if isinstance(run, AgentRun):
        return [
            (f"{case}: {d.get('check')}", d["passed"])
            for d in run.check_details or []
            if isinstance(d.get("passed"), bool)
        ]
    return []


def baseline_line(report: AgenticReport, limit: float) -> ValidityCheck:
    """Agentic runs: did the baseline arm stay blind to the skill (and the other arm see it)?"""
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


def graders_line(report: Report, findings: Sequence[GraderCheck]) -> ValidityCheck | None:
    if isinstance(report, TriggerReport):
        return None
    if not findings:
        return ValidityCheck(
            check="graders",
            status=CheckStatus.WARN,
            line="no case carries a reference answer: the graders were not tried on a known answer",
        )
    broken = [f"{f.grader}: {f.reason}" for f in findings if f.status == "broken"]
    untested = [f"{f.grader}: {f.reason}" for f in findings if f.status == "untested"]
    if broken:
        return ValidityCheck(
            check="graders",
            status=CheckStatus.FAIL,
            value=float(len(broken)),
            line=f"{len(broken)} of the {len(findings)} graders tried on reference answers "
            f"{'is' if len(broken) == 1 else 'are'} broken, left out of the run: {_named(broken)}",
            items=broken,
        )
    return ValidityCheck(
        check="graders",
        status=CheckStatus.WARN if untested else CheckStatus.PASS,
        value=0.0,
        line=f"the {len(findings)} graders tried on reference answers pass them and fail their violations"
        if not untested
        else f"{len(untested)} of the {len(findings)} graders tried on reference answers "
        f"{'is' if len(untested) == 1 else 'are'} untested: {_named(untested)}",
        items=untested,
    )


def leakage_line(leaks: Sequence[str]) -> ValidityCheck:
    if not leaks:
        return ValidityCheck(
            check="leakage", status=CheckStatus.PASS, line="no case repeats the artifact under test"
        )
    return ValidityCheck(
        check="leakage",
        status=CheckStatus.WARN,
        value=float(len(leaks)),
        line=f"{len(leaks)} case(s) repeat the artifact under test: they test recall, not use",
        items=list(leaks),
    )


def listing_line(report: Report) -> ValidityCheck | None:
    """Trigger mode: skills with queries of their own whose description the listing cut or dropped
    in most of a variant's sessions (where it listed them): their rates measure the listing's budget,
    not the description. None when no session's listing could be read."""
    if not isinstance(report, TriggerReport) or report.triggers is None:
        return None
    summaries = [s for s in report.triggers.summaries if s.listing is not None]
    if not summaries:
        return None
    queried = {(s.variant, k.skill) for s in summaries for k in s.per_skill if k.should_fire}
    hidden = [
        (s.variant, x)
        for s in summaries
        for x in s.listing.skills  # type: ignore[union-attr]
        if (s.variant, x.skill) in queried and x.truncated + x.dropped > (x.sessions - x.absent) / 2
    ]
    if not hidden:
        return ValidityCheck(
            check="listing",
            status=CheckStatus.PASS,
            line="every skill with queries was listed with its description",
        )
    skills = {x.skill for _, x in hidden}
    return ValidityCheck(
        check="listing",
        status=CheckStatus.WARN,
        value=float(len(skills)),
        line=f"{len(skills)} skill(s) with queries listed without their whole description in most sessions "
        f"(of {len({v for v, _ in hidden})} variant(s)): their rates measure the listing's budget, not the "
        "description",
        items=[
            f"{v}: {x.skill} (cut {x.truncated}, dropped {x.dropped} of {x.sessions - x.absent})"
            for v, x in hidden
        ],
    )


ERRORS = ("no run failed", "{share} of {variant}'s runs failed")
GRADING_ERRORS = ("no grading error", "{share} of {variant}'s runs could not be graded")
UNCOUNTED = (
    "every session counted",
    "{share} of {variant}'s sessions did not count (an error, or a skill missing from the listing)",
)


def error_lines(report: Report, limit: float) -> list[ValidityCheck]:
    """The failed share of each variant's runs (a trigger session that did not count), and the share
    whose grading failed, each against ``limit`` (--max-error-rate, as the verdict's cap)."""
    if isinstance(report, TriggerReport):
        summaries = report.triggers.summaries if report.triggers else []
        rates = {s.variant: (s.sessions - s.counted) / s.sessions for s in summaries if s.sessions}
        return [_rate_line("errors", UNCOUNTED, rates, limit)]
    return [
        _rate_line("errors", ERRORS, {v: s.error_rate for v, s in report.summary.items()}, limit),
        _rate_line(
            "grading errors", GRADING_ERRORS, {v: s.ungraded_rate for v, s in report.summary.items()}, limit
        ),
    ]


def certify(
    report: Report,
    max_error_rate: float,
    graders: Sequence[GraderCheck] = (),
    leaks: Sequence[str] = (),
) -> Validity:
    """The certificate of ``report`` (its figures final); ``graders``: its graders tried on the
    reference answers, ``leaks``: the leakage lint's findings."""
    named = verdicts(report)
    lines: Iterable[ValidityCheck | None] = [
        graders_line(report, graders),
        *error_lines(report, max_error_rate),
        power_line(named),
        judge_line(report),
        discrimination_line(report),
        baseline_line(report, max_error_rate) if isinstance(report, AgenticReport) else None,
        listing_line(report),
        leakage_line(leaks),
    ]
    checks = [line for line in lines if line is not None]
    failed = [c.check for c in checks if c.status == CheckStatus.FAIL]
    warned = [c.check for c in checks if c.status == CheckStatus.WARN]
    decided = [f"{n.name}: {n.verdict.label}" for n in named if n.verdict.label in DECIDED]
    if failed:
        summary = f"not certified: {', '.join(failed)} failed"
    else:
        summary = f"certified: {len(checks) - len(warned)} checks pass" + (
            f", {len(warned)} warn ({', '.join(warned)})" if warned else ""
        )
    return Validity(
        certified=not failed,
        line=summary,
        checks=checks,
        not_certified=decided if failed else [],
        graders=list(graders),
    )


def _worst(v: Validity) -> CheckStatus:
    if not v.certified:
        return CheckStatus.FAIL
    return CheckStatus.WARN if any(c.status == CheckStatus.WARN for c in v.checks) else CheckStatus.PASS


def combined(parts: dict[str, Validity | None]) -> Validity:
    """A cross-agent run's certificate: one line per agent, its own certificate's; certified when
    every agent's report is."""
    checks = [
        ValidityCheck(check=name, status=CheckStatus.FAIL, line="no certificate in its report")
        if v is None
        else ValidityCheck(check=name, status=_worst(v), line=v.line)
        for name, v in parts.items()
    ]
    failed = [c.check for c in checks if c.status == CheckStatus.FAIL]
    return Validity(
        certified=not failed,
        line=f"not certified: {', '.join(failed)}" if failed else "certified on every agent",
        checks=checks,
        not_certified=[n for name in failed if (v := parts[name]) for n in v.not_certified],
    )


def require_valid_failures(report: Report) -> list[str]:
    """--require-valid: why the report fails the gate (empty when certified)."""
    v = report.validity
    if v is None:
        return ["no validity certificate in the report"]
    if v.certified:
        return []
    return [f"not certified: {c.check}: {c.line}" for c in v.checks if c.status == CheckStatus.FAIL]
