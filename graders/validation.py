"""Graders tested against known answers, before any model call.

A sample may carry a reference output: what a correct answer looks like; an agentic task a reference
solution, the folder of files a correct agent would leave (its checks are run on a copy of it, and on
the untouched start: a check that passes there is decided before the agent acts). Every deterministic grader of
the case (custom checks included) is run on it, and on mutants derived from it: the reference with
what the grader asserts removed or violated (a ``contains`` value deleted, a ``not_contains`` value
added, the text cut below a ``min_length``...) and the empty output. A grader that fails (or cannot
decide on) the reference, or that passes its own violation, cannot tell a right answer from a wrong
one: it is broken, and its results are left out of the run. One that passes the empty output and
has no derivable violation is untested: it may not read the output at all. Judged criteria need a
model call and are not tested here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter

from executors.contents import copy_file, copy_tree
from executors.errors import InputError
from executors.sandbox import Isolation
from executors.schema import AgentSession, Frozen, SessionStatus, Utterance
from executors.workspace import session_root
from graders.agent_task import AgentTask
from graders.checks import inside, run_checks, sandbox_files
from graders.loading import read_text
from graders.plugin_eval import FileExistsGrader, FileSource, PluginCase, RegexGrader
from graders.plugin_grading import RunEvidence, grade_deterministic
from graders.registry import is_judged, run_assertion
from graders.schema import Assertion, NumberAssertion, Observation, Sample
from graders.text import REGEX_TIMEOUT_S, compile_regex

GraderStatus = Literal["ok", "broken", "untested"]


class GraderFinding(Frozen):
    """One grader of one case, tried on the case's reference and its mutants."""

    case: str
    index: int  # 1-based, in the case's list of assertions
    type: str
    status: GraderStatus
    reason: str

    @property
    def grader(self) -> str:
        """The grader as every report names an assertion: ``case#N (type)``."""
        return f"{self.case}#{self.index} ({self.type})"


def broken_notices(findings: Sequence[GraderFinding]) -> list[str]:
    """What the user is told before the run about the graders left out."""
    return [
        f"grader {f.grader} is broken and left out of the run: {f.reason}"
        for f in findings
        if f.status == "broken"
    ]


def _drop(text: str, needles: Sequence[object]) -> str:
    for needle in needles:
        text = re.sub(re.escape(str(needle)), "", text, flags=re.IGNORECASE)
    return text


def _add(text: str, needles: Sequence[object]) -> str:
    return " ".join([text, *(str(n) for n in needles)])


def _values(a: Assertion) -> list[object]:
    values = getattr(a, "values", None)
    return list(values) if values is not None else [getattr(a, "value", "")]


def _regex_dropped(a: Assertion, text: str) -> str:
    return str(compile_regex(a.pattern, a.flags).sub("", text, timeout=REGEX_TIMEOUT_S))  # type: ignore[union-attr]


def _other(a: Assertion) -> str:
    """A word that neither starts nor ends like the assertion's value."""
    value = str(getattr(a, "value", "")).lower()
    return next(w for w in ("~", "#", "%") if not value.startswith(w) and not value.endswith(w))


def _count(a: Assertion) -> int:
    return int(float(a.value)) if isinstance(a, NumberAssertion) else 0


#: Per type, the reference made to break the assertion: what it asserts taken out, or its opposite
#: put in.
MUTANTS: dict[str, Callable[[Assertion, str], str]] = {
    "contains": lambda a, t: _drop(t, _values(a)),
    "contains_all": lambda a, t: _drop(t, _values(a)),
    "contains_any": lambda a, t: _drop(t, _values(a)),
    "regex": _regex_dropped,
    "not_contains": lambda a, t: _add(t, _values(a)),
    "starts_with": lambda a, t: _other(a) + " " + _drop(t, _values(a)),
    "ends_with": lambda a, t: _drop(t, _values(a)) + " " + _other(a),
    "equals": lambda a, t: _add(t, ["x"]),
    "not_equals": lambda a, t: str(getattr(a, "value", "")),
    "min_length": lambda a, t: t[: max(_count(a) - 1, 0)],
    "max_length": lambda a, t: t + "x" * (_count(a) + 1),
    "word_count_min": lambda a, t: " ".join(t.split()[: max(_count(a) - 1, 0)]),
    "word_count_max": lambda a, t: _add(t, ["word"] * (_count(a) + 1)),
    "json_valid": lambda a, t: t + " {",
    "json_schema": lambda a, t: "not json",
}
#: ``not: true`` on a presence type: the violation puts the values in (or, for not_contains, takes
#: them out); other negated types get no derived mutant.
NEGATED: dict[str, Callable[[Assertion, str], str]] = {
    "contains": MUTANTS["not_contains"],
    "contains_all": MUTANTS["not_contains"],
    "contains_any": MUTANTS["not_contains"],
    "not_contains": MUTANTS["contains"],
}


#: The longest text a mutant may grow to (a max_length of two billion is no reason to allocate it).
MUTANT_MAX_CHARS = 1_000_000


