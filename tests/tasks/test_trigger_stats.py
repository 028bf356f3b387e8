"""Trigger statistics against hand-worked cases and scipy: Wilson intervals, query-level figures,
routing, description A/B with train/holdout and the overfit warning; errors never in a denominator."""

from __future__ import annotations

import pytest
from scipy import stats

from graders.queries import Query
from graders.triggers import SessionTriggers, TriggerStatus
from tasks.stats.trigger_compare import compare_variants, description_decision
from tasks.stats.trigger_stats import (
    ListingShift,
    Trial,
    listing_shifts,
    skill_figures,
    summarize,
    trial,
    wilson,
)

OK, ERR, UNLISTED = TriggerStatus.OK, TriggerStatus.ERROR, TriggerStatus.NOT_LISTED
SKILLS = ("a", "b")


def runs(
    qid: str,
    expect: str | None,
    *fired: tuple[str, ...],
    errors: int = 0,
    tags: tuple[str, ...] = (),
    variant: str = "default",
    part: str | None = None,
) -> list[Trial]:
    common = {"query_id": qid, "expect": expect, "tags": tags, "variant": variant, "part": part}
    return [Trial(status=OK, fired=f, **common) for f in fired] + [
        Trial(status=ERR, fired=("a",), **common) for _ in range(errors)
    ]


def worked() -> list[Trial]:
    return [
        *runs("qa1", "a", ("a",), ("a",), ("a",), (), errors=1),
        *runs("qa2", "a", ("a",), ("b",)),
        *runs("qb1", "b", ("a", "b"), ("b",)),
        *runs("qn1", None, ("a",), ()),
        *runs("qn2", None, (), ("debug",), tags=("near-miss",)),
        *runs("qx", "a", errors=2),
        Trial(query_id="qx", expect="a", status=UNLISTED),
    ]


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (1, 1), (17, 40), (0, 1)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ours = wilson(k, n)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert ours.rate == k / n and ours.k == k and ours.n == n
    assert ours.low == pytest.approx(ci.low, abs=1e-9) and ours.high == pytest.approx(ci.high, abs=1e-9)


def test_wilson_without_data() -> None:
    assert wilson(0, 0).rate is None and wilson(0, 0).low is None


def test_worked_example_per_query_per_skill_and_routing() -> None:
    s = summarize(worked(), SKILLS, seed=1)
    assert (s.sessions, s.counted, s.errors, s.not_listed) == (16, 12, 3, 1)
    assert s.dropped_queries == ("qx",)
    q = {r.query_id: r for r in s.queries}
    assert (q["qa1"].trigger.k, q["qa1"].trigger.n, q["qa1"].errors) == (3, 4, 1)  # the error is not in n
    assert (q["qa1"].correct.k, q["qa1"].correct.n) == (3, 4)
    assert (q["qn1"].trigger.k, q["qn1"].trigger.n) == (1, 2)  # expect none: a candidate fired
    assert q["qn2"].trigger.k == 0 and q["qn2"].fired == {"debug": 1}  # a non-candidate is no false fire
    assert q["qx"].trigger.n == 0 and q["qx"].errors == 2 and q["qx"].not_listed == 1
    a, b = s.per_skill
    assert (a.should_fire, a.should_not) == (2, 3)
    assert a.recall.value == pytest.approx(0.625) and a.false_fire.value == pytest.approx(1 / 3)
    assert a.precision.value == pytest.approx(1.25 / 2.25)
    p, r = 1.25 / 2.25, 0.625
    assert a.f1.value == pytest.approx(2 * p * r / (p + r))
    # Two should-fire queries at 0.75 and 0.5: resampled means are 0.5, 0.625 or 0.75.
    assert (a.recall.low, a.recall.high) == (0.5, 0.75)
    assert b.recall.value == 1.0 and b.recall.low is None  # one query: no interval
    assert b.false_fire.value == pytest.approx(0.125) and b.precision.value == pytest.approx(2 / 3)
    assert b.f1.value == pytest.approx(0.8)
    near = a.by_tag["near-miss"]
    assert near.recall.value is None and near.false_fire.value == 0.0 and near.should_not == 1
    routing = s.routing
    assert routing.labels == ("a", "b", "none")
    assert routing.confusion == ((4, 1, 1), (1, 1, 0), (1, 0, 3))
    assert routing.accuracy.value == pytest.approx((0.75 + 0.5 + 0.5 + 0.5 + 1.0) / 5)
    assert routing.collisions == 1 and routing.collision_queries == ("qb1",) and routing.other_fired == 1
    assert summarize(worked(), SKILLS, seed=1) == s  # seeded: the same figures every time


def test_errors_change_no_rate() -> None:
    clean = [t for t in worked() if t.counted]
    assert summarize(clean, SKILLS).per_skill == summarize(worked(), SKILLS).per_skill


