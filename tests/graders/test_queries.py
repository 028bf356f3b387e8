"""The queries file of trigger mode: loading, one-line errors, expectations, the holdout split."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from executors.errors import InputError
from graders.queries import (
    Query,
    check_expectations,
    dump_queries,
    load_queries,
    parse_queries,
    split,
    stratum,
)

YAML = """\
queries:
  - id: csv-1
    query: Summarise the columns of data.csv
    expect: csv-insights
    tags: [paraphrase]
  - id: csv-2
    text: What is in this spreadsheet?
    expect: csv-insights
  - id: 3
    query: Write a haiku about autumn
    expect: none
    tags: near-miss
  - id: pdf-1
    query: Fill in the form in tax.pdf
    expect: pdf-forms
    tags: [paraphrase, hard]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def lines_of(exc: pytest.ExceptionInfo[InputError]) -> list[str]:
    return exc.value.lines


def test_yaml_mapping_with_aliases_none_and_tags(tmp_path: Path) -> None:
    path = write(tmp_path, "queries.yaml", YAML)
    loaded = load_queries(path)
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [q.id for q in loaded.queries] == ["csv-1", "csv-2", "3", "pdf-1"]
    assert loaded.queries[1].query == "What is in this spreadsheet?"  # `text` is the same field
    assert loaded.queries[2].expect is None and loaded.queries[2].expected == "none"
    assert loaded.queries[2].tags == ("near-miss",)
    assert loaded.queries[3].tags == ("paraphrase", "hard")
    assert loaded.skills == ("csv-insights", "pdf-forms")
    assert not loaded.queries[2].should_fire and loaded.queries[0].should_fire


def test_json_list_gives_the_same_queries(tmp_path: Path) -> None:
    data = [
        {"id": "a", "query": "x", "expect": "s"},
        {"id": "b", "text": "y", "expect": None, "tags": ["near-miss"]},
    ]
    loaded = load_queries(write(tmp_path, "q.json", json.dumps(data)))
    assert loaded.queries == (
        Query(id="a", query="x", expect="s"),
        Query(id="b", query="y", expect=None, tags=("near-miss",)),
    )


def test_every_problem_is_one_line_naming_file_query_and_field(tmp_path: Path) -> None:
    text = """\
- id: ok
  query: fine
  expect: s
- id: ok
  query: again
  expect: s
- query: no id
  expect: s
- id: q4
  query: ""
  expect: s
- id: q5
  query: hi
- id: q6
  query: hi
  expect: s
  tag: [x]
- id: q7
  query: hi
  text: hi too
  expect: s
- id: q8
  query: hi
  expect: [a, b]
- just a string
"""
    path = write(tmp_path, "q.yaml", text)
    with pytest.raises(InputError) as exc:
        load_queries(path)
    assert lines_of(exc) == [
        f"{path}: query ok: id: duplicate of query #1",
        f"{path}: query #3: id: required field missing",
        f"{path}: query q4: query: must be a non-empty string (got '')",
        f"{path}: query q5: expect: required field missing (a skill name, or none)",
        f"{path}: query q6: tag: unknown field (did you mean 'tags'?)",
        f"{path}: query q7: text: give either query or text, not both",
        f"{path}: query q8: expect: must be a skill name or none (got ['a', 'b'])",
        f"{path}: query #9: expected a mapping, got str",
    ]
    assert all("\n" not in line for line in lines_of(exc))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("q.yaml", "queries: [\n  - id: a\n", "line 2: invalid YAML"),
        ("q.json", '[{"id": "a",}]', "line 1: invalid JSON"),
        ("q.yaml", "queries: []\nskills: [a]\n", "skills: unknown top-level key"),
        ("q.yaml", "just: text\n", "just: unknown top-level key"),
        ("q.yaml", "42\n", "expected a list of queries or {queries: [...]}, got int"),
        ("q.yaml", "[]\n", "no queries"),
    ],
)
def test_file_level_errors(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as exc:
        load_queries(path)
    assert len(lines_of(exc)) == 1 and lines_of(exc)[0].startswith(f"{path}: ")
    assert message in lines_of(exc)[0]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.yaml: file not found"):
        load_queries(tmp_path / "nope.yaml")


def test_expectations_must_name_installed_skills(tmp_path: Path) -> None:
    queries = parse_queries(
        [
            {"id": "a", "query": "x", "expect": "csv-insight"},
            {"id": "b", "query": "y", "expect": "none"},
            {"id": "c", "query": "z", "expect": "pdf-forms"},
        ],
        "q.yaml",
    )
    check_expectations(queries[1:], ["pdf-forms"], "q.yaml")
    with pytest.raises(InputError) as exc:
        check_expectations(queries, ["csv-insights", "pdf-forms"], "q.yaml")
    assert lines_of(exc) == [
        "q.yaml: query a: expect: no installed skill 'csv-insight' (did you mean 'csv-insights'?) "
        "(installed: csv-insights, pdf-forms; 'none' means no skill should fire)"
    ]


def many() -> list[Query]:
    out = []
    for skill, n in (("a", 10), ("b", 6), (None, 8)):
        for i in range(n):
            tags = ("near-miss",) if skill is None and i % 2 else ("paraphrase",) if i < 3 else ()
            out.append(Query(id=f"{skill}-{i}", query=f"q {skill} {i}", expect=skill, tags=tags))
    return out


def test_split_is_stratified_seeded_and_order_free() -> None:
    queries = many()
    train, holdout = split(queries, 0.25, seed=7)
    assert len(holdout) == round(0.25 * len(queries)) and len(train) + len(holdout) == len(queries)
    assert {q.id for q in train}.isdisjoint(q.id for q in holdout)
    # Each stratum is held out in proportion (floor or ceiling of its share).
    sizes, held = Counter(map(stratum, queries)), Counter(map(stratum, holdout))
    for key, size in sizes.items():
        assert int(size * 0.25) <= held[key] <= int(size * 0.25) + 1, key
    again = split(list(reversed(queries)), 0.25, seed=7)
    assert {q.id for q in again.holdout} == {q.id for q in holdout}
    other = {frozenset(q.id for q in split(queries, 0.25, seed=s).holdout) for s in range(8)}
    assert len(other) > 1  # the seed matters
    record = split(queries, 0.25, seed=7).record()
    assert record["seed"] == 7 and record["fraction"] == 0.25
    assert record["holdout"] == [q.id for q in holdout] and len(record["train"]) == len(train)
    assert split(queries, 0.25, seed=7).part(holdout[0].id) == "holdout"
    assert split(queries, 0.25, seed=7).part(train[0].id) == "train"


def test_split_edges() -> None:
    queries = many()
    assert split(queries, 0.0, seed=1).holdout == ()
    with pytest.raises(InputError, match="holdout fraction"):
        split(queries, 1.0, seed=1)
    singles = [Query(id=str(i), query="q", expect=f"s{i}") for i in range(10)]
    assert len(split(singles, 0.3, seed=3).holdout) == 3  # one-query strata still reach the fraction


def test_dump_round_trips(tmp_path: Path) -> None:
    original = load_queries(write(tmp_path, "queries.yaml", YAML))
    again = load_queries(write(tmp_path, "again.yaml", dump_queries(original.queries)))
    assert again.queries == original.queries


def test_a_skill_named_none_is_refused() -> None:
    with pytest.raises(InputError, match="'none': the name means 'no skill should fire'"):
        check_expectations([], ["none", "csv"], "q.yaml")