def violation(a: Assertion, reference: str) -> str | None:
    """The reference made to break ``a``, or None where no such mutant is derived (or it would be
    too long to build)."""
    mutate = (NEGATED if a.negate else MUTANTS).get(a.type)
    if mutate is None or len(reference) + _count(a) * 5 > MUTANT_MAX_CHARS:
        return None
    return mutate(a, reference)


def try_grader(sample: Sample, index: int, a: Assertion, reference: str) -> GraderFinding:
    """``a`` on the reference, on its violation and on the empty output."""

    def found(status: GraderStatus, reason: str) -> GraderFinding:
        return GraderFinding(
            case=sample.sample_id, index=index + 1, type=a.type, status=status, reason=reason
        )

    def run(output: str) -> tuple[bool, bool, str]:
        result = run_assertion(a, Observation(output=output, sample=sample))
        return result.passed, result.error, result.message

    passed, error, message = run(reference)
    if error:
        return found("broken", f"could not decide on the reference answer: {message}")
    if not passed:
        negated = " (with not: true the reference must not satisfy it)" if a.negate else ""
        return found("broken", f"fails the reference answer: {message or 'failed'}{negated}")
    try:
        mutant = violation(a, reference)
    except TimeoutError:
        mutant = None
    if mutant is not None and mutant != reference:
        passed, error, message = run(mutant)
        if passed and not error:
            return found("broken", "passes the reference with what it asserts removed: it cannot fail")
        return found("ok", "passes the reference, fails its violation")
    passed, error, message = run("")
    if error:
        return found("untested", f"passes the reference, could not decide on an empty output: {message}")
    if passed:
        return found("untested", "passes the reference and an empty output: it may not read the output")
    return found("ok", "passes the reference, fails an empty output")


def validate_samples(samples: Sequence[Sample]) -> list[GraderFinding]:
    """Every deterministic grader of every case that carries a reference output."""
    return [
        try_grader(s, i, a, s.reference_output)
        for s in samples
        if s.reference_output is not None
        for i, a in enumerate(s.assertions)
        if not is_judged(a)
    ]


def without_broken(samples: Sequence[Sample], findings: Sequence[GraderFinding]) -> list[Sample]:
    """The samples with their broken graders taken out (their results are not believed)."""
    broken = {(f.case, f.index) for f in findings if f.status == "broken"}
    if not broken:
        return list(samples)
    return [
        s.model_copy(
            update={
                "assertions": tuple(
                    a for i, a in enumerate(s.assertions) if (s.sample_id, i + 1) not in broken
                )
            }
        )
        if any(case == s.sample_id for case, _ in broken)
        else s
        for s in samples
    ]


# ----------------------------------------------------------------- agentic tasks

#: Where a task's reference solution lives: a folder of the files a correct agent would leave.
REFERENCES = "references"  # <task set>/references/<task id>/, beside the task files
CASE_REFERENCE = "reference"  # a plugin eval case's own <case>/reference/


def _finding(task: AgentTask, index: int, kind: str, status: GraderStatus, reason: str) -> GraderFinding:
    return GraderFinding(case=task.task_id, index=index + 1, type=kind, status=status, reason=reason)


def _verdict(
    task: AgentTask,
    index: int,
    kind: str,
    on_ref: bool | None,
    on_start: bool | None,
    why: str,
    absence: bool = False,
    undecided: bool = False,
) -> GraderFinding:
    """A check that fails (or cannot decide on) its reference, or that passes the untouched start, is
    broken; one that asserts an absence passes the start by design (untested: no violation of it is
    derived); one with no checker here (``on_ref`` None) is untested."""
    if undecided:
        return _finding(task, index, kind, "broken", f"could not decide on the reference solution: {why}")
    if on_ref is None:
        return _finding(task, index, kind, "untested", f"could not be tried here: {why}")
    if not on_ref:
        return _finding(task, index, kind, "broken", f"fails the reference solution: {why}")
    if on_start and absence:
        return _finding(
            task, index, kind, "untested", "asserts an absence: it passes the untouched start by design"
        )
    if on_start:
        return _finding(
            task, index, kind, "broken", "passes the untouched start: it is decided before the agent acts"
        )
    return _finding(task, index, kind, "ok", "passes the reference solution, fails the untouched start")


#: Where a run lays a task's sessions below its root: (the root, the task's place in the run) ->
#: (the with-skill arm's working directory, the baseline arm's).
Layout = Callable[[Path, int], tuple[Path, Path]]


