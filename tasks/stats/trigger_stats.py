"""Statistics of a trigger benchmark (does a skill fire when it should?). Pure numpy/scipy, no Prefect.

The unit is the QUERY, not the session: a query's sessions are repeats of one case, so each query
contributes its firing rate, rates are averaged over queries, and every interval resamples queries
(a seeded bootstrap, stratified by should-fire / should-not). Per query, the firing rate over its
sessions carries a Wilson 95% interval.

Sessions that did not count (``error``: API error, timeout, crash; ``not_listed``: setup failure)
are counted and shown but never enter a denominator. A query with no counted session drops out of
the rates (and is listed as such).

Vocabulary: a *should-fire* query of skill S expects S; a *should-not* query of S expects anything
else (another skill or none). Recall = mean over S's should-fire queries of P(S fired); false-fire
rate = mean over its should-not queries of P(S fired); precision = the expected firings of S on
should-fire queries over its expected firings on all queries (each query weighted once); F1 their
harmonic mean. Routing looks at the first candidate that fired in a session ("none" if none did).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import NormalDist

import numpy as np
from pydantic import Field

from executors.schema import Frozen, ListingState
from graders.queries import NONE, Query
from graders.triggers import SessionTriggers, TriggerStatus
from tasks.schema import TRIGGER_SCALE
from tasks.stats.statistics import BOOTSTRAP_DRAWS

Z95 = NormalDist().inv_cdf(0.975)
DEFAULT_MARGIN = TRIGGER_SCALE.margin  # on the rate scale: 5 percentage points
DEFAULT_MIN_EFFECT = TRIGGER_SCALE.min_effect
DEFAULT_MAX_ERROR_RATE = 0.10
DEFAULT_VARIANT = "default"
PARTS = ("all", "train", "holdout")


class Trial(Frozen):
    """One session of one query (under one description variant), reduced to what the rates need."""

    query_id: str
    expect: str | None  # the skill that should fire; None: none should
    status: TriggerStatus
    fired: tuple[str, ...] = ()  # skills that fired, in the order they first fired
    tags: tuple[str, ...] = ()
    variant: str = DEFAULT_VARIANT
    part: str | None = None  # "train" | "holdout" when the queries were split
    # What the model's request listed: skill -> full | truncated | dropped (absent: not there);
    # None when the CLI's requests could not be read (then nothing is said of the listing).
    listing: dict[str, str] | None = None
    listing_chars: int | None = None
    listing_budget: int | None = None

    @property
    def counted(self) -> bool:
        return self.status == TriggerStatus.OK

    def listed_as(self, skill: str) -> str:
        return (self.listing or {}).get(skill, ListingState.ABSENT)


def trial(
    query: Query, triggers: SessionTriggers, *, variant: str = DEFAULT_VARIANT, part: str | None = None
) -> Trial:
    """The trial of one detected session of ``query``."""
    seen = triggers.listing
    return Trial(
        query_id=query.id,
        expect=query.expect,
        status=triggers.status,
        fired=triggers.fired,
        tags=query.tags,
        variant=variant,
        part=part,
        listing=None if seen is None else {s.name: str(s.state) for s in seen.skills},
        listing_chars=None if seen is None else seen.chars,
        listing_budget=None if seen is None else seen.budget,
    )


class Rate(Frozen):
    """k of n with the Wilson 95% interval (None without data)."""

    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """The Wilson score interval: sensible at 0 and n, unlike the normal approximation."""
    if n <= 0:
        return Rate(k=k, n=n, rate=None, low=None, high=None)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Rate(k=k, n=n, rate=p, low=max(0.0, centre - half), high=min(1.0, centre + half))


class Estimate(Frozen):
    """A query-level figure with its seeded bootstrap 95% interval over queries."""

    value: float | None
    low: float | None = None
    high: float | None = None
    queries: int = 0


class QueryRate(Frozen):
    """One query's sessions: how often its expected skill fired (or, expecting none, any candidate)."""

    query_id: str
    expect: str  # skill name or "none"
    tags: tuple[str, ...]
    sessions: int  # all sessions, counted or not
    errors: int
    not_listed: int
    trigger: Rate  # should-fire: the expected skill fired; expect none: some candidate fired
    correct: Rate  # the first candidate to fire was the expected one ("none" when none should)
    fired: dict[str, int]  # counted sessions in which each skill fired (non-candidates too)


