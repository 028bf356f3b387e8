"""The queries file of a trigger benchmark: prompts, each saying which skill should fire (or none).

YAML or JSON (by extension), either a list of queries or ``{queries: [...]}``::

    - id: csv-1
      query: "Summarise the columns of data.csv"   # or: text
      expect: csv-insights                          # a skill name, or none
      tags: [paraphrase]                            # optional: paraphrase, near-miss, ...

skill-creator's trigger eval set is read too: a JSON list of ``{"query": ..., "should_trigger": true|false}``
(what its ``run_eval.py --eval-set`` reads). There a query's id is its position (1, 2, ...) and
``should_trigger`` expects the skill under test (:data:`UNDER_TEST`, named once the run knows it) or
none.

Every problem is one line naming the file, the query (its id, else its position) and the field, raised
as :class:`InputError` together; a file that matches neither format says which were tried and what
its first entry lacks for the closer one. :func:`split` makes the seeded, stratified train/holdout split a
description A/B needs to detect overfitting; its :meth:`Split.record` goes into the report.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from executors.errors import InputError, warn
from executors.parsing import JsonObject
from executors.schema import Frozen, OneLine
from graders.loading import closest, parse_data

NONE = "none"  # the spelling of "no skill should fire" in the file and in reports
FIELDS = ("id", "query", "text", "expect", "tags")
#: What a skill-creator trigger set expects where ``should_trigger`` is true, until the run names the
#: skill under test (:func:`resolve_under_test`).
UNDER_TEST = "<the skill under test>"
SKILL_CREATOR_FIELDS = ("query", "should_trigger")


class Query(Frozen):
    """One prompt and the skill that should fire on it (``expect`` None: no skill should)."""

    id: OneLine = Field(min_length=1)
    query: str = Field(min_length=1)
    expect: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def expected(self) -> str:
        """``expect`` as reports spell it: the skill name or ``none``."""
        return self.expect or NONE

    @property
    def should_fire(self) -> bool:
        return self.expect is not None


class QuerySet(Frozen):
    """The queries of one file, with the file's sha256 (recorded so runs stay comparable)."""

    path: str
    sha256: str
    queries: tuple[Query, ...]

    @property
    def skills(self) -> tuple[str, ...]:
        """Every skill some query expects, in order of first mention."""
        return tuple(dict.fromkeys(q.expect for q in self.queries if q.expect))

    def by_id(self) -> dict[str, Query]:
        return {q.id: q for q in self.queries}


def _one_query(raw: JsonObject, prefix: str) -> tuple[Query | None, list[str]]:
    problems = []
    for key in raw:
        if str(key) not in FIELDS:
            problems.append(f"{prefix}: {key}: unknown field{closest(str(key), FIELDS)}")
    if "query" in raw and "text" in raw:
        problems.append(f"{prefix}: text: give either query or text, not both")
    text = raw.get("query", raw.get("text"))
    if text is None:
        problems.append(f"{prefix}: query: required field missing")
    elif not isinstance(text, str) or not text.strip():
        problems.append(f"{prefix}: query: must be a non-empty string (got {text!r})")
    if "expect" not in raw:
        problems.append(f"{prefix}: expect: required field missing (a skill name, or {NONE})")
    expect = raw.get("expect")
    if isinstance(expect, str) and expect.strip().lower() == NONE:
        expect = None
    elif expect is not None and (not isinstance(expect, str) or not expect.strip()):
        problems.append(f"{prefix}: expect: must be a skill name or {NONE} (got {expect!r})")
    tags = raw.get("tags", ())
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) and t.strip() for t in tags):
        problems.append(f"{prefix}: tags: must be a list of non-empty strings (got {tags!r})")
    if problems:
        return None, problems
    try:
        return (
            Query(
                id=str(raw["id"]),
                query=str(text),
                expect=expect.strip() if isinstance(expect, str) else None,
                tags=tuple(dict.fromkeys(t.strip() for t in tags)),
            ),
            [],
        )
    except ValidationError as exc:  # only reachable through a constraint the checks above missed
        return None, [f"{prefix}: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]


def _skill_creator_set(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(r, dict) and "should_trigger" in r for r in data)
    )


