"""Every word beside a number is true: each statement the "every word" issue quoted, corrected, and
properties over any data: no "not significant" beside p < 0.05, no zero-width interval quoted, and
every sign in a reason the sign of the column beside it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from executors.claude_code import parse_claude
from tasks.stats import statistics as st
from tasks.stats.figures import Verdict
from tasks.stats.planning import pilot_from_runs, plan


def judged(diffs: list[float], margin: float = 0.1, effect: float = 0.3, up: bool = True) -> Verdict:
    """The verdict of per-case differences as the column shows them (treatment minus control); for
    a lower-is-better figure (up False) the statistics run on the improvement, as trigger mode does."""
    improvement = diffs if up else [-d for d in diffs]
    c = st.paired(improvement, seed=0)
    return st.verdict(st.VerdictInputs(c, margin, effect, c.p_ttest, 25.0, (0.0, 0.0), 0.1, up))


def test_significant_but_short_of_the_margin_is_inconclusive_not_not_significant() -> None:
    diffs = [0.05, 0.4, 0.2, 0.1, 0.3, 0.6, 0.02, 0.5]
    v = judged(diffs)
    assert v.label == "INCONCLUSIVE"
    assert re.match(
        r"better than the control \(p=0\.0\d+\) but the interval reaches below the margin \+0\.1", v.reason
    )
    assert "not significant" not in v.reason


def test_degenerate_data_one_rule_naming_its_test() -> None:
    zeros = judged([0.0] * 4)
    assert zeros.label == "UNDERPOWERED" and "fewer than 6" in zeros.reason
    six = judged([2.0] * 6)
    assert six.label == "BETTER" and "exact sign test p=0.0312" in six.reason
    assert "CI [" not in six.reason  # no zero-width "interval" quoted
    three, four = judged([2.0] * 3), judged([2.0, 2.0, 2.0, 4.0])
    assert three.label == four.label == "UNDERPOWERED"
    assert three.reason.split("(mean")[0].replace("3", "N") == four.reason.split("(mean")[0].replace("4", "N")
    assert judged([0.0] * 8).label == "EQUIVALENT"


def test_power_is_against_effect_minus_margin() -> None:
    sd = 0.9
    assert st.cases_for_better(sd, 0.3, 0.1) == st.cases_needed(sd, 0.2)
    assert (st.cases_for_better(sd, 0.3, 0.1) or 0) > (st.cases_needed(sd, 0.3) or 0)
    assert st.cases_for_better(sd, 0.1, 0.1) is None  # no number of cases clears a margin equal to the effect
    diffs = list(np.random.default_rng(3).normal(0.1, sd, 20))
    v = judged(diffs)
    spread = float(np.std(diffs, ddof=1))
    assert v.mde == pytest.approx(0.1 + (st.minimum_detectable_effect(spread, 20) or 0))
    assert v.cases_needed == st.cases_for_better(spread, 0.3, 0.1)
    if v.label == "UNDERPOWERED":
        assert "smallest effect that could read BETTER" in v.reason and "BETTER verdict" in v.reason
    control = [[3, 3], [2, 3], [4, 4], [3, 2], [2, 2], [4, 3]]
    treatment = [[4, 3], [3, 3], [4, 5], [3, 4], [3, 2], [5, 4]]
    result = plan(pilot_from_runs(control, treatment), effect=0.3, margin=0.1)
    for o in result.options:
        assert o.cases is not None and o.cases_significant is not None and o.cases >= o.cases_significant


def test_a_withheld_band_shows_no_band_word() -> None:
    v = judged([1.5, -1.0, 0.5, 0.2, -0.3, 0.9])
    assert v.band is None and v.band_note and "LIKELY" not in v.band_note and "USE" not in v.band_note
    assert v.band_text() == "" and v.headline() == str(v.label)
    sequential = v.model_copy(update={"procedure": "hedged betting confidence sequence (ref)"})
    assert sequential.headline().endswith("[decided by the hedged betting confidence sequence (ref)]")


def test_a_false_fire_reason_speaks_the_columns_sign() -> None:
    # the treatment fires falsely 0.4 more often: the column shows +0.40, and so does the reason
    v = judged([0.4, 0.3, 0.5, 0.35, 0.45, 0.38, 0.42], margin=0.05, up=False)
    assert v.label == "WORSE"
    assert "mean difference +0.4" in v.reason and "above +0.05, where lower is better" in v.reason


@settings(max_examples=300, deadline=None)
@given(
    diffs=hs.lists(hs.floats(-3, 3, allow_nan=False).map(lambda x: round(x, 1)), min_size=2, max_size=30),
    margin=hs.sampled_from([0.0, 0.05, 0.1, 0.5]),
    up=hs.booleans(),
)
def test_no_reason_contradicts_its_numbers(diffs: list[float], margin: float, up: bool) -> None:
    v = judged(diffs, margin=margin, up=up)
    reason = v.reason
    improvement = diffs if up else [-d for d in diffs]
    c = st.paired(improvement, seed=0)
    p = c.p_sign if (c.sd or 0) == 0 else c.p_ttest
    if "not significant" in reason:
        assert p is not None and p >= st.ALPHA, reason
    for low, high in re.findall(r"CI \[([^,]+), ([^\]]+)\]", reason):
        assert float(low) != float(high), reason
    shown = re.search(r"mean difference ([+-]?[\d.e+-]+)", reason)
    if shown:
        mean = float(np.mean(diffs))
        assert float(shown.group(1)) == pytest.approx(mean, abs=5e-3 + 1e-3 * abs(mean)), reason
        if abs(mean) > 1e-3 and float(shown.group(1)) != 0:
            assert (float(shown.group(1)) > 0) == (mean > 0), reason


def test_plugin_skills_count_by_either_name() -> None:
    def call(skill: str) -> dict:
        block = {"type": "tool_use", "id": "t", "name": "Skill", "input": {"skill": skill}}
        return {"type": "assistant", "message": {"content": [block]}}

    result = {"type": "result", "subtype": "success", "is_error": False, "result": "ok"}
    for called in ("greeting-style", "greet-plugin:greeting-style"):
        s = parse_claude(
            [call(called), result], plugin="greet-plugin", plugin_skills=("greeting-style", "farewell")
        )
        assert s.skill_invoked and s.meta.skills_invoked == [called]
    other = parse_claude([call("pdf"), result], plugin="greet-plugin", plugin_skills=("greeting-style",))
    assert not other.skill_invoked and other.meta.skills_invoked == ["pdf"]


def test_triggering_advice_only_where_the_task_expects_the_skill() -> None:
    from graders.plugin_eval import merge_case, parse_case

    def case(graders: list[dict]) -> object:
        data = {"schema_version": "1.0", "name": "c", "execution": {"prompt": "p"}, "graders": graders}
        return parse_case(merge_case(data, None, [], "c"), "c")

    never = case([{"name": "no-skill", "type": "tool_used", "tool": "Skill", "max": 0}])
    fires = case(
        [
            {"name": "fires", "type": "tool_used", "tool": "Skill", "arm": "with-only"},
            {"name": "r", "type": "regex", "pattern": "x"},
        ]
    )
    silent = case([{"name": "r", "type": "regex", "pattern": "x"}])
    assert (never.expects_skill, fires.expects_skill, silent.expects_skill) == (False, True, None)  # type: ignore[attr-defined]


def test_negated_flags_say_what_they_do(capsys: pytest.CaptureFixture[str]) -> None:
    from flows.cli.main import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--no-os-sandbox only a fresh HOME" in text
    assert "--no-cache neither read nor write the cache" in text
    assert "false =" not in text
