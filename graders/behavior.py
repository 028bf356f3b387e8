"""Transcript analysis (behavior.json) from the event model the three CLIs share."""

from __future__ import annotations

import itertools
import json
import re

from executors.schema import AgentEvent, AgentSession
from graders.grades import Behavior

THRASH_RUN = 3


def _normalised(event: AgentEvent) -> str:
    return re.sub(r"\s+", " ", json.dumps(event.input or {}, sort_keys=True)).strip().lower()


def _target(event: AgentEvent) -> str:
    data = event.input or {}
    for key in ("file_path", "path", "command", "pattern", "url", "name"):
        if data.get(key):
            return str(data[key])
    return _normalised(event)


def analyze(session: AgentSession) -> Behavior:
    uses = [e for e in session.events if e.kind == "tool_use"]
    by_id = {e.tool_id: e for e in uses if e.tool_id}
    counts: dict[str, int] = {}
    for e in uses:
        counts[str(e.tool)] = counts.get(str(e.tool), 0) + 1
    thrashing, run, longest = False, 1, 1
    for prev, cur in itertools.pairwise(uses):
        run = run + 1 if (cur.tool, _normalised(cur)) == (prev.tool, _normalised(prev)) else 1
        longest = max(longest, run)
        thrashing = thrashing or run >= THRASH_RUN
    results = [e for e in session.events if e.kind == "tool_result"]
    errors = [(i, e) for i, e in enumerate(results) if e.is_error or (e.exit_code not in (0, None))]
    recovered = 0
    for i, err in errors:
        use = by_id.get(err.tool_id) if err.tool_id else None
        target = _target(use) if use else None
        for later in results[i + 1 :]:
            later_use = by_id.get(later.tool_id) if later.tool_id else None
            if (
                later.tool == err.tool
                and not later.is_error
                and later.exit_code in (0, None)
                and (target is None or (later_use is not None and _target(later_use) == target))
            ):
                recovered += 1
                break
    return Behavior(
        tool_calls=counts,
        total_tool_calls=len(uses),
        turns=session.meta.num_turns or sum(1 for e in session.events if e.kind == "text") or None,
        thrashing_detected=thrashing,
        longest_repeat=longest if uses else 0,
        errors_encountered=len(errors),
        errors_recovered=recovered,
        max_turns_hit=session.status == "max_turns",
        permission_denials=len(session.meta.permission_denials),
        questions_asked=sum(1 for u in session.conversation if u.kind == "question"),
        user_answers=sum(1 for u in session.conversation if u.kind == "answer"),
        permissions_refused=sum(1 for u in session.conversation if u.decision == "deny"),
        user_calls=session.meta.user_calls,
        user_cost_usd=session.meta.user_cost_usd,
        skill_invoked=session.skill_invoked,
        skills_invoked=list(session.meta.skills_invoked),
        api_errors=sum(1 for e in session.events if e.kind == "error"),
    )
