"""The lift pooled across agents (two-way crossed random effects) against hand-worked figures and
scipy: with two agents the interaction F is the square of the paired t of their lifts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tasks.stats.agents import pooled_lift


def test_two_agents_match_the_paired_t_test_of_their_lifts() -> None:
    a = {"t1": 10.0, "t2": 20.0, "t3": 15.0, "t4": 5.0}
    b = {"t1": 0.0, "t2": 5.0, "t3": -5.0, "t4": 0.0}
    pooled = pooled_lift({"a": a, "b": b})
    assert pooled is not None and pooled.agents == 2 and pooled.tasks == 4
    t = stats.ttest_rel(list(a.values()), list(b.values()))
    assert pooled.f_agents == pytest.approx(t.statistic**2)
    assert pooled.p_agents == pytest.approx(t.pvalue)
    assert pooled.mean == pytest.approx(np.mean([*a.values(), *b.values()]))
    assert "the lift differs between agents" in pooled.line


def test_hand_worked_variance_components() -> None:
    # 3 tasks x 3 agents; agent means 1, 2, 6; task means 2, 3, 4; grand mean 3
    y = {
        "a": {"t1": 0.0, "t2": 1.0, "t3": 2.0},
        "b": {"t1": 2.0, "t2": 2.0, "t3": 2.0},
        "c": {"t1": 4.0, "t2": 6.0, "t3": 8.0},
    }
    pooled = pooled_lift(y)
    assert pooled is not None and pooled.mean == pytest.approx(3.0)
    ms_agent, ms_task = 3 * ((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 2, 3 * (1 + 0 + 1) / 2
    rows = np.array([[0, 2, 4], [1, 2, 6], [2, 2, 8]], dtype=float)
    resid = rows - rows.mean(axis=0) - rows.mean(axis=1)[:, None] + rows.mean()
    ms_error = float((resid**2).sum()) / 4
    assert pooled.f_agents == pytest.approx(ms_agent / ms_error)
    assert pooled.se == pytest.approx(math.sqrt((ms_agent + ms_task - ms_error) / 9))
    assert pooled.tau2 == pytest.approx((ms_agent - ms_error) / 3)
    assert pooled.ci_low is not None and pooled.ci_low < 3 < (pooled.ci_high or 0)


def test_only_tasks_every_agent_scored_and_too_little_gives_none() -> None:
    assert pooled_lift({"a": {"t1": 1.0, "t2": 2.0}}) is None
    assert pooled_lift({"a": {"t1": 1.0, "t2": 2.0}, "b": {"t1": 1.0}}) is None
    pooled = pooled_lift({"a": {"t1": 1.0, "t2": 2.0, "t3": 9.0}, "b": {"t1": 1.0, "t2": 2.0}})
    assert pooled is not None and pooled.tasks == 2


def test_an_exact_difference_between_agents_is_said_without_a_test() -> None:
    pooled = pooled_lift({"a": {"t1": 60.0, "t2": 60.0}, "b": {"t1": 0.0, "t2": 0.0}})
    assert pooled is not None and pooled.p_agents == 0.0 and pooled.f_agents is None
    assert "no residual" in pooled.line
    same = pooled_lift({"a": {"t1": 5.0, "t2": 5.0}, "b": {"t1": 5.0, "t2": 5.0}})
    assert same is not None and same.p_agents is None and "the same on every task" in same.line
