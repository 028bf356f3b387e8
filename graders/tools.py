"""oh-my-knowledge's assertions on how an answer was produced: turns, tool calls, mock hits.

They read what the observation carries of the run: ``num_turns`` and ``tool_calls`` (an agent
session's), ``mock_hits`` (per ``Tool:N`` mock). A sample-mode call is one turn with no tool call
and no mock, as oh-my-knowledge's API executors report it, so ``tools_called`` fails there and
``tools_not_called`` passes. Tool names compare case-insensitively; ``value`` of the
``tool_*_contains`` types is ``Tool:needle`` (needle case-insensitive, the input as compact JSON).
"""

from __future__ import annotations

import json
import math
from typing import Any

from graders.schema import (
    CountAssertion,
    ListAssertion,
    MockHitAssertion,
    Observation,
    Outcome,
    ToolTextAssertion,
)


def turns_max(a: CountAssertion, obs: Observation) -> Outcome:
    turns = math.inf if obs.num_turns is None else obs.num_turns
    return turns <= float(a.value), f"{turns:g} turn(s)"


def turns_min(a: CountAssertion, obs: Observation) -> Outcome:
    turns = 0 if obs.num_turns is None else obs.num_turns
    return turns >= float(a.value), f"{turns} turn(s)"


def _names(obs: Observation) -> list[str]:
    return [call.tool.lower() for call in obs.tool_calls]


def tools_called(a: ListAssertion, obs: Observation) -> Outcome:
    missing = [v for v in a.values if v.lower() not in _names(obs)]
    return not missing, f"not called: {missing}" if missing else ""


def tools_not_called(a: ListAssertion, obs: Observation) -> Outcome:
    called = [v for v in a.values if v.lower() in _names(obs)]
    return not called, f"called: {called}" if called else ""


def tools_count_max(a: CountAssertion, obs: Observation) -> Outcome:
    return len(obs.tool_calls) <= float(a.value), f"{len(obs.tool_calls)} tool call(s)"


def tools_count_min(a: CountAssertion, obs: Observation) -> Outcome:
    return len(obs.tool_calls) >= float(a.value), f"{len(obs.tool_calls)} tool call(s)"


def split_tool_value(value: Any) -> tuple[str, str] | None:
    """``"Tool:needle"`` -> (tool, needle), lower-cased; None without a tool before the colon."""
    text = str(value)
    sep = text.find(":")
    if sep <= 0:
        return None
    return text[:sep].lower(), text[sep + 1 :].lower()


def _compact_json(value: Any) -> str:
    return json.dumps(value if value else "", separators=(",", ":"), ensure_ascii=False)


def tool_output_contains(a: ToolTextAssertion, obs: Observation) -> Outcome:
    parts = split_tool_value(a.value)
    if parts is None:
        return False, f"value {a.value!r} is not Tool:text"
    tool, needle = parts
    ok = any(c.tool.lower() == tool and needle in str(c.output or "").lower() for c in obs.tool_calls)
    return ok, "" if ok else f"no {tool} call returned {needle!r}"


def _input_has(obs: Observation, tool: str, needle: str) -> bool:
    return any(c.tool.lower() == tool and needle in _compact_json(c.input).lower() for c in obs.tool_calls)


def tool_input_contains(a: ToolTextAssertion, obs: Observation) -> Outcome:
    parts = split_tool_value(a.value)
    if parts is None:
        return False, f"value {a.value!r} is not Tool:text"
    ok = _input_has(obs, *parts)
    return ok, "" if ok else f"no {parts[0]} call was given {parts[1]!r}"


def tool_input_not_contains(a: ToolTextAssertion, obs: Observation) -> Outcome:
    parts = split_tool_value(a.value)
    if parts is None:  # no tool named: nothing can match, so the "must not" holds
        return True, ""
    ok = not _input_has(obs, *parts)
    return ok, "" if ok else f"a {parts[0]} call was given {parts[1]!r}"


def mock_hit(a: MockHitAssertion, obs: Observation) -> Outcome:
    if obs.mock_hits is None:
        return False, "no mock ran (a sample-mode call uses no tools)"
    hits = obs.mock_hits.get(str(a.value), 0)
    least = 1 if a.threshold is None else a.threshold
    return hits >= least, f"{a.value} hit {hits} time(s) (min {least:g})"
