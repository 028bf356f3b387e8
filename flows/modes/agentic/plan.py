"""Agentic sessions as planned: each task x arm x run, where it works (outside the project, at a
neutral random path) and where its outputs go in the seed's results tree."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from executors.workspace import new_root
from graders.agent_task import AgentTask
from tasks.schema import Arm

#: The arms in the order sessions of a task are scheduled (--ablate adds its arms after them).
ARMS: tuple[str, ...] = (Arm.WITH_SKILL, Arm.BASELINE)


@dataclass(frozen=True)
class Session:
    task: AgentTask
    index: int
    run: int
    mode: str  # an Arm, or with --ablate a with-skill-no-<section> arm
    sandbox: Path  # where the agent works: outside the project (see isolation_root)
    home: Path
    outputs: Path
    grades: Path
    archive: Path  # the seed's results/sandbox/... copy of the sandbox, made after grading

    @property
    def label(self) -> str:
        return f"{self.task.task_id} · {self.mode} · run {self.run}"

    @property
    def kind(self) -> Arm:
        """What the arm is for the sandbox and the contamination check (``arm_kind``)."""
        return arm_kind(self.mode)


def arm_kind(mode: str) -> Arm:
    """What an arm is for the sandbox and the contamination check: an ablated arm is a with-skill
    arm (the skill installed and forced, only its SKILL.md shorter)."""
    return Arm.BASELINE if mode == Arm.BASELINE else Arm.WITH_SKILL


def isolation_root() -> Path:
    """Sessions run outside the project: Claude Code also reads .claude/skills (and CLAUDE.md) of
    every parent folder, so a sandbox under the project would hand the baseline the skill. (The
    seed's layout, sandboxes under ./skill-bench/results, has exactly this leak.) The path is
    random and neutral (see executors.workspace), owned by this process until released."""
    return new_root()


def arm_root(isolated: Path, mode: str) -> Path:
    """Where an arm's sandboxes and homes go: the run's root, or for an ablated arm a sibling of the
    same length, its sessions then at the with-skill arm's path under it. The working directory is
    part of the agent's system prompt: it must neither name the section left out nor make the
    prompt longer (the section's token cost is measured)."""
    if mode in ARMS:
        return isolated
    digest = hashlib.sha256(f"{isolated.name}/{mode}".encode()).hexdigest()
    return isolated.with_name(digest[: len(isolated.name)])


def arm_folder(isolated: Path, mode: str) -> str:
    """The last folder of a session's working directory: a neutral name of one length for both arms
    (the working directory is in the agent's system prompt: "with-skill" or "baseline" there would
    tell the agent which arm it is in). An ablated arm's is the with-skill arm's, under its own root."""
    return hashlib.sha256(f"{isolated.name}/{arm_kind(mode)}".encode()).hexdigest()[:10]


def level_of(index: int, run: int, count: int) -> Path:
    """The seed's task-NN[/run-N] level of a session: the run level only when its task runs more than once."""
    return Path(f"task-{index:02d}") / (f"run-{run}" if count > 1 else "")


def session_paths(isolated: Path, index: int, run: int, count: int, mode: str) -> tuple[Path, Path]:
    """(working directory, HOME) of the session of an arm, on run ``run`` of the ``index``-th task
    (which runs ``count`` times), below the run's root."""
    level = level_of(index, run, count)
    root, where = arm_root(isolated, mode), arm_folder(isolated, mode)
    return root / "sandbox" / level / where, root / "home" / level / where


def check_folders(isolated: Path, index: int) -> tuple[Path, Path]:
    """Where ``validate`` lays the ``index``-th task's reference solution and its untouched start:
    at the working directories of the task's with-skill and baseline sessions, as a run lays them,
    so a check sees the same paths and names there as on a session."""
    return session_paths(isolated, index, 1, 1, Arm.WITH_SKILL)[0], session_paths(
        isolated, index, 1, 1, Arm.BASELINE
    )[0]


def runs_of(task: AgentTask, runs: int, case_runs: bool) -> int:
    """Sessions per arm of a task: ``runs``, or with ``case_runs`` a plugin eval case's own ``runs``
    (as `claude plugin eval` runs it when --runs is not given)."""
    return task.plugin_case.runs if case_runs and task.plugin_case is not None else runs


def single_arm(task: AgentTask) -> bool:
    """A plugin eval case replaying a recorded session runs with the plugin only, as under `claude
    plugin eval`: the history carries the plugin into any arm, so a baseline would not be one."""
    return task.plugin_case is not None and task.plugin_case.history_file is not None


def plan_sessions(
    tasks: list[AgentTask],
    results: Path,
    runs: int,
    isolated: Path,
    arms: tuple[str, ...] = ARMS,
    *,
    case_runs: bool = False,
) -> list[Session]:
    """The seed's tree; the run-N level only when a task runs more than once. Arms of a task run
    side by side."""
    out = []
    counts = [runs_of(t, runs, case_runs) for t in tasks]
    for run in range(1, max(counts, default=runs) + 1):
        for index, (task, count) in enumerate(zip(tasks, counts, strict=True), start=1):
            if run > count:
                continue
            for mode in arms:
                if mode != Arm.WITH_SKILL and single_arm(task):
                    continue
                level = level_of(index, run, count)
                sandbox, home = session_paths(isolated, index, run, count, mode)
                out.append(
                    Session(
                        task,
                        index,
                        run,
                        mode,
                        sandbox=sandbox,
                        home=home,
                        outputs=results / "outputs" / level / mode,
                        grades=results / "grades" / level,
                        archive=results / "sandbox" / level / mode,
                    )
                )
    return out
