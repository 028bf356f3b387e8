"""Grading a Claude Code plugin eval case's runs: the evidence a run leaves (its tool calls, its
messages, its files), each deterministic grader's verdict on it, and the judge's prompt and votes
for the judged ones. The case itself is read by ``graders/plugin_eval.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from executors.parsing import JsonObject
from graders.grades import GraderResult
from graders.plugin_eval import (
    JUDGE_VOTES,
    BaselineGrader,
    FileExistsGrader,
    FileSource,
    Grader,
    JudgedGrader,
    LlmGrader,
    PluginCase,
    RegexGrader,
    Target,
    ToolOrderGrader,
    ToolRef,
    ToolUsedGrader,
    is_indicator,
    js_regex,
)
from graders.schema import Outcome
from graders.text import REGEX_TIMEOUT_S

# ----------------------------------------------------------------- evidence


def js_json(value: Any) -> str:
    """JSON.stringify's text of a value: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ToolCall:
    name: str
    input_text: str


@dataclass(frozen=True)
class RunEvidence:
    """What a finished session leaves to grade: its stream-json events, the paths it created
    (relative to the sandbox, '/'-separated) and a reader of one sandbox file (None: absent)."""

    events: Sequence[JsonObject]
    created_files: Sequence[str] = ()
    read_file: Callable[[str], bytes | None] = field(default=lambda _path: None)
    mock_calls: str | None = None  # the calls the case's MCP stand-ins answered (JSON lines); None: no mocks

    def tool_calls(self) -> list[ToolCall]:
        """Every tool_use block of every assistant message, subagents' included, in order."""
        out = []
        for e in self.events:
            if e.get("type") != "assistant":
                continue
            for block in (e.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    out.append(ToolCall(str(block.get("name") or ""), js_json(block.get("input"))))
        return out

    def last_message(self) -> str:
        """The text blocks of the last assistant message that has any."""
        last = ""
        for e in self.events:
            if e.get("type") != "assistant":
                continue
            content = (e.get("message") or {}).get("content") or []
            texts = [
                str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            ]
            if texts:
                last = "\n".join(texts)
        return last

    def trace(self) -> str:
        return "\n".join(js_json(e) for e in self.events)

    def text(self, target: Target) -> str | None:
        """The text a grader reads; None when the file named by a file target is missing."""
        if isinstance(target, FileSource):
            data = self.read_file(target.path)
            return None if data is None else data.decode("utf-8", errors="replace")
        if target == "last_message":
            return self.last_message()
        if target == "files":
            return "\n".join(self.created_files)
        if target == "trace":
            return self.trace()
        return self.mock_calls  # None: the case has no mocks


# ----------------------------------------------------------------- grading


def graders_for_arm(case: PluginCase, with_plugin: bool) -> list[tuple[Grader, bool]]:
    """(grader, with_only) of each grader that runs in this arm, as the official runner decides."""
    all_indicators = all(is_indicator(g) for g in case.graders)
    if all_indicators:
        return [(g, False) for g in case.graders]
    if not with_plugin:
        return [(g, False) for g in case.graders if not is_indicator(g)]
    return [(g, is_indicator(g)) for g in case.graders]


def glob_regex(glob: str) -> re.Pattern[str]:
    """file_exists's glob: ``**/`` any folders (or none), ``**`` anything, ``*`` within a folder."""
    out, i = "^", 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
            continue
        if glob.startswith("**", i):
            out, i = out + ".*", i + 2
            continue
        out += "[^/]*" if c == "*" else "." if c == "?" else re.escape(c)
        i += 1
    return re.compile(out + "$")


def _matches(call: ToolCall, ref: ToolRef) -> bool:
    if call.name != ref.tool:
        return False
    return (
        ref.input_match is None
        or js_regex(ref.input_match).search(call.input_text, timeout=REGEX_TIMEOUT_S) is not None
    )


def grade_deterministic(grader: Grader, run: RunEvidence, with_only: bool = False) -> GraderResult | None:
    """The verdict of a free grader on one run; None for a judged one (llm, baseline)."""
    import regex as engine

    error = True
    try:
        verdict = _verdict(grader, run)
        error = False
    except engine.error as exc:
        verdict = (False, f"grading error: invalid regular expression: {exc}")
    except TimeoutError:
        verdict = (False, f"grading error: pattern took too long (over {REGEX_TIMEOUT_S:g}s)")
    if verdict is None:
        return None
    passed, why = verdict
    return GraderResult(
        name=grader.name,
        type=grader.type,
        passed=passed,
        weight=grader.weight,
        explanation=why,
        with_only=with_only,
        error=error,
    )


def _verdict(grader: Grader, run: RunEvidence) -> Outcome | None:
    if isinstance(grader, RegexGrader):
        return _regex_verdict(grader, run)
    if isinstance(grader, ToolUsedGrader):
        count = sum(
            1
            for c in run.tool_calls()
            if _matches(c, ToolRef(tool=grader.tool, input_match=grader.input_match))
        )
        low, high = 1 if grader.min is None else grader.min, grader.max
        passed = count >= low and (high is None or count <= high)
        return passed, f"{grader.tool} called {count}x (expected {low}..{'∞' if high is None else high})"
    if isinstance(grader, ToolOrderGrader):
        calls = run.tool_calls()
        first = next((i for i, c in enumerate(calls) if _matches(c, grader.before)), -1)
        second = next((i for i, c in enumerate(calls) if _matches(c, grader.after)), -1)
        if first < 0:
            return False, f'"before" tool {grader.before.tool} never called'
        if second < 0:
            return False, f'"after" tool {grader.after.tool} never called'
        ok = first < second
        return (
            ok,
            f"{grader.before.tool}@{first} {'precedes' if ok else 'does NOT precede'} {grader.after.tool}@{second}",
        )
    if isinstance(grader, FileExistsGrader):
        glob = glob_regex(grader.path)
        found = any(glob.match(p.strip()) for p in run.created_files if p.strip())
        if found == grader.exists:
            return True, f"{grader.path} {'exists' if grader.exists else 'absent'} as expected"
        return (
            False,
            f"{grader.path} {'exists' if found else 'missing'} (expected {'present' if grader.exists else 'absent'})",
        )
    return None


def _regex_verdict(grader: RegexGrader, run: RunEvidence) -> Outcome:
    target = grader.target
    label = f"file {target.path}" if isinstance(target, FileSource) else target
    text = run.text(target)
    if text is None:
        reason = "mock_calls: the case has no mocks" if target == "mock_calls" else f"{label} does not exist"
        return False, reason
    pattern = js_regex(grader.pattern, grader.flags)
    if grader.match == "contains":
        ok = pattern.search(text, timeout=REGEX_TIMEOUT_S) is not None
        return ok, f"matched {grader.pattern}" if ok else f"pattern not found in {label}"
    if grader.match == "not_contains":
        ok = pattern.search(text, timeout=REGEX_TIMEOUT_S) is None
        return ok, "pattern absent as expected" if ok else "pattern found (expected absent)"
    want = int(grader.match.removeprefix("count:"))
    found = sum(1 for _ in pattern.finditer(text, timeout=REGEX_TIMEOUT_S))
    return found == want, f"found {found} matches (expected {want})"


def run_score(results: Sequence[GraderResult]) -> float:
    """The weighted share of passed graders among the scored ones (0 when none is scored)."""
    total = sum(r.weight for r in results if r.scored)
    return sum(r.weight for r in results if r.scored and r.passed) / total if total else 0.0


# ----------------------------------------------------------------- the judge


def judge_prompt(grader: JudgedGrader, run: RunEvidence, reference: str | None = None) -> str | None:
    """The prompt of one judge vote; None when the focus cannot be read (the grader fails)."""
    focus: Target = grader.focus if isinstance(grader, LlmGrader) else "trace"
    text = run.text(focus)
    if text is None:
        return None
    if not text and focus == "files":
        text = "(no file changes)"
    label = f"file {focus.path}" if isinstance(focus, FileSource) else focus
    parts = [
        "You are grading the output of a coding agent against a criterion.",
        f"Criterion:\n{grader.criteria}",
    ]
    if isinstance(grader, BaselineGrader):
        parts.append(
            "Pass only if the agent's run is at least as good as this reference run, judged by the "
            f"criterion.\nReference run:\n{_clip(reference or '')}"
        )
    parts += [f"Agent output ({label}):\n{_clip(text)}", "Respond with exactly one word: PASS or FAIL."]
    return "\n\n".join(parts)


def _clip(text: str, limit: int = 100_000, tail: int = 20_000) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - tail] + f"\n[…{len(text) - limit} chars elided…]\n" + text[-tail:]


def parse_vote(answer: str) -> bool | None:
    """PASS -> True, FAIL -> False, anything else -> None (an abstention)."""
    words = re.findall(r"[A-Za-z]+", answer.upper())
    if "PASS" in words and "FAIL" not in words:
        return True
    if "FAIL" in words and "PASS" not in words:
        return False
    return None


def judged_result(
    grader: JudgedGrader, votes: Sequence[bool | None], with_only: bool = False
) -> GraderResult:
    """Majority of the votes: passes with more than half of JUDGE_VOTES passing. No readable vote at
    all (every call failed or answered neither PASS nor FAIL) is a grading error, not a FAIL."""
    yes = sum(1 for v in votes if v is True)
    undecided = all(v is None for v in votes)
    return GraderResult(
        name=grader.name,
        type=grader.type,
        passed=not undecided and yes * 2 > JUDGE_VOTES,
        weight=grader.weight,
        explanation=f"grading error: no readable judge vote of {len(votes)}"
        if undecided
        else f"{yes}/{len(votes)} judge votes PASS",
        with_only=with_only,
        votes=tuple(votes),
        error=undecided,
    )
