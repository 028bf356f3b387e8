"""The same-night control's rule, calibrated on simulated nights: A/A nights (nothing changed) must not
alarm more than 5% of the time; a planted regression of the artifact reads "the skill regressed", a
planted change of the world "the world changed"."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from flows.report.regression import compare_variant, control_verdict
from tasks.schema import SAMPLE_SCALE, TRIGGER_SCALE

PAIRS, CASES, NOISE, RUNS = 200, 20, 0.6, 5
Scores = dict[str, float]


def sample_scores(rng: random.Random) -> Callable[[float], Scores]:
    """A sample suite's night: per case a true score on 1-5, each arm a noisy draw of it."""
    true = {f"c{i}": rng.uniform(2.0, 4.5) for i in range(CASES)}
    return lambda shift: {c: min(5.0, max(1.0, m + shift + rng.gauss(0, NOISE))) for c, m in true.items()}


def trigger_scores(rng: random.Random) -> Callable[[float], Scores]:
    """A trigger suite's night: per query a true chance of doing what it expects, each arm the share
    of its RUNS sessions that did."""
    true = {f"q{i}": rng.uniform(0.2, 0.95) for i in range(CASES)}

    def draw(shift: float) -> Scores:
        return {q: sum(rng.random() < p + shift for _ in range(RUNS)) / RUNS for q, p in true.items()}

    return draw


def nights(
    skill_shift: float,
    world_shift: float,
    draws: Callable[[random.Random], Callable[[float], Scores]] = sample_scores,
) -> Counter[str]:
    """Outcomes of PAIRS simulated nights: the control on its own night, and tonight the control (the
    world moved by ``world_shift``) and the candidate (moved by the world and ``skill_shift``)."""
    rng = random.Random(7)
    report = cast(Any, SimpleNamespace(scale=TRIGGER_SCALE if draws is trigger_scores else SAMPLE_SCALE))
    found: Counter[str] = Counter()
    for night in range(PAIRS):
        draw = draws(rng)
        own, control, candidate = draw(0.0), draw(world_shift), draw(world_shift + skill_shift)
        verdict = control_verdict(
            "night-0",
            compare_variant(control, candidate, report, night),
            compare_variant(own, control, report, night),
            [],
        )
        found[verdict.outcome] += 1
    return found


def test_a_a_nights_do_not_alarm() -> None:
    found = nights(0.0, 0.0)
    assert found["neither"] >= 0.95 * PAIRS, found


def test_a_planted_regression_reads_the_skill_regressed() -> None:
    found = nights(-1.0, 0.0)
    assert found["the skill regressed"] >= 0.8 * PAIRS and found["the world changed"] <= 0.05 * PAIRS, found


def test_a_planted_world_change_reads_the_world_changed() -> None:
    found = nights(0.0, -1.0)
    assert found["the world changed"] >= 0.8 * PAIRS and found["the skill regressed"] <= 0.05 * PAIRS, found


def test_trigger_nights_are_calibrated_too() -> None:
    """Rates of 5 sessions a query: A/A nights alarm in at most 5%, a drop of 40 points in the chance
    of firing is told for what it is in at least 80%."""
    same = nights(0.0, 0.0, trigger_scores)
    skill = nights(-0.4, 0.0, trigger_scores)
    world = nights(0.0, -0.4, trigger_scores)
    assert same["neither"] >= 0.95 * PAIRS, same
    assert skill["the skill regressed"] >= 0.8 * PAIRS and skill["the world changed"] <= 0.05 * PAIRS, skill
    assert world["the world changed"] >= 0.8 * PAIRS and world["the skill regressed"] <= 0.05 * PAIRS, world
