"""An agentic task's checks (a plugin eval case's file graders) tested against its reference
solution and its untouched start, before any session (graders/validation.py says why and how)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import TypeAdapter

from executors.contents import copy_file, copy_tree
from executors.errors import InputError
from executors.sandbox import Isolation
from executors.schema import AgentSession, SessionStatus, Utterance
from executors.workspace import session_root
from graders.agent_task import AgentTask
from graders.checks import inside, run_checks, sandbox_files
from graders.loading import read_text
from graders.plugin_eval import FileExistsGrader, FileSource, PluginCase, RegexGrader
from graders.plugin_grading import RunEvidence, grade_deterministic
from graders.validation import GraderFinding, GraderStatus

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
