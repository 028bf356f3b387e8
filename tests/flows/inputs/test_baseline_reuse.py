"""What decides a baseline session, for its reuse: not the run's random folders, everything else."""

from __future__ import annotations

from pathlib import Path

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
