"""The validity certificate of a report: can its verdict be believed?

One pure function over a finished report of any mode, plus what only the run knew (its error limit,
its graders tried on reference answers, its leakage lint). Each check is a line PASS, WARN or FAIL
with its figure; any FAIL leaves a BETTER or WORSE verdict "not certified", and ``--require-valid``
turns that into exit code 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from flows.report.entries import AgentRun, RunEntry, SampleRun
from flows.report.schema import CheckStatus, GraderCheck, Named, Report, Validity, ValidityCheck
from tasks.schema import VerdictLabel
from tasks.stats.statistics import MIN_SETTLED_CASES

#: Items a line names at most (the rest are counted).
SHOWN = 10
DECIDED = (VerdictLabel.BETTER, VerdictLabel.WORSE)


def _named(items: Sequence[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def rate_line(check: str, what: tuple[str, str], rates: dict[str, float], limit: float) -> ValidityCheck:
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
    line = (
        f"{n.name}: {n.verdict.label} at a difference of {shown}, below the smallest effect this "
        f"run detects with 80% power ({mde}): a lucky draw, its size likely inflated"
    )
    return _against_mde(CheckStatus.FAIL, lucky, line)


def _against_mde(status: CheckStatus, named: Sequence[Named], line: str) -> ValidityCheck:
    """A power check told by the first named comparison's detectable effect against the one asked for."""
    n = named[0]
    return ValidityCheck(
        check="power",
        status=status,
        value=n.verdict.mde,
        limit=n.verdict.min_effect,
        line=line,
        items=[x.name for x in named],
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
    line = (
        f"{n.name}: the smallest effect detectable with 80% power {found}, above the "
        f"{n.verdict.min_effect:g} asked for{more}; no verdict here rests on a smaller difference"
    )
    return _against_mde(CheckStatus.WARN, short, line)


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
    if report.meta.judge_model and report.graded:
        return ValidityCheck(
            check="judge",
            status=CheckStatus.WARN,
            line="the judge was not checked against people's scores (--judge-gold): its agreement is unmeasured",
        )
    return None


def canary_line(report: Report) -> ValidityCheck | None:
    """The gold items against the suite's previous run (--judge-gold with --suite): a judged score
    that moved means the grading changed under the artifact, and no verdict of tonight is certified."""
    gold, regression = report.judge_gold, report.regression
    if gold is None or regression is None or not gold.scores:
        return None
    moved = regression.canaries
    return ValidityCheck(
        check="canaries",
        status=CheckStatus.FAIL if moved else CheckStatus.PASS,
        value=float(len(moved)),
        limit=0.0,
        line=(
            f"{len(moved)} of {len(gold.scores)} gold item(s) were judged differently from the previous run: "
            "the grading changed, not only the artifact"
            if moved
            else f"the {len(gold.scores)} gold item(s) were judged as on the previous run"
        ),
        items=moved,
    )


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
        return [(f"{case}: {d.check}", d.passed) for d in run.check_details or [] if d.passed is not None]
    return []


def graders_line(report: Report, findings: Sequence[GraderCheck]) -> ValidityCheck | None:
    if not report.graded:
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


ERRORS = ("no run failed", "{share} of {variant}'s runs failed")
GRADING_ERRORS = ("no grading error", "{share} of {variant}'s runs could not be graded")


def error_lines(report: Report, limit: float) -> list[ValidityCheck]:
    """The failed share of each variant's runs, and the share whose grading failed, each against
    ``limit`` (--max-error-rate, as the verdict's cap); a mode may count its own."""
    own = report.error_checks(limit)
    if own is not None:
        return own
    return [
        rate_line("errors", ERRORS, {v: s.error_rate for v, s in report.summary.items()}, limit),
        rate_line(
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
    named = report.verdicts()
    lines: Iterable[ValidityCheck | None] = [
        graders_line(report, graders),
        *error_lines(report, max_error_rate),
        power_line(named),
        judge_line(report),
        canary_line(report),
        discrimination_line(report),
        *report.own_checks(max_error_rate),
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
