"""The skill across agents as one analysis: each task's lift (with-skill minus baseline) on each agent
is one cell of a tasks x agents table, and the table is read as a two-way crossed random-effects
model, lift[t, a] = mu + agent[a] + task[t] + error, agents and tasks both random, fitted by the
ANOVA (method-of-moments) estimators on the tasks every agent scored.

- The pooled lift is the grand mean mu; its variance, for random agents and tasks, is
  (MS_agent + MS_task - MS_error) / (A T) (never below MS_error / (A T)), with Satterthwaite's degrees
  of freedom: the interval speaks of agents like these, not only of the ones run.
- The agent x skill interaction (does the skill help some agents more than others?) is the F test of
  the agent effect on the lifts: F = MS_agent / MS_error on (A - 1, (A - 1)(T - 1)) degrees of freedom;
  tau^2 = max(0, (MS_agent - MS_error) / T) is the variance of the lift between agents.

Pure (numpy, scipy's distributions); the per-agent intervals stay each agent's own paired analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from pydantic import Field
from scipy import special

from tasks.stats.distributions import t_ppf
from tasks.stats.models import Figures
from tasks.stats.statistics import ALPHA

MODEL = "two-way crossed random effects (agents and tasks random), ANOVA estimators"


class PooledLift(Figures):
    """The skill's lift pooled across agents, and whether it differs between them."""

    model: str = Field(description="the model the figures come from")
    agents: int = Field(description="agents in the analysis")
    tasks: int = Field(description="tasks every one of them scored in both arms")
    mean: float = Field(description="pooled lift: the mean over agents and tasks")
    se: float | None = Field(description="its standard error, agents and tasks random")
    df: float | None = Field(description="Satterthwaite degrees of freedom of the interval")
    ci_low: float | None = Field(description="lower end of the 95% interval")
    ci_high: float | None = Field(description="upper end of the 95% interval")
    f_agents: float | None = Field(description="F statistic of the agent x skill interaction")
    p_agents: float | None = Field(description="its p-value: small when the lift differs between agents")
    tau2: float | None = Field(description="variance of the lift between agents (method of moments)")
    line: str = Field(description="the pooled lift and the interaction test in one sentence")


def pooled_lift(lifts: Mapping[str, Mapping[str, float]]) -> PooledLift | None:
    """agent -> task -> lift (with-skill minus baseline); None under two agents or two shared tasks."""
    agents = list(lifts)
    tasks = sorted(set.intersection(*(set(v) for v in lifts.values()))) if agents else []
    if len(agents) < 2 or len(tasks) < 2:
        return None
    y = np.array([[lifts[a][t] for a in agents] for t in tasks], dtype=float)  # tasks x agents
    n_t, n_a = y.shape
    mu = float(y.mean())
    by_agent, by_task = y.mean(axis=0), y.mean(axis=1)
    ms_agent = n_t * float(((by_agent - mu) ** 2).sum()) / (n_a - 1)
    ms_task = n_a * float(((by_task - mu) ** 2).sum()) / (n_t - 1)
    df_error = (n_a - 1) * (n_t - 1)
    residual = y - by_agent[None, :] - by_task[:, None] + mu
    ms_error = float((residual**2).sum()) / df_error
    combined = ms_agent + ms_task - ms_error
    var = max(combined, ms_error) / (n_a * n_t)
    se = math.sqrt(var) if var > 0 else None
    df: float | None = None
    low = high = None
    if se is not None:
        parts = (ms_agent**2 / (n_a - 1), ms_task**2 / (n_t - 1), ms_error**2 / df_error)
        df = (max(combined, ms_error) ** 2 / sum(parts)) if combined > ms_error else float(df_error)
        half = t_ppf(1 - ALPHA / 2, max(df, 1.0)) * se
        low, high = mu - half, mu + half
    f = ms_agent / ms_error if ms_error > 0 else None
    # no residual: each agent's lift is the same on every task, so any difference between agents is exact
    p = float(special.fdtrc(n_a - 1, df_error, f)) if f is not None else (0.0 if ms_agent > 0 else None)
    tau2 = max(0.0, (ms_agent - ms_error) / n_t)
    interval = f"[{low:+.1f}, {high:+.1f}]" if low is not None and high is not None else "(no spread)"
    if f is None:
        differs = (
            "the lift differs between agents, each agent's the same on every task (no residual: exact)"
            if p == 0.0
            else "every agent's lift the same on every task"
        )
    else:
        word = (
            "the lift differs between agents"
            if p is not None and p < ALPHA
            else "no evidence the lift differs between agents"
        )
        differs = f"{word} (F={f:.2f}, p={p:.2g})"
    line = (
        f"pooled over {n_a} agents: {mu:+.1f} points {interval} over the {n_t} tasks all of them scored; "
        f"{differs}"
    )
    return PooledLift(
        model=MODEL, agents=n_a, tasks=n_t, mean=mu, se=se, df=df, ci_low=low, ci_high=high,
        f_agents=f, p_agents=p, tau2=tau2, line=line,
    )  # fmt: skip
