"""The same-night control's rule, calibrated on simulated nights: A/A nights (nothing changed) must not
alarm more than 5% of the time; a planted regression of the artifact reads "the skill regressed", a
planted change of the world "the world changed"."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

from flows.report.regression import compare_variant, control_verdict
from tasks.schema import SAMPLE_SCALE

REPORT = cast(Any, SimpleNamespace(scale=SAMPLE_SCALE))  # what compare_variant reads of a report: its scale
PAIRS, CASES, NOISE = 200, 20, 0.6


def nights(skill_shift: float, world_shift: float, seed: int = 7) -> Counter[str]:
    """Outcomes of PAIRS simulated nights: per case a true score, each arm a noisy draw of it; tonight's
    world moves every arm by ``world_shift``, the candidate alone by ``skill_shift``."""
    rng = random.Random(seed)
    found: Counter[str] = Counter()
    for night in range(PAIRS):
        true = {f"c{i}": rng.uniform(2.0, 4.5) for i in range(CASES)}

        def draw(shift: float) -> dict[str, float]:
            return {c: min(5.0, max(1.0, m + shift + rng.gauss(0, NOISE))) for c, m in true.items()}  # noqa: B023

        own, control, candidate = draw(0.0), draw(world_shift), draw(world_shift + skill_shift)
        verdict = control_verdict(
            "night-0",
            compare_variant(control, candidate, REPORT, night),
            compare_variant(own, control, REPORT, night),
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
