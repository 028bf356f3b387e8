"""What a run's log and its final state say about the outcome, in words: each variant's figures, the
verdicts, where the report is, and how the run compares with the suite's previous run."""

from __future__ import annotations

from urllib.parse import quote

from flows.report.entries import ArtifactChange, RegressionVariant, night_outcome_of
from flows.report.schema import Report
from tasks.schema import VerdictLabel
from tasks.stats.figures import Verdict


def _num(value: float | None, fmt: str = ".2f") -> str:
    return "—" if value is None else format(value, fmt)


def figure_lines(report: Report) -> list[str]:
    """One line per variant: score with its interval, pass rate, errors, cost."""
    lines = []
    for name, s in report.summary.items():
        low, high = s.interval
        lines.append(
            f"{name}: score {_num(s.avg_composite_score)} (95% CI {_num(low)} to {_num(high)}, "
            f"{report.scale.name}) · pass {s.pass_shown} · errors {s.error_count}/{s.executions} · "
            f"${s.total_cost_usd:.4f}"
        )
    return lines


def uncertified(report: Report, verdict: Verdict) -> str:
    """ " (not certified)" beside a BETTER or WORSE verdict the report's certificate leaves unproven."""
    doubted = report.validity is not None and not report.validity.certified
    return (
        " (not certified)" if doubted and verdict.label in (VerdictLabel.BETTER, VerdictLabel.WORSE) else ""
    )


def headline(report: Report, verdict: Verdict) -> str:
    """The verdict as summary lines show it; a BETTER or WORSE the certificate leaves unproven loses
    its band (no USE beside "not certified")."""
    mark = uncertified(report, verdict)
    return f"{verdict.label}{mark}" if mark else verdict.headline()


def verdict_lines(report: Report) -> list[str]:
    """The verdict of each comparison, with its reason."""
    return [
        f"verdict: {c.treatment} vs {c.control}: {c.verdict.label}{uncertified(report, c.verdict)} — "
        f"{c.verdict.reason}"
        for c in report.comparisons
    ]


def named_verdict_lines(report: Report) -> list[str]:
    """Every verdict of the report, the mode's own included, one line each."""
    return [
        f"verdict: {n.name}: {n.verdict.label}{uncertified(report, n.verdict)}" for n in report.verdicts()
    ]


def validity_lines(report: Report) -> list[str]:
    """The certificate: its summary, then each check with its status and figure."""
    v = report.validity
    if v is None:
        return []
    return [f"validity: {v.line}", *(f"  {c.status} {c.check}: {c.line}" for c in v.checks)]


def verdict_summary(report: Report) -> str:
    """The verdicts in a few words (each: label, mean difference and interval)."""
    parts = []
    for c in report.comparisons:
        p = c.paired
        interval = (
            "" if p.ci_low is None or p.ci_high is None else f", 95% CI {p.ci_low:+.2f} to {p.ci_high:+.2f}"
        )
        mean = "" if p.mean is None else f" ({p.mean:+.2f}{interval})"
        parts.append(f"{c.treatment} vs {c.control}: {c.verdict.label}{uncertified(report, c.verdict)}{mean}")
    if not parts:  # a single variant: its score
        parts = [f"{n}: score {_num(s.avg_composite_score)}" for n, s in report.summary.items()]
    return "; ".join(parts)


def change_figures(v: RegressionVariant) -> str:
    """A variant against the previous run in figures: the means, the change and its interval."""
    p = v.paired
    change = "" if p.mean is None else f", {p.mean:+.2f}"
    interval = (
        "" if p.ci_low is None or p.ci_high is None else f", 95% CI {p.ci_low:+.2f} to {p.ci_high:+.2f}"
    )
    changes = "".join(
        f", {n} {what}" for n, what in ((v.cases_added, "new"), (v.cases_removed, "removed")) if n
    )
    return (
        f"mean {_num(v.mean_before)} → {_num(v.mean_after)}{change}{interval} over {v.cases} cases{changes}"
    )


def artifact_change_text(c: ArtifactChange) -> str:
    """How an artifact changed: its hashes before and after, and the size of the change."""
    before, after = (h[:12] if h else "none" for h in (c.before, c.after))
    if c.bytes_before is not None and c.bytes_after is not None:
        size = f"{c.bytes_before:,} → {c.bytes_after:,} bytes ({c.bytes_after - c.bytes_before:+,})"
    else:
        size = "its earlier size not recorded"
    return f"sha256 {before} → {after}, {size}"


def artifact_change_lines(report: Report) -> list[str]:
    """Each variant whose artifact is not the one the previous run measured: the first question
    when a line drops."""
    r = report.regression
    return [
        f"{name}'s artifact changed since the previous run: {artifact_change_text(c)}"
        for name, c in (r.artifact_changes if r else {}).items()
    ]


