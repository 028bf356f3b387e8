"""--ablate in the report: each section's contribution (full minus without it, per case), its
interval, the Holm-adjusted p over the sections, the smallest detectable effect, and what the
section costs in input tokens. A section without a detectable effect is reported as such, with
the effect this N could have detected: absence of evidence, never "useless"."""

from __future__ import annotations

from flows.report.diagnosis_parts import Ablation, SectionEffect
from flows.report.schema import Report
from tasks.stats.figures import Comparison
from tasks.stats.statistics import ALPHA


def mean_input_tokens(report: Report, variant: str) -> float | None:
    tokens = [
        run.input_tokens
        for case in report.results
        for entry in [case.variants.get(variant)]
        if entry is not None
        for run in entry.runs or [entry]
        if run.ok and run.input_tokens is not None
    ]
    return sum(tokens) / len(tokens) if tokens else None


def section_effect(report: Report, comp: Comparison, heading: str, per: str = "call") -> SectionEffect:
    p, v = comp.paired, comp.verdict
    contribution = None if p.mean is None else -p.mean
    low = None if p.ci_high is None else -p.ci_high
    high = None if p.ci_low is None else -p.ci_low
    p_holm = p.p_holm if report.multiple_comparisons else p.p_ttest
    full, cut = mean_input_tokens(report, comp.control), mean_input_tokens(report, comp.treatment)
    tokens = None if full is None or cut is None else full - cut
    settled = p_holm is not None and p_holm < ALPHA and low is not None and high is not None
    finding = "no detectable effect"
    if settled and low is not None and low > 0:
        finding = "helps"
    elif settled and high is not None and high < 0:
        finding = "hurts"
    shown = "—" if contribution is None else f"{contribution:+.3g}"
    interval = f" [95% CI {low:+.3g}, {high:+.3g}]" if low is not None and high is not None else ""
    holm = "" if p_holm is None else f", Holm p = {p_holm:.2g}"
    cost = "" if tokens is None else f"; costs {tokens:.0f} input tokens per {per}"
    # the verdict's mde is what reads BETTER (beyond the margin); a section's finding is against 0
    detectable = None if v.mde is None else v.mde - v.margin
    if finding == "no detectable effect":
        mde = "unknown" if detectable is None else f"{detectable:.3g}"
        verdict = f"no detectable effect at this N (smallest detectable effect {mde})"
    else:
        verdict = f"removing it {'lowers' if finding == 'helps' else 'raises'} the score: it {finding}"
    return SectionEffect(
        section=heading,
        variant=comp.treatment,
        contribution=contribution,
        ci_low=low,
        ci_high=high,
        p_holm=p_holm,
        mde=detectable,
        input_tokens=tokens,
        finding=finding,
        line=f"section {heading!r}: {verdict}; contribution {shown}{interval}{holm}{cost}",
    )


def ablation(
    report: Report, artifact: str, full: str, ablated: dict[str, str], per: str = "call"
) -> Ablation:
    """``ablated``: the report's variant label -> the heading that variant leaves out; ``per``: what
    the token cost is counted over (a call in sample mode, an agent session in agentic mode)."""
    comps = [c for c in report.comparisons if c.control == full and c.treatment in ablated]
    return Ablation.model_validate(
        {
            "artifact": artifact,
            "full": full,
            "cases": max((c.cases for c in comps), default=0),
            "sections": [section_effect(report, c, ablated[c.treatment], per) for c in comps],
        }
    )
