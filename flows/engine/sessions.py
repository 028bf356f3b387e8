"""Agentic sessions: where each runs (outside the project), the contamination check, and the seed's
per-session output files (response.json, transcript.json, meta.json)."""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from executors.agent import read_events
from executors.schema import AgentSession
from graders.agent_task import AgentTask
from tasks.files import atomic_write_json
from tasks.schema import Arm

#: The arms in the order sessions of a task are scheduled.
ARMS = (Arm.WITH_SKILL, Arm.BASELINE)


@dataclass(frozen=True)
class Session:
    task: AgentTask
    index: int
    run: int
    mode: Arm
    sandbox: Path  # where the agent works: outside the project (see isolation_root)
    home: Path
    outputs: Path
    grades: Path
    archive: Path  # the seed's results/sandbox/... copy of the sandbox, made after grading

    @property
    def label(self) -> str:
        return f"{self.task.task_id} · {self.mode} · run {self.run}"


def isolation_root() -> Path:
    """Sessions run outside the project: Claude Code also reads .claude/skills (and CLAUDE.md) of
    every parent folder, so a sandbox under the project would hand the baseline the skill. (The
    seed's layout, sandboxes under ./skill-bench/results, has exactly this leak.) The path is
    random and neutral: the working directory is part of the agent's system prompt, so it must not
    carry the skill's name."""
    return Path(tempfile.gettempdir()) / "skillab-sandboxes" / secrets.token_hex(6)


def plan_sessions(tasks: list[AgentTask], results: Path, runs: int, isolated: Path) -> list[Session]:
    """The seed's tree; the run-N level only when runs > 1. Arms of a task run side by side."""
    out = []
    for run in range(1, runs + 1):
        for index, task in enumerate(tasks, start=1):
            for mode in ARMS:
                level = Path(f"task-{index:02d}") / (f"run-{run}" if runs > 1 else "")
                out.append(
                    Session(
                        task,
                        index,
                        run,
                        mode,
                        sandbox=isolated / "sandbox" / level / mode,
                        home=isolated / "home" / level / mode,
                        outputs=results / "outputs" / level / mode,
                        grades=results / "grades" / level,
                        archive=results / "sandbox" / level / mode,
                    )
                )
    return out


def contamination(session: AgentSession, mode: Arm, skill: str) -> str | None:
    """The init event must list the skill in the with-skill arm and must not in the baseline."""
    listed = session.skills_listed
    if mode == Arm.WITH_SKILL and listed is not None and skill not in listed:
        return f"the with-skill session's init event does not list {skill!r}"
    if mode == Arm.BASELINE and listed is not None and skill in listed:
        return f"the baseline session's init event lists {skill!r}"
    if mode == Arm.BASELINE and session.skill_invoked:
        return f"the baseline session invoked {skill!r}"
    return None


def write_outputs(s: Session, session: AgentSession, skill: str, contaminated: str | None) -> None:
    raw = read_events(s.outputs / "raw_stream.jsonl")
    results = [e for e in raw if e.get("type") == "result"]
    atomic_write_json(s.outputs / "response.json", results[-1] if results else {"error": session.error})
    atomic_write_json(s.outputs / "transcript.json", raw)
    meta = {
        **session.meta,
        "skill_name": skill,
        "mode": s.mode,
        "status": session.status,
        "ok": session.ok,
        "error": session.error,
        "exit_code": session.exit_code,
        "wall_ms": round(session.duration_ms),
        "skills_listed": list(session.skills_listed) if session.skills_listed is not None else None,
        "skill_invoked": session.skill_invoked,
        "contaminated": contaminated,
    }
    atomic_write_json(s.outputs / "meta.json", meta)
