""" "Why did it score that way?" in text: the judge against humans and the gold file, the judge's
bias probes, the failure diagnosis and the section ablation, as lines for the console and as a
markdown section (report.md, the GitHub summary)."""

from __future__ import annotations

from flows.report.logtext import md
from flows.report.schema import Report
from tasks.stats.figures import RaterAgreement


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def agreement_line(name: str, a: RaterAgreement) -> str:
    low, high = [*a.alpha_ci95, None, None][:2]
    return (
        f"{name}: Krippendorff's alpha (ordinal) {_num(a.krippendorff_alpha_ordinal, 3)} "
        f"[95% CI {_num(low)}, {_num(high)}], Spearman {_num(a.spearman)}, "
        f"mean |diff| {_num(a.mean_abs_diff)} over {a.n} items"
    )


def judge_lines(report: Report) -> list[str]:
    """The judge against the gold file and against the report server's ratings."""
    lines = []
    if report.judge_gold is not None:
        lines.append(report.judge_gold.message)
        lines += [agreement_line(f"  {name} vs gold", a) for name, a in report.judge_gold.per_judge.items()]
    human = report.human_agreement
    if human is not None:
        lines.append(agreement_line(f"judge vs human ratings ({human.rated} rated)", human))
        lines += [
            f"  disagrees on {d.item}: human {d.human:g}, judge {d.judge:.3g}"
            for d in human.disagreements[:5]
        ]
    return lines


def explain_lines(report: Report) -> list[str]:
    """Every line of the section, in the order the questions come, as plain text (the console)."""
    lines = judge_lines(report)
    if report.judge_bias is not None:
        lines += report.judge_bias.lines
    for v in report.diagnosis.variants if report.diagnosis else []:
        for g in v.groups:
            example = f": {g.examples[0][:200]}" if g.kind == "error" and g.examples else ""
            lines.append(
                f"{v.variant} fails on {g.key}: {len(g.cases)} case(s) ({g.share:.0%} of cases){example}"
            )
    for s in report.ablation.sections if report.ablation else []:
        lines.append(s.line)
    return lines


def explain_markdown(report: Report) -> list[str]:
    """The markdown section (empty when there is nothing to say)."""
    lines = judge_lines(report)
    if report.judge_bias is not None:
        lines += report.judge_bias.lines
    out = (
        ["", "## Why did it score that way?", ""] + [f"- {md(line.strip())}" for line in lines]
        if lines
        else []
    )
    for v in report.diagnosis.variants if report.diagnosis else []:
        if not v.groups:
            continue
        out += ["", f"### Failures of {md(v.variant)} ({v.failing_cases}/{v.cases} cases)", ""]
        for g in v.groups:
            out.append(f"- **{md(g.key)}**: {', '.join(md(c) for c in g.cases)} ({g.share:.0%} of cases)")
            if g.suggestion:
                out.append(
                    f"  - *Suggestion ({md(g.suggestion_by or 'LLM')}), not a finding:* {md(g.suggestion)}"
                )
    if report.ablation is not None:
        out += ["", f"### Sections of {md(report.ablation.artifact)}", ""]
        out += [f"- {md(s.line)}" for s in report.ablation.sections]
    return out