def world_change_lines(report: Report) -> list[str]:
    """What ran differently from the previous run besides the artifacts (its fingerprint): a drop
    beside one of these may be the world's doing, not the skill's."""
    r = report.regression
    return [f"changed since the previous run: {line}" for line in (r.world_changes + r.canaries if r else [])]


def control_lines(report: Report) -> list[str]:
    """Each variant run beside its same-night control: what the night found, and the rule."""
    r = report.regression
    return [
        f"same-night control of {name}: {c.outcome} ({c.rule})"
        for name, c in (r.controls if r else {}).items()
    ]


def night_outcome(report: Report) -> str | None:
    """A night in words: the skill regressed, the world changed, both, or neither. With a same-night
    control, as the control found; without one, only what the fingerprint and the artifacts tell
    apart: a changed world under unchanged artifacts is the world's, a drop of a changed artifact in
    an unchanged world the skill's; None when a changed artifact dropped in a changed world (only a
    control can tell those apart) and for a run with nothing to compare."""
    r = report.regression
    if r is None:
        return None
    if not r.controls:
        world = bool(r.world_changes or r.canaries)
        if world and r.regressed and r.artifact_changes:
            return None
        return night_outcome_of(bool(r.regressed) and not world, world)
    found = {c.outcome for c in r.controls.values()}
    skill = bool(found & {"the skill regressed", "both"})
    world = bool(found & {"the world changed", "both"}) or any(
        v.verdict.label in ("WORSE", "BETTER")
        for name, v in r.per_variant.items()
        if name not in r.artifact_changes
    )
    return night_outcome_of(skill, world)


def regression_lines(report: Report) -> list[str]:
    """Against the suite's previous run on the same model: each variant's verdict and figures, the
    artifacts that changed, then the outcome."""
    suite, r = report.meta.suite, report.regression
    if not suite:
        return []
    if r is None:
        return [f"suite {suite}: no earlier run on {report.meta.model}, so nothing to compare with yet"]
    lines = [
        f"suite {suite}: {name} against the previous run {r.previous}: {v.verdict.label} ({change_figures(v)})"
        for name, v in r.per_variant.items()
    ]
    return [
        *lines,
        *artifact_change_lines(report),
        *world_change_lines(report),
        *control_lines(report),
        regression_outcome(report),
    ]


def regression_outcome(report: Report) -> str:
    r = report.regression
    if r is None:
        return f"suite {report.meta.suite}: first run on {report.meta.model}"
    night = night_outcome(report)
    told = "same-night control" if r.controls else "no control ran: what ran and the artifacts tell it"
    if night is not None and (r.controls or night != "neither") and not r.regressed:
        return f"suite {report.meta.suite}: {night} ({told}), no regression of the artifact"
    if r.regressed:
        drops = "; ".join(f"{name}: {change_figures(r.per_variant[name])}" for name in r.regressed)
        world = (
            f"; what ran changed too ({len(r.world_changes)} part(s), listed above): the drop may be the "
            "world's doing, not the artifact's"
            if r.world_changes
            else ""
        )
        return (
            f"REGRESSION in {', '.join(r.regressed)} against the previous run {r.previous} of suite "
            f"{report.meta.suite} ({drops}){world}" + (f"; {night} ({told})" if night else "")
        )
    return f"suite {report.meta.suite}: no regression against the previous run {r.previous}"


def outcome_name(report: Report) -> str:
    """A finished run's outcome in a word or two, for its final state's name (what a runs list
    shows): the verdict ("Mixed" when comparisons disagree, "Scored" with one variant), and the
    failed calls when there were any."""
    labels = {str(n.verdict.label) for n in report.verdicts()}
    word = "Scored" if not labels else labels.pop().capitalize() if len(labels) == 1 else "Mixed"
    errors = sum(s.error_count for s in report.summary.values())
    return f"{word}, {errors} error{'s' if errors != 1 else ''}" if errors else word


def state_message(report: Report) -> str:
    """The flow run's final state message: the verdicts, and the regression outcome of a suite."""
    message = verdict_summary(report)
    return f"{message}; {regression_outcome(report)}" if report.meta.suite else message


def page_urls(report: Report, port: str) -> list[str]:
    """The run's page on the report server, and its suite's trend page."""
    base = f"http://127.0.0.1:{port}"
    urls = [f"{base}/run/{report.id}"]
    if report.meta.suite:
        urls.append(f"{base}/suite/{quote(report.meta.suite, safe='')}")
    return urls


MARKDOWN_SYNTAX = "\\`*_[]"  # what would turn a name into a link, code or emphasis


def md(value: object) -> str:
    """A name or other user text as one inert span of Markdown: on one line, Markdown's own syntax
    and a table cell's ``|`` escaped, and HTML's ``<``, ``>`` and ``&`` as entities (report.md is
    rendered where raw HTML runs). A case name must never open a section, a link or a script."""
    text = " ".join(str(value).split())
    for char in MARKDOWN_SYNTAX:
        text = text.replace(char, "\\" + char)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
