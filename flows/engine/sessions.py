"""Agentic sessions after they ran: the contamination check and the seed's per-session output files
(response.json, transcript.json, meta.json)."""

from __future__ import annotations

from executors.agent import read_events
from executors.schema import AgentSession
from flows.inputs.sessions import Session
from tasks.files import atomic_write_json
from tasks.schema import Arm


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