def try_task(
    task: AgentTask, index: int, reference: Path, isolation: Isolation, layout: Layout
) -> list[GraderFinding]:
    """A task's checks (a plugin case's file graders) on a copy of its reference solution and on the
    untouched start (its input files only), each run as a session's are: confined, under
    ``isolation``, at the paths the task's sessions work in (``layout``): a check that reads its
    folder's name sees a session's."""
    with session_root() as root:
        ref, start = layout(root, index)
        start.mkdir(parents=True)
        try:
            copy_tree(reference, ref, f"task {task.task_id}: reference solution")
        except OSError as exc:  # a path too long once copied, a file that vanished: refused, one line
            raise InputError(
                f"task {task.task_id}: reference solution: cannot copy: {exc.strerror or exc}"
            ) from None
        for name in task.input_files:  # the start a session gets: the eval's input files
            for folder in (ref, start):
                copy_file(
                    Path(task.input_root or ".") / name, folder / name, f"task {task.task_id}: input file"
                )
        if task.plugin_case is not None:
            return _try_plugin_graders(task, task.plugin_case, ref, start)
        said = reference_conversation(reference)  # a case with a user: what a correct agent says
        silent = AgentSession(ok=True, status=SessionStatus.SUCCESS) if said is not None else None
        on_ref, on_start = (
            run_checks(task, folder, isolation, session=session).details
            for folder, session in ((ref, said), (start, silent))
        )
    return [
        _verdict(task, i, check.label, r.passed, s.passed, r.reason, undecided=bool(r.error))
        for i, (check, r, s) in enumerate(zip(task.checks, on_ref, on_start, strict=True))
    ]


def reference_conversation(reference: Path) -> AgentSession | None:
    """``references/<task id>.conversation.json`` beside a reference solution: the conversation a
    correct agent holds (a list of ``{who, kind, text}``), which the conversation checks are tried
    on (and on silence, as the untouched start); None when there is none."""
    path = reference.with_name(f"{reference.name}.conversation.json")
    if not path.is_file():
        return None
    try:
        said = TypeAdapter(tuple[Utterance, ...]).validate_json(read_text(path))
    except ValueError as exc:
        raise InputError(f"{path}: not a conversation ({str(exc).splitlines()[0]})") from None
    return AgentSession(ok=True, status=SessionStatus.SUCCESS, conversation=said)


def _files(folder: Path) -> RunEvidence:
    """What a session that left ``folder`` behind shows its file graders (no transcript)."""
    paths = sorted(p.relative_to(folder).as_posix() for p in sandbox_files(folder))

    def read(path: str) -> bytes | None:
        found = inside(folder, path)
        return found.read_bytes() if found is not None and found.is_file() else None

    return RunEvidence(events=[], created_files=paths, read_file=read)


def _try_plugin_graders(task: AgentTask, case: PluginCase, ref: Path, start: Path) -> list[GraderFinding]:
    out = []
    for i, grader in enumerate(case.graders):
        reads_files = isinstance(grader, FileExistsGrader) or (
            isinstance(grader, RegexGrader)
            and (grader.target == "files" or isinstance(grader.target, FileSource))
        )
        kind = f"{grader.type}: {grader.name}"
        if not reads_files:
            if grade_deterministic(grader, RunEvidence(events=[])) is not None:  # judged ones need a model
                out.append(
                    _finding(
                        task,
                        i,
                        kind,
                        "untested",
                        "reads the session's transcript, which a reference folder does not hold",
                    )
                )
            continue
        on_ref, on_start = (grade_deterministic(grader, _files(folder)) for folder in (ref, start))
        if on_ref is None or on_start is None:  # a file grader always gives a verdict
            continue
        absence = (isinstance(grader, FileExistsGrader) and not grader.exists) or (
            isinstance(grader, RegexGrader) and grader.match == "not_contains"
        )
        out.append(
            _verdict(task, i, kind, on_ref.passed, on_start.passed, on_ref.explanation, absence, on_ref.error)
        )
    return out


def reference_of(task: AgentTask, tasks_dir: Path) -> Path | None:
    """The task's reference solution folder, when the suite has one."""
    folder = Path(task.case_dir) / CASE_REFERENCE if task.case_dir else tasks_dir / REFERENCES / task.task_id
    if folder.exists() and not folder.is_dir():  # a file (or a link) where the folder belongs
        raise InputError(f"task {task.task_id}: {folder}: a reference solution is a folder of files")
    return folder if folder.is_dir() else None


def validate_tasks(
    tasks: Sequence[AgentTask], tasks_dir: Path, isolation: Isolation, layout: Layout
) -> list[GraderFinding]:
    """Every check of every task that has a reference solution."""
    return [
        finding
        for index, task in enumerate(tasks, start=1)
        if (reference := reference_of(task, tasks_dir)) is not None
        for finding in try_task(task, index, reference, isolation, layout)
    ]


def tasks_without_broken(tasks: Sequence[AgentTask], findings: Sequence[GraderFinding]) -> list[AgentTask]:
    """The tasks with their broken checks (a plugin case's broken graders) taken out."""
    broken = {(f.case, f.index - 1) for f in findings if f.status == "broken"}
    out = []
    for task in tasks:
        drop = {i for case, i in broken if case == task.task_id}
        if not drop:
            out.append(task)
        elif task.plugin_case is not None:
            kept = tuple(g for i, g in enumerate(task.plugin_case.graders) if i not in drop)
            out.append(
                task.model_copy(update={"plugin_case": task.plugin_case.model_copy(update={"graders": kept})})
            )
        else:
            out.append(
                task.model_copy(
                    update={"checks": tuple(c for i, c in enumerate(task.checks) if i not in drop)}
                )
            )
    return out