def test_the_query_is_the_unit() -> None:
    # 10 queries, 100 sessions each: five always fire, five never. Sessions would give a narrow interval
    # around 0.5; queries give a wide one, because there are only ten of them.
    trials: list[Trial] = []
    for i in range(10):
        trials += runs(f"q{i}", "a", *([("a",)] * 100 if i < 5 else [()] * 100))
    recall = summarize(trials, ["a"], seed=3).per_skill[0].recall
    assert recall.value == 0.5 and recall.queries == 10
    assert recall.low is not None and recall.high is not None
    assert recall.high - recall.low > 0.4
    session_level = wilson(500, 1000)
    assert session_level.high is not None and session_level.low is not None
    assert session_level.high - session_level.low < 0.07


def test_skill_figures_edges() -> None:
    none_fired = skill_figures([0.0, 0.0], [0.0, 0.0], seed=0)
    assert none_fired["precision"].value is None and none_fired["f1"].value == 0.0
    assert none_fired["recall"].value == 0.0
    only_negatives = skill_figures([], [0.5, 0.0], seed=0)
    assert only_negatives["recall"].value is None and only_negatives["f1"].value is None
    assert only_negatives["false_fire"].value == 0.25


def test_trial_from_a_query_and_detection() -> None:
    query = Query(id="q1", query="x", expect="a", tags=("paraphrase",))
    detected = SessionTriggers(status=OK, session_status="success")
    t = trial(query, detected, variant="v2", part="holdout")
    assert t == Trial(
        query_id="q1", expect="a", status=OK, fired=(), tags=("paraphrase",), variant="v2", part="holdout"
    )


def test_mixed_variants_must_be_named() -> None:
    trials = runs("q", "a", ("a",), variant="v1") + runs("q", "a", (), variant="v2")
    with pytest.raises(ValueError, match="several variants"):
        summarize(trials, ["a"])
    assert summarize(trials, ["a"], variant="v2").per_skill[0].recall.value == 0.0


def ab(recall: dict[str, tuple[int, int]], false_fire: tuple[int, int], errors_b: int = 0) -> list[Trial]:
    """Variants A and B of skill a: per part, of 5 sessions on each should-fire query, how many fire
    (A, B); on should-not queries, how many falsely fire (A, B). 10 queries per part."""
    trials: list[Trial] = []
    for part, (fa, fb) in recall.items():
        for i in range(10):
            qid = f"{part}-pos-{i}"
            trials += runs(qid, "a", *[("a",)] * fa, *[()] * (5 - fa), variant="A", part=part)
            trials += runs(
                qid, "a", *[("a",)] * fb, *[()] * (5 - fb), variant="B", part=part, errors=errors_b
            )
            qid = f"{part}-neg-{i}"
            na, nb = false_fire
            trials += runs(qid, None, *[("a",)] * na, *[()] * (5 - na), variant="A", part=part)
            trials += runs(qid, None, *[("a",)] * nb, *[()] * (5 - nb), variant="B", part=part)
    return trials


def test_ab_better_recall_and_fewer_false_fires() -> None:
    result = compare_variants(ab({"train": (1, 4), "holdout": (1, 4)}, (3, 0)), ["a"], "A", "B", seed=5)
    for part in ("all", "train", "holdout"):
        rec, ff = result.parts[part].recall, result.parts[part].false_fire
        assert rec.control == pytest.approx(0.2) and rec.treatment == pytest.approx(0.8)
        assert rec.difference == pytest.approx(0.6) and rec.verdict.label == "BETTER"
        assert ff.difference == pytest.approx(-0.6) and not ff.higher_is_better
    whole = result.parts["all"]
    assert whole.recall.queries == 20 and whole.recall.verdict.label == "BETTER"
    assert whole.false_fire.verdict.label == "BETTER"  # fewer false fires is the improvement
    assert whole.false_fire.comparison.mean == pytest.approx(0.6)
    assert not result.overfit and result.warnings == ()
    assert result.error_rates == (0.0, 0.0)


def test_ab_equivalent_when_nothing_changes() -> None:
    result = compare_variants(ab({"train": (3, 3), "holdout": (3, 3)}, (1, 1)), ["a"], "A", "B", skill="a")
    assert result.parts["all"].recall.verdict.label == "EQUIVALENT"
    assert result.parts["all"].false_fire.verdict.label == "EQUIVALENT"


def test_ab_overfit_when_the_gain_stays_on_train() -> None:
    result = compare_variants(ab({"train": (1, 5), "holdout": (2, 2)}, (1, 1)), ["a"], "A", "B")
    assert result.parts["train"].recall.difference == pytest.approx(0.8)
    assert result.parts["holdout"].recall.difference == pytest.approx(0.0)
    assert result.overfit and len(result.warnings) == 1 and result.warnings[0].startswith("overfit: recall")