class SkillStats(Frozen):
    skill: str
    should_fire: int  # queries with counted sessions
    should_not: int
    recall: Estimate
    false_fire: Estimate
    precision: Estimate
    f1: Estimate
    by_tag: dict[str, SkillStats] = Field(default_factory=dict)


class Routing(Frozen):
    labels: tuple[str, ...]  # rows (expected) and columns (first fired): the candidates, then "none"
    confusion: tuple[tuple[int, ...], ...]  # counted sessions
    accuracy: Estimate  # top-1: per-query share of sessions routed to the expected label, averaged
    collisions: int  # counted sessions in which two or more candidates fired
    collision_queries: tuple[str, ...]
    other_fired: int  # counted sessions in which a skill outside the candidates fired


class ListingStats(Frozen):
    """How one skill was listed to the model over a variant's counted sessions whose request was read,
    and how often it fired on its own should-fire queries in each state (sessions, Wilson intervals)."""

    skill: str
    sessions: int
    full: int
    truncated: int
    dropped: int  # listed by name alone
    absent: int
    recall_when: dict[str, Rate]  # state -> fired / should-fire sessions in that state

    @property
    def state(self) -> str:
        """The state of most sessions (full on a tie with the others)."""
        counts = {
            "full": self.full,
            "truncated": self.truncated,
            "dropped": self.dropped,
            "absent": self.absent,
        }
        return max(counts, key=lambda k: (counts[k], k == "full"))


class ListingFigures(Frozen):
    """The listing's size against the CLI's budget, and each skill's place in it."""

    sessions: int  # counted sessions whose request was read
    chars: int  # the largest listing among them
    budget: int | None  # the CLI's budget for it (None: the session did not tell its context window)
    over_budget: int  # sessions in which a candidate's description was dropped to fit
    skills: tuple[ListingStats, ...]


class TriggerSummary(Frozen):
    variant: str
    skills: tuple[str, ...]
    sessions: int
    counted: int
    errors: int
    not_listed: int
    dropped_queries: tuple[str, ...]  # queries without a counted session
    queries: tuple[QueryRate, ...]
    per_skill: tuple[SkillStats, ...]
    routing: Routing
    seed: int
    listing: ListingFigures | None = None


# ---------------------------------------------------------------- helpers


def group_by_query(trials: Iterable[Trial]) -> dict[str, list[Trial]]:
    out: dict[str, list[Trial]] = {}
    for t in trials:
        out.setdefault(t.query_id, []).append(t)
    return out


def routed(t: Trial, skills: Sequence[str]) -> str:
    """The first candidate that fired in a session, or "none"."""
    return next((s for s in t.fired if s in skills), NONE)


def fire_rate(sessions: Sequence[Trial], skill: str | None, skills: Sequence[str]) -> float | None:
    """Share of counted sessions in which ``skill`` fired (None: any candidate)."""
    counted = [t for t in sessions if t.counted]
    if not counted:
        return None
    if skill is None:
        return sum(1 for t in counted if any(s in skills for s in t.fired)) / len(counted)
    return sum(1 for t in counted if skill in t.fired) / len(counted)


def _interval(draws: np.ndarray) -> tuple[float | None, float | None]:
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return None, None
    return float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))


