"""The certificate's rules one by one: power against the effect asked for, cross-agent certificates,
and the --require-valid gate's lines."""

from __future__ import annotations

from flows.report.schema import CheckStatus, Validity, ValidityCheck
from flows.report.validity import Named, combined, power_line
from tasks.schema import VerdictLabel
from tasks.stats.figures import Verdict


def named(
    label: VerdictLabel, mean: float, mde: float | None, min_effect: float = 0.3, cases: int = 20
) -> Named:
    verdict = Verdict.model_construct(
        label=label,
        reason="",
        margin=0.1,
        min_effect=min_effect,
        mde=mde,
        cases_needed=40,
        band=None,
        delta_points=None,
    )
    return Named("v2 vs v1", verdict, mean, cases)


def test_power_passes_warns_and_fails() -> None:
    enough = power_line([named(VerdictLabel.BETTER, 0.8, 0.25)])
    assert enough is not None and enough.status == CheckStatus.PASS and "0.25" in enough.line
    # too few cases for the effect asked for, but the BETTER rests on a larger difference
    short = power_line([named(VerdictLabel.BETTER, 2.0, 1.37)])
    assert short is not None and short.status == CheckStatus.WARN and "about 40 cases" in short.line
    # a verdict of no difference at low power says nothing about 0.3: a warning, not a failure
    quiet = power_line([named(VerdictLabel.INCONCLUSIVE, 0.05, 1.0)])
    assert quiet is not None and quiet.status == CheckStatus.WARN
    # a BETTER at a difference below what the run detects with 80% power: a lucky, inflated draw
    lucky = power_line([named(VerdictLabel.BETTER, 0.6, 0.9)])
    assert lucky is not None and lucky.status == CheckStatus.FAIL and "lucky draw" in lucky.line
    worse = power_line([named(VerdictLabel.WORSE, -0.5, None)])
    assert worse is not None and worse.status == CheckStatus.FAIL
    assert power_line([]) is None
    # too few cases for any verdict: never a PASS, whatever the spread
    few = power_line([named(VerdictLabel.UNDERPOWERED, 0.0, 0.1, cases=2)])
    assert few is not None and few.status == CheckStatus.WARN and "2 paired case(s)" in few.line


def certificate(*statuses: CheckStatus) -> Validity:
    checks = [ValidityCheck(check=f"c{i}", status=s, line="x") for i, s in enumerate(statuses)]
    failed = CheckStatus.FAIL in statuses
    return Validity(
        certified=not failed, line="l", checks=checks, not_certified=["v2 vs v1: BETTER"] if failed else []
    )


def test_a_cross_agent_certificate_is_each_agent_s() -> None:
    both = combined({"claude": certificate(CheckStatus.PASS), "codex": certificate(CheckStatus.WARN)})
    assert both.certified and [c.status for c in both.checks] == [CheckStatus.PASS, CheckStatus.WARN]
    one = combined({"claude": certificate(CheckStatus.PASS), "codex": certificate(CheckStatus.FAIL)})
    assert not one.certified and one.line == "not certified: codex"
    assert one.not_certified == ["v2 vs v1: BETTER"]
    assert not combined({"gemini": None}).certified