def _skill_creator_queries(data: list[JsonObject], source: str) -> tuple[Query, ...]:
    problems = []
    queries = []
    for index, raw in enumerate(data, start=1):
        prefix = f"{source}: query {index} (skill-creator trigger set)"
        text, fires = raw.get("query"), raw.get("should_trigger")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{prefix}: query: must be a non-empty string (got {text!r})")
        elif not isinstance(fires, bool):
            problems.append(f"{prefix}: should_trigger: must be true or false (got {fires!r})")
        else:
            queries.append(Query(id=str(index), query=text, expect=UNDER_TEST if fires else None))
    if problems:
        raise InputError(problems)
    # skill-creator reads these two keys and passes over the rest (a _comment, its runner's outputs)
    extra = sorted({str(k) for raw in data for k in raw} - set(SKILL_CREATOR_FIELDS))
    if extra:
        warn(
            f"{source}: ignored key(s) {', '.join(extra)} (a skill-creator trigger set is read for query and should_trigger)"
        )
    return tuple(queries)


def _no_format(data: list[Any], source: str) -> str | None:
    """One line when the first entry fits neither format, naming what it lacks for the closer one."""
    first = data[0] if data else None
    if not isinstance(first, dict):
        return None
    lacks = {
        "skillab's queries (id, query, expect)": [k for k in ("id", "expect") if k not in first]
        + ([] if "query" in first or "text" in first else ["query"]),
        "skill-creator's trigger set (query, should_trigger)": [
            k for k in SKILL_CREATOR_FIELDS if k not in first
        ],
    }
    if all(lacks.values()):
        name, missing = min(lacks.items(), key=lambda kv: len(kv[1]))
        return (
            f"{source}: matches no queries format (tried {' and '.join(lacks)}); the first entry is closest "
            f"to {name} but lacks {', '.join(missing)}"
        )
    return None


def parse_queries(data: Any, source: str) -> tuple[Query, ...]:
    """The queries of already-parsed file contents; every problem at once, as one InputError."""
    if _skill_creator_set(data):
        return _skill_creator_queries(data, source)
    if isinstance(data, list) and (line := _no_format(data, source)):
        raise InputError(line)
    if isinstance(data, dict):
        extra = [k for k in data if k != "queries"]
        if extra:
            raise InputError(f"{source}: {extra[0]}: unknown top-level key (expected only 'queries')")
        data = data.get("queries")
    if not isinstance(data, list):
        raise InputError(
            f"{source}: expected a list of queries or {{queries: [...]}}, got {type(data).__name__}"
        )
    problems: list[str] = []
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(data):
        position = f"query #{index + 1}"
        if not isinstance(raw, dict):
            problems.append(f"{source}: {position}: expected a mapping, got {type(raw).__name__}")
            continue
        qid = raw.get("id")
        if qid is None:
            problems.append(f"{source}: {position}: id: required field missing")
            continue
        if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
            problems.append(f"{source}: {position}: id: must be a non-empty string (got {qid!r})")
            continue
        qid = str(qid).strip()
        prefix = f"{source}: query {qid}"
        if qid in seen:
            problems.append(f"{prefix}: id: duplicate of query #{seen[qid] + 1}")
            continue
        seen[qid] = index
        query, found = _one_query({**raw, "id": qid}, prefix)
        problems += found
        if query is not None:
            queries.append(query)
    if problems:
        raise InputError(problems)
    if not queries:
        raise InputError(f"{source}: no queries")
    return tuple(queries)