def test_ab_errors_are_counted_not_averaged() -> None:
    # B errs in 5 of 10 sessions of each should-fire query; its rates only use the counted ones.
    result = compare_variants(ab({"train": (1, 4), "holdout": (1, 4)}, (1, 1), errors_b=5), ["a"], "A", "B")
    rec = result.parts["all"].recall
    assert rec.treatment == pytest.approx(0.8)
    # Per part: 10 should-fire queries x (5 counted + 5 errors) and 10 should-not x 5: 100 of 300 erred.
    assert result.error_rates == (0.0, pytest.approx(1 / 3))
    assert rec.verdict.label == "INCONCLUSIVE" and "errored" in rec.verdict.reason


def test_ab_without_split_and_unknown_variant() -> None:
    trials = [t.model_copy(update={"part": None}) for t in ab({"x": (1, 4)}, (1, 1))]
    result = compare_variants(trials, ["a"], "A", "B")
    assert list(result.parts) == ["all"] and not result.overfit
    train_only = [t.model_copy(update={"part": "train"}) for t in trials]
    assert compare_variants(train_only, ["a"], "A", "B").warnings == (
        "no holdout queries: overfitting to the queries cannot be checked",
    )
    with pytest.raises(ValueError, match="no trials of variant 'C'"):
        compare_variants(trials, ["a"], "A", "C")


def test_expected_skills_must_be_candidates() -> None:
    with pytest.raises(ValueError, match="not candidates: c"):
        summarize(runs("q", "c", ("c",)), ["a"])


def listed(variant: str, states: dict[str, str], fired: tuple[str, ...], expect: str | None, q: str) -> Trial:
    seen = {"listing": states, "listing_chars": 7900, "listing_budget": 8000}  # near its budget
    return Trial(query_id=q, expect=expect, status=OK, fired=fired, variant=variant, **seen)


def test_listing_figures_tell_dropped_from_passed_over_and_find_the_skills_pushed_out() -> None:
    before = [
        listed("env", {"a": "full", "b": "full"}, ("a",), "a", "q1"),
        listed("env", {"a": "full", "b": "full"}, (), "b", "q2"),
    ]
    after = [
        listed("new", {"a": "full", "b": "dropped", "n": "full"}, ("a",), "a", "q1"),
        listed("new", {"a": "full", "b": "dropped", "n": "full"}, (), "b", "q2"),
    ]
    env = summarize(before, ["a", "b", "n"], variant="env")
    new = summarize(after, ["a", "b", "n"], variant="new")
    assert env.listing is not None and new.listing is not None
    b = next(s for s in new.listing.skills if s.skill == "b")
    assert (b.full, b.dropped, b.state, b.recall_when["dropped"].k, b.recall_when["dropped"].n) == (
        0,
        2,
        "dropped",
        0,
        1,
    )
    n = next(s for s in env.listing.skills if s.skill == "n")
    assert n.absent == 2 and n.state == "absent"
    assert new.listing.over_budget == 2 and env.listing.over_budget == 0 and new.listing.budget == 8000
    (shift,) = listing_shifts(env, new)
    assert (shift.skill, shift.full_before, shift.full_after) == ("b", 1.0, 0.0)
    assert summarize([Trial(query_id="q", expect="a", status=OK)], ["a"]).listing is None


def test_a_rewrite_is_kept_only_when_it_wins_on_holdout_and_harms_nobody() -> None:
    def arm(variant: str, fires_s: bool, fires_o: bool) -> list[Trial]:
        """12 queries for skill s and 12 for skill o, half of each in the holdout part."""
        return [
            Trial(
                query_id=f"{skill}{i}",
                expect=skill,
                status=OK,
                fired=(skill,) if fires else (),
                variant=variant,
                part="train" if i % 2 else "holdout",
            )
            for i in range(12)
            for skill, fires in (("s", fires_s), ("o", fires_o))
        ]

    trials = arm("current", False, True) + arm("good", True, True) + arm("greedy", True, False)
    good = description_decision(trials, ["s", "o"], "current", "good", "s")
    assert (
        good.kept
        and good.recall_change_holdout == 1.0
        and good.reasons[0].startswith("holdout recall +1.00: BETTER")
    )
    greedy = description_decision(trials, ["s", "o"], "current", "greedy", "s")
    assert not greedy.kept and greedy.reasons == ("lowers o's recall by 1.00 (margin 0.05)",)
    shift = ListingShift(skill="o", control="current", treatment="good", full_before=1.0, full_after=0.0)
    pushed = description_decision(trials, ["s", "o"], "current", "good", "s", [shift])
    assert not pushed.kept and pushed.reasons == ("pushes o's description out of the listing",)
    unsplit = [t.model_copy(update={"part": None}) for t in trials]
    assert not description_decision(unsplit, ["s", "o"], "current", "good", "s").kept
