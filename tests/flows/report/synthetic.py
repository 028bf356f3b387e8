"""Reports made in-process from synthetic records: the report layer tested without Prefect."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from executors.registry import get_executor
from executors.schema import ErrorKind, RunResult
from flows.inputs.options import BenchOptions
from flows.inputs.plan import Target
from flows.inputs.samples import Variant
from flows.modes.sample.build import blind_labels, build_report, relabel
from flows.modes.sample.model import SampleReport
from flows.modes.sample.prepare import Prepared
from flows.report.build import new_report_id
from graders.registry import parse
from graders.schema import AssertionResult, Grade, JudgeResult, Sample
from tasks.schema import SAMPLE_SCALE, Record, RunStats
from tasks.stats.aggregate import aggregate

STARTED = dt.datetime(2026, 11, 1, 3, 0, tzinfo=dt.UTC)


def record(sample_id: str, variant: str, score: float, run: int = 1, output: str = "o") -> Record:
    passed = score >= 3
    grade = Grade(
        assertions=(AssertionResult(assertion=parse(dict(type="contains", value="x"), "."), passed=passed),),
        assertion_score=score,
        judge=JudgeResult(),
        composite=score,
    )
    return Record(
        sample_id=sample_id, variant=variant, run=run, result=RunResult(ok=True, output=output), grade=grade
    )


def prepared(tmp: Path, samples: list[Sample], names: list[str], **options: object) -> Prepared:
    path = tmp / "eval-samples.json"
    path.write_text("[]", encoding="utf-8")
    target = Target(get_executor("openai"), "gpt-4o-mini", "http://127.0.0.1:9/v1")
    variants = [Variant(n, f"artifact {n}", f"skills/{n}.md") for n in names]
    opts = BenchOptions(variants=tuple(names), **options)  # type: ignore[arg-type]
    return Prepared(opts, path, samples, variants, names[0], target, [])


def make_report(
    tmp: Path,
    scores: dict[str, list[float]],
    *,
    suite: str | None = None,
    blind: bool = False,
    started: dt.datetime = STARTED,
    prompts: dict[int, str] | None = None,
    errors: dict[str, dict[int, str]] | None = None,
    repeat: int = 1,
) -> SampleReport:
    """A sample-mode report: ``scores`` gives each variant's score per case (cases s0, s1, ...), the
    same in each of ``repeat`` runs; ``errors``: variant -> case index -> the error its first run
    failed with instead."""
    names = list(scores)
    n = len(next(iter(scores.values())))
    samples = [Sample(sample_id=f"s{i}", prompt=(prompts or {}).get(i, f"question {i}")) for i in range(n)]
    prep = prepared(tmp, samples, names, suite=suite, blind=blind, repeat=repeat)
    records = [
        record(f"s{i}", v, s, run)
        if run > 1 or (error := (errors or {}).get(v, {}).get(i)) is None
        else record(f"s{i}", v, s, run).model_copy(
            update={"result": RunResult(ok=False, error=error, error_kind=ErrorKind.PERMANENT), "grade": None}
        )
        for v, values in scores.items()
        for i, s in enumerate(values)
        for run in range(1, repeat + 1)
    ]
    report_id = new_report_id(started, names)
    labels = blind_labels(names, 0, report_id) if blind else {x: x for x in names}
    relabelled = relabel(records, labels)
    agg = aggregate(relabelled, samples, [labels[x] for x in names], labels[names[0]], SAMPLE_SCALE, seed=0)
    return build_report(prep, report_id, relabelled, agg, RunStats(), started, 1.0, labels)