def load_queries(path: str | Path) -> QuerySet:
    """Read, validate and hash a queries file; raise InputError with one line per problem."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = parse_data(path, raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{path}: cannot read: not UTF-8 text") from None
    queries = parse_queries(data, str(path))
    return QuerySet(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), queries=queries)


def resolve_under_test(queries: QuerySet, skills: Sequence[str], source: str) -> QuerySet:
    """A skill-creator trigger set's "should trigger" as the skill under test, which it does not
    name: the run must have exactly one candidate skill to tell."""
    if not any(q.expect == UNDER_TEST for q in queries.queries):
        return queries
    names = list(dict.fromkeys(skills))
    if len(names) != 1:
        raise InputError(
            f"{source}: a skill-creator trigger set names no skill (should_trigger only): run it with one "
            f"--skill, not {len(names)} ({', '.join(names)})"
        )
    return queries.model_copy(
        update={
            "queries": tuple(
                q.model_copy(update={"expect": names[0]}) if q.expect == UNDER_TEST else q
                for q in queries.queries
            )
        }
    )


def check_expectations(queries: Sequence[Query], installed: Iterable[str], source: str) -> None:
    """Every ``expect`` must name an installed skill (the names the CLI lists them by) or none."""
    names = list(dict.fromkeys(installed))
    listing = ", ".join(names) if names else "none"
    if NONE in names:
        raise InputError(f"{source}: skill {NONE!r}: the name means 'no skill should fire'; rename the skill")
    problems = [
        f"{source}: query {q.id}: expect: no installed skill {q.expect!r}{closest(q.expect, names)} "
        f"(installed: {listing}; {NONE!r} means no skill should fire)"
        for q in queries
        if q.expect is not None and q.expect not in names
    ]
    if problems:
        raise InputError(problems)


def dump_queries(queries: Iterable[Query]) -> str:
    """YAML text of queries that :func:`load_queries` reads back unchanged (``generate`` writes it)."""
    rows = []
    for q in queries:
        row: JsonObject = {"id": q.id, "query": q.query, "expect": q.expected}
        if q.tags:
            row["tags"] = list(q.tags)
        rows.append(row)
    return yaml.safe_dump({"queries": rows}, sort_keys=False, allow_unicode=True, width=100)


# ---------------------------------------------------------------- holdout split


def stratum(query: Query) -> str:
    """The split's stratum: the expected skill and the (sorted) tags, e.g. ``csv-insights|near-miss``."""
    return "|".join([query.expected, *sorted(query.tags)])


@dataclass(frozen=True)
class Split:
    """A train/holdout split; unpacks as ``train, holdout``."""

    train: tuple[Query, ...]
    holdout: tuple[Query, ...]
    fraction: float
    seed: int

    def __iter__(self) -> Iterator[tuple[Query, ...]]:
        yield self.train
        yield self.holdout

    def part(self, query_id: str) -> str:
        """``train`` or ``holdout``."""
        return "holdout" if query_id in {q.id for q in self.holdout} else "train"

    def record(self) -> JsonObject:
        """What a report records so the split can be checked and repeated."""
        return {
            "method": "stratified by expect and tags, largest remainder, seeded",
            "fraction": self.fraction,
            "seed": self.seed,
            "train": [q.id for q in self.train],
            "holdout": [q.id for q in self.holdout],
        }


def _rng(seed: int, label: str) -> random.Random:
    # A digest, not hash(): the same split on every machine and Python run.
    return random.Random(int.from_bytes(hashlib.sha256(f"{seed}\0{label}".encode()).digest()[:8], "big"))


def split(queries: Sequence[Query], fraction: float, seed: int) -> Split:
    """Hold out ``round(fraction * n)`` queries, spread over the strata (expect, tags) in proportion.

    Each stratum gets the floor of its share; the remaining places go to the strata with the largest
    remainders (ties in a seeded order). Which queries of a stratum are held out is a seeded shuffle
    of its ids, so the split depends on the queries, the fraction and the seed, not on file order.
    """
    if not 0 <= fraction < 1:
        raise InputError(f"holdout fraction: must be at least 0 and below 1 (got {fraction!r})")
    groups: dict[str, list[Query]] = {}
    for q in sorted(queries, key=lambda q: q.id):
        groups.setdefault(stratum(q), []).append(q)
    total = round(fraction * len(queries))
    shares = {key: fraction * len(members) for key, members in groups.items()}
    take = {key: int(share) for key, share in shares.items()}
    order = sorted(groups)
    _rng(seed, "ties").shuffle(order)
    order.sort(key=lambda key: shares[key] - take[key], reverse=True)  # stable: ties keep the shuffle
    for key in order[: max(0, total - sum(take.values()))]:
        take[key] += 1
    held: set[str] = set()
    for key, members in groups.items():
        ids = [q.id for q in members]
        _rng(seed, key).shuffle(ids)
        held.update(ids[: take[key]])
    return Split(
        train=tuple(q for q in queries if q.id not in held),
        holdout=tuple(q for q in queries if q.id in held),
        fraction=fraction,
        seed=seed,
    )