def _resample(values: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    """Row-wise means and sums need the resampled values: shape (draws, len(values))."""
    if values.size == 0:
        return np.zeros((draws, 0))
    return values[rng.integers(0, values.size, size=(draws, values.size))]


def skill_figures(
    pos: Sequence[float], neg: Sequence[float], *, seed: int, draws: int = BOOTSTRAP_DRAWS
) -> dict[str, Estimate]:
    """Recall, false-fire rate, precision and F1 from per-query firing rates of one skill on its
    should-fire (``pos``) and should-not (``neg``) queries, each with a bootstrap interval that
    resamples queries within each group (no interval for a group of fewer than 2 queries)."""
    p, n = np.asarray(pos, float), np.asarray(neg, float)

    def point(pp: np.ndarray, nn: np.ndarray) -> tuple[np.ndarray, ...]:
        # The last axis holds queries; a bootstrap adds a leading axis of draws.
        tp, fp = pp.sum(axis=-1), nn.sum(axis=-1)
        npos, nneg = pp.shape[-1], nn.shape[-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            recall = tp / npos if npos else np.full(np.shape(tp), np.nan)
            false_fire = fp / nneg if nneg else np.full(np.shape(fp), np.nan)
            precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
            # Nothing of S fired on its own queries: F1 is 0 (recall 0), not undefined.
            f1 = np.where(recall > 0, 2 * precision * recall / (precision + recall), 0.0 if npos else np.nan)
        return recall, false_fire, precision, f1

    values = [float(v) if np.isfinite(v) else None for v in point(p, n)]
    rng = np.random.default_rng(seed)
    boot = point(_resample(p, rng, draws), _resample(n, rng, draws))
    enough_pos, enough_neg = p.size >= 2, n.size >= 2
    names = ("recall", "false_fire", "precision", "f1")
    allowed = (enough_pos, enough_neg, enough_pos and n.size != 1, enough_pos and n.size != 1)
    out = {}
    for name, value, draws_of, ok in zip(names, values, boot, allowed, strict=True):
        low, high = _interval(draws_of) if ok and value is not None else (None, None)
        size = n.size if name == "false_fire" else p.size if name == "recall" else p.size + n.size
        out[name] = Estimate(value=value, low=low, high=high, queries=size)
    return out


def _skill_stats(
    skill: str, groups: dict[str, list[Trial]], skills: Sequence[str], seed: int, with_tags: bool
) -> SkillStats:
    pos: list[float] = []
    neg: list[float] = []
    for sessions in groups.values():
        rate = fire_rate(sessions, skill, skills)
        if rate is None:
            continue
        (pos if sessions[0].expect == skill else neg).append(rate)
    figures = skill_figures(pos, neg, seed=seed)
    by_tag = {}
    if with_tags:
        tags = sorted({tag for sessions in groups.values() for tag in sessions[0].tags})
        for tag in tags:
            sub = {q: s for q, s in groups.items() if tag in s[0].tags}
            by_tag[tag] = _skill_stats(skill, sub, skills, seed, with_tags=False)
    return SkillStats(skill=skill, should_fire=len(pos), should_not=len(neg), by_tag=by_tag, **figures)


def _query_rate(sessions: Sequence[Trial], skills: Sequence[str]) -> QueryRate:
    first = sessions[0]
    counted = [t for t in sessions if t.counted]
    expected = first.expect or NONE
    if first.expect is None:
        hits = sum(1 for t in counted if any(s in skills for s in t.fired))
    else:
        hits = sum(1 for t in counted if first.expect in t.fired)
    fired: dict[str, int] = {}
    for t in counted:
        for s in t.fired:
            fired[s] = fired.get(s, 0) + 1
    return QueryRate(
        query_id=first.query_id,
        expect=expected,
        tags=first.tags,
        sessions=len(sessions),
        errors=sum(1 for t in sessions if t.status == TriggerStatus.ERROR),
        not_listed=sum(1 for t in sessions if t.status == TriggerStatus.NOT_LISTED),
        trigger=wilson(hits, len(counted)),
        correct=wilson(sum(1 for t in counted if routed(t, skills) == expected), len(counted)),
        fired=dict(sorted(fired.items())),
    )


def _routing(groups: dict[str, list[Trial]], skills: Sequence[str], seed: int) -> Routing:
    labels = (*skills, NONE)
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=int)
    per_query, collided, collisions, other = [], [], 0, 0
    for qid, sessions in groups.items():
        counted = [t for t in sessions if t.counted]
        if not counted:
            continue
        expected = sessions[0].expect or NONE
        hits = 0
        for t in counted:
            got = routed(t, skills)
            if expected in index:
                matrix[index[expected], index[got]] += 1
            hits += got == expected
            if sum(1 for s in t.fired if s in skills) >= 2:
                collisions += 1
                collided.append(qid)
            other += any(s not in skills for s in t.fired)
        per_query.append(hits / len(counted))
    acc = np.asarray(per_query, float)
    low = high = None
    if acc.size >= 2:
        rng = np.random.default_rng(seed)
        low, high = _interval(_resample(acc, rng, BOOTSTRAP_DRAWS).mean(axis=1))
    return Routing(
        labels=labels,
        confusion=tuple(tuple(int(v) for v in row) for row in matrix),
        accuracy=Estimate(
            value=float(acc.mean()) if acc.size else None, low=low, high=high, queries=acc.size
        ),
        collisions=collisions,
        collision_queries=tuple(dict.fromkeys(collided)),
        other_fired=other,
    )


def _variant_of(trials: Sequence[Trial], variant: str | None) -> tuple[str, list[Trial]]:
    names = list(dict.fromkeys(t.variant for t in trials))
    if variant is None:
        if len(names) > 1:
            raise ValueError(
                f"trials of several variants ({', '.join(names)}): name the variant to summarise"
            )
        variant = names[0] if names else DEFAULT_VARIANT
    return variant, [t for t in trials if t.variant == variant]


# ---------------------------------------------------------------- summary


def summarize(
    trials: Sequence[Trial], skills: Sequence[str], *, variant: str | None = None, seed: int = 0
) -> TriggerSummary:
    """Per-query rates, per-skill recall / false-fire / precision / F1 (overall and per tag) and
    routing, for one variant's trials. ``skills`` are the candidates, in the order reports show them."""
    variant, chosen = _variant_of(trials, variant)
    unknown = sorted({t.expect for t in chosen if t.expect is not None and t.expect not in skills})
    if unknown:
        raise ValueError(f"trials expect skills that are not candidates: {', '.join(unknown)}")
    groups = group_by_query(chosen)
    queries = tuple(_query_rate(sessions, skills) for sessions in groups.values())
    return TriggerSummary(
        variant=variant,
        skills=tuple(skills),
        sessions=len(chosen),
        counted=sum(1 for t in chosen if t.counted),
        errors=sum(1 for t in chosen if t.status == TriggerStatus.ERROR),
        not_listed=sum(1 for t in chosen if t.status == TriggerStatus.NOT_LISTED),
        dropped_queries=tuple(q.query_id for q in queries if q.trigger.n == 0),
        queries=queries,
        per_skill=tuple(_skill_stats(s, groups, skills, seed, with_tags=True) for s in skills),
        routing=_routing(groups, skills, seed),
        seed=seed,
        listing=listing_figures(chosen, skills),
    )


def listing_figures(trials: Sequence[Trial], skills: Sequence[str]) -> ListingFigures | None:
    """Per skill, how the counted sessions whose request was read listed it, and its firing rate on
    its should-fire queries in each state: a skill whose description was dropped could not be chosen,
    which is not the same finding as a skill the model passes over."""
    seen = [t for t in trials if t.counted and t.listing is not None]
    if not seen:
        return None
    stats = []
    for skill in skills:
        states = [t.listed_as(skill) for t in seen]
        recall_when = {}
        for state in ListingState:
            own = [skill in t.fired for t in seen if t.expect == skill and t.listed_as(skill) == state]
            if own:
                recall_when[str(state)] = wilson(sum(own), len(own))
        stats.append(
            ListingStats(
                skill=skill,
                sessions=len(seen),
                recall_when=recall_when,
                **{str(state): states.count(state) for state in ListingState},
            )
        )
    budgets = [t.listing_budget for t in seen if t.listing_budget]
    return ListingFigures(
        sessions=len(seen),
        chars=max(t.listing_chars or 0 for t in seen),
        budget=max(set(budgets), key=budgets.count) if budgets else None,
        # a candidate's description dropped: the CLI lists some entries by name by design, not for the budget
        over_budget=sum(1 for t in seen if any(t.listed_as(s) == ListingState.DROPPED for s in skills)),
        skills=tuple(stats),
    )


class ListingShift(Frozen):
    """A skill listed with its description in most sessions of the control and without it (cut or
    dropped) in most sessions of the treatment: adding the new skill pushed it out."""

    skill: str
    control: str
    treatment: str
    full_before: float  # share of sessions that listed its whole description
    full_after: float


def listing_shifts(control: TriggerSummary, treatment: TriggerSummary) -> list[ListingShift]:
    before = {s.skill: s for s in control.listing.skills} if control.listing else {}
    out = []
    for after in treatment.listing.skills if treatment.listing else ():
        was = before.get(after.skill)
        if was is None or not was.sessions or not after.sessions:
            continue
        share_before, share_after = was.full / was.sessions, after.full / after.sessions
        if share_before > 0.5 >= share_after and after.absent < after.sessions:
            out.append(
                ListingShift(
                    skill=after.skill,
                    control=control.variant,
                    treatment=treatment.variant,
                    full_before=share_before,
                    full_after=share_after,
                )
            )
    return out
