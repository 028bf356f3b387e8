"""Custom assertions run in a child process: exceptions and hangs are grading errors, never crashes
and never a pass or a failure of the output."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders import confined
from graders.registry import parse, run_assertion
from graders.schema import Assertion, JudgeResult, Observation, Sample
from graders.scoring import make_grade


def write(tmp_path: Path, body: str) -> Assertion:
    (tmp_path / "check.py").write_text(body)
    return parse(dict(type="custom", fn="check.py", timeout_s=2), str(tmp_path))


def run(tmp_path: Path, a: Assertion, output: str = "hello world"):
    sample = Sample(sample_id="s1", prompt="p", source_dir=str(tmp_path), tags=("x",))
    return run_assertion(a, Observation(output=output, cost_usd=0.5, sample=sample))


def test_bool_and_dict_results_and_ctx(tmp_path: Path) -> None:
    a = write(
        tmp_path,
        "def check(output, ctx):\n"
        "    return {'pass': 'hello' in output and ctx['sample']['sample_id'] == 's1'"
        " and ctx['cost_usd'] == 0.5, 'message': 'ok', 'score': 0.75}\n",
    )
    result = run(tmp_path, a)
    assert result.passed and result.message == "ok" and result.score == 0.75
    a = write(tmp_path, "def check(output, ctx):\n    return False\n")
    assert not run(tmp_path, a).passed


def test_exception_is_a_grading_error_with_its_message(tmp_path: Path) -> None:
    a = write(tmp_path, "def check(output, ctx):\n    raise RuntimeError('boom here')\n")
    result = run(tmp_path, a)
    assert not result.passed and result.error and "RuntimeError: boom here" in result.message
    # `not` inverts a decision, never an error into a pass
    negated = parse(dict(type="custom", fn="check.py", timeout_s=2, **{"not": True}), str(tmp_path))
    flipped = run(tmp_path, negated)
    assert not flipped.passed and flipped.error


def test_a_grading_error_leaves_the_run_without_a_score(tmp_path: Path) -> None:
    broken = write(tmp_path, "def check(output, ctx):\n    raise RuntimeError('boom')\n")
    fine = parse(dict(type="contains", value="hello"), str(tmp_path))
    grade = make_grade([run(tmp_path, fine), run(tmp_path, broken)], JudgeResult(), judged=False)
    assert grade.composite is None and grade.assertion_score is None and grade.scored
    assert grade.grading_error is not None and "boom" in grade.grading_error


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("import time\ndef check(output, ctx):\n    time.sleep(60)\n", "timed out after 2s"),
        ("def check(output, ctx):\n    return 'yes'\n", "expected a bool"),
    ],
)
def test_a_hang_and_a_wrong_return_type_are_grading_errors(tmp_path: Path, source: str, said: str) -> None:
    result = run(tmp_path, write(tmp_path, source))
    assert not result.passed and result.error and said in result.message, result.message


def test_a_helper_module_beside_the_check_imports(tmp_path: Path) -> None:
    (tmp_path / "words.py").write_text("GREETING = 'hello'\n")
    a = write(
        tmp_path, "from words import GREETING\ndef check(output, ctx):\n    return GREETING in output\n"
    )
    result = run(tmp_path, a)
    assert result.passed and not result.error


def test_load_time_errors(tmp_path: Path) -> None:
    (tmp_path / "check.py").write_text("def check(output, ctx):\n    return True\n")
    for bad in (-1, 0, float("nan")):
        with pytest.raises(ValueError, match="timeout_s"):
            parse(dict(type="custom", fn="check.py", timeout_s=bad), str(tmp_path))
    with pytest.raises(ValueError, match="not found"):
        parse(dict(type="custom", fn="missing.py"), str(tmp_path))
    (tmp_path / "nocheck.py").write_text("def other(): pass\n")
    with pytest.raises(ValueError, match="defines no function check"):
        parse(dict(type="custom", fn="nocheck.py"), str(tmp_path))
    (tmp_path / "broken.py").write_text("def check(:\n")
    with pytest.raises(ValueError, match="syntax error at line 1"):
        parse(dict(type="custom", fn="broken.py"), str(tmp_path))


@pytest.mark.skipif(confined.isolation() != "bubblewrap", reason="bubblewrap cannot build a sandbox here")
def test_confined_to_its_folder_without_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check reads its own folder, but cannot write there, cannot see the host's files beside it
    (a private /tmp) and gets no credential from the environment."""
    folder = tmp_path / "suite"
    folder.mkdir()
    secret = tmp_path / "secret.txt"  # outside the check's folder, on the host
    secret.write_text("s3cret")
    (folder / "data.txt").write_text("mine")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    a = write(
        folder,
        "import os, pathlib\n"
        "def check(output, ctx):\n"
        "    here = pathlib.Path(__file__).parent\n"
        "    try:\n"
        "        (here / 'leak.txt').write_text('x')\n"
        "        wrote = True\n"
        "    except OSError:\n"
        "        wrote = False\n"
        f"    seen = pathlib.Path({str(secret)!r}).exists()\n"
        "    key = os.environ.get('OPENAI_API_KEY')\n"
        "    ok = (here / 'data.txt').read_text() == 'mine' and not wrote and not seen and key is None\n"
        "    return {'pass': ok, 'message': f'wrote={wrote} seen={seen} key={key}'}\n",
    )
    result = run(folder, a)
    assert result.passed, result.message
    assert not (folder / "leak.txt").exists()
