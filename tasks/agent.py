"""Agent-session and sandbox-check tasks. No retries: a session writes into its sandbox, so a
failed session is recorded as such (score 0), never silently re-run over a dirty sandbox."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from executors.agent import agent_session
from executors.sandbox import Isolation
from executors.schema import AgentRequest, AgentSession
from graders.agent_task import AgentTask
from graders.checks import run_checks
from graders.grades import CheckResults


@task(name="agent-session", task_run_name="{label}", cache_policy=NO_CACHE, persist_result=False)
async def run_agent_session(request: AgentRequest, base_url: str | None, label: str) -> AgentSession:
    return await agent_session(request, base_url)


@task(name="check-sandbox", task_run_name="checks · {label}", cache_policy=NO_CACHE, persist_result=False)
def check_sandbox(
    agent_task: AgentTask,
    sandbox: str,
    label: str,
    isolation: Isolation = "bubblewrap",
    session: AgentSession | None = None,
) -> CheckResults:
    """The task's checks on one sandbox (and the session's conversation), their commands under
    ``isolation`` (recorded in the result). Checks that could not run at all (the sandbox failed)
    are a grading error, not a failed session."""
    try:
        return run_checks(agent_task, Path(sandbox), isolation, session=session)
    except Exception as exc:
        return CheckResults(
            all_passed=False,
            details=[],
            isolation=isolation,
            grading_error=f"the checks could not run: {type(exc).__name__}: {exc}",
        )
