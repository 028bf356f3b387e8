"""The grading task's stream of outputs (tasks/grade.py): graded as they come, in a thread, until closed."""

from __future__ import annotations

import threading

import pytest

import tasks.grade
from executors.schema import RunResult
from graders.schema import AssertionResult, Sample
from tasks.grade import Outputs


def sample(i: int) -> Sample:
    return Sample.model_validate(
        {
            "sample_id": f"s{i}",
            "prompt": f"question {i}",
            "assertions": [{"type": "contains", "value": str(i)}],
        }
    )


def answer(text: str) -> RunResult:
    return RunResult(ok=True, output=text)


def test_every_output_put_is_graded_once_closed() -> None:
    outputs = Outputs()
    outputs.put("a", sample(1), answer("1"))
    outputs.put("b", sample(2), answer("three"))
    outputs.close()
    graded = outputs.grade_all().by_key
    assert {k: [r.passed for r in v] for k, v in graded.items()} == {"a": [True], "b": [False]}


def test_a_stopped_run_grades_nothing_after_the_check_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    grade_one = tasks.grade.grade_one

    def slow_first(s: Sample, result: RunResult) -> list[AssertionResult]:
        if s.sample_id == "s1":  # a custom check that takes its time
            started.set()
            release.wait(10)
        return grade_one(s, result)

    monkeypatch.setattr(tasks.grade, "grade_one", slow_first)
    outputs = Outputs()
    found: dict[str, list[AssertionResult]] = {}
    thread = threading.Thread(target=lambda: found.update(outputs.grade_all().by_key))
    thread.start()
    for i in (1, 2, 3):
        outputs.put(f"k{i}", sample(i), answer(str(i)))
    assert started.wait(10)
    outputs.close(abandon=True)
    release.set()
    thread.join(10)
    assert not thread.is_alive() and list(found) == ["k1"]
