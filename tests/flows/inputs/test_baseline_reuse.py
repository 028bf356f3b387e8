"""What decides a baseline session, for its reuse: not the run's random folders, everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from executors.schema import AgentRequest
from flows.modes.agentic.plan import Session, plan_sessions
from flows.modes.agentic.reuse import Reuse, baseline_key
from graders.agent_task import parse_task
from tasks.schema import Arm
from tests.graders.test_agentic import TASK


def request(s: Session, **change: object) -> AgentRequest:
    fields: dict[str, object] = {
        "cli": "claude",
        "model": "claude-sonnet-4",
        "prompt": "Create calc.py",
        "sandbox": str(s.sandbox),
        "home": str(s.home),
        "raw_stream": str(s.outputs / "raw_stream.jsonl"),
    }
    return AgentRequest.model_validate(fields | change)


def test_the_key_ignores_the_random_folders_and_sees_everything_else(tmp_path: Path) -> None:
    task = parse_task(TASK, "task-01")
    first, second = (
        next(p for p in plan_sessions([task], tmp_path / r, 2, tmp_path / iso) if p.mode == Arm.BASELINE)
        for r, iso in (("r1", "a1b2c3d4e5f6"), ("r2", "0f9e8d7c6b5a"))
    )
    assert first.sandbox != second.sandbox
    key = baseline_key(first, request(first), "2.1.332", "http://127.0.0.1:9")
    assert key == baseline_key(second, request(second), "2.1.332", "http://127.0.0.1:9")
    assert key != baseline_key(first, request(first), "2.1.333", "http://127.0.0.1:9")  # a new CLI
    assert key != baseline_key(first, request(first), "2.1.332", "http://127.0.0.1:8")  # another endpoint
    assert key != baseline_key(first, request(first, model="claude-opus-4"), "2.1.332", "http://127.0.0.1:9")
    assert key != baseline_key(first, request(first, max_turns=3), "2.1.332", "http://127.0.0.1:9")
    later = next(p for p in plan_sessions([task], tmp_path / "r1", 2, tmp_path / "x") if p.run == 2)
    assert key != baseline_key(later, request(later), "2.1.332", "http://127.0.0.1:9")  # run 2 is its own


def test_nothing_is_reused_when_turned_off_or_the_cli_version_is_unknown(tmp_path: Path) -> None:
    assert Reuse.of(False, tmp_path / "skill-1", "2.1.332") is None
    assert Reuse.of(True, tmp_path / "skill-1", None) is None
    reuse = Reuse.of(True, tmp_path / "skill-1", "2.1.332")
    assert reuse is not None and reuse.origin == "skill-1"
    assert reuse.cache.root == tmp_path / ".cache" / "baseline"


def test_the_key_covers_every_byte_a_session_can_see(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file in a case's subfolder (an input its scaffold reads), an input folder's content, a
    folder the session may read, the environment snapshot and the CLI's own switches: a change to
    any of them is a new baseline."""
    case = tmp_path / "case"
    (case / "fixtures").mkdir(parents=True)
    (case / "fixtures" / "input.csv").write_text("a,b\n1,2\n")
    inputs = tmp_path / "skill"
    (inputs / "evals" / "files").mkdir(parents=True)
    (inputs / "evals" / "files" / "form.txt").write_text("v1")
    readable, environment = tmp_path / "docs", tmp_path / "env"
    readable.mkdir()
    (readable / "notes.md").write_text("v1")
    (environment / "home").mkdir(parents=True)
    (environment / "home" / "CLAUDE.md").write_text("v1")
    task = parse_task(TASK, "task-01").model_copy(
        update={"case_dir": str(case), "input_root": str(inputs), "input_files": ("evals/files",)}
    )
    s = next(p for p in plan_sessions([task], tmp_path / "r1", 1, tmp_path / "iso") if p.mode == Arm.BASELINE)
    fields = {"add_dirs": (str(readable),), "environment": str(environment)}

    def key() -> str:
        return baseline_key(s, request(s, **fields), "2.1.332", "http://127.0.0.1:9")

    first = key()
    assert key() == first
    seen = {first}
    for path in (
        case / "fixtures" / "input.csv",
        inputs / "evals" / "files" / "form.txt",
        readable / "notes.md",
        environment / "home" / "CLAUDE.md",
    ):
        path.write_text(path.read_text() + "changed")
        assert key() not in seen, path
        seen.add(key())
    (case / "fixtures" / "input.csv").chmod(0o755)  # a mode bit is seen too
    assert key() not in seen
    seen.add(key())
    monkeypatch.setenv("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-9")  # a switch passed on
    assert key() not in seen
