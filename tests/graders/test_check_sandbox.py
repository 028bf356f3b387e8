"""Task checks run in the OS sandbox (real bubblewrap), and their paths stay inside the session's sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from executors.sandbox import Isolation, SandboxUnavailableError, probe
from graders.agent_task import Check, parse_task
from graders.checks import run_checks
from graders.grades import CheckResults
from tests.fakes.escape import CANARIES, escape_places

needs_bwrap = pytest.mark.skipif(
    probe() is not None,
    reason=f"bubblewrap cannot run here: {probe()} (install the Debian package bubblewrap)",
)

TASK = """# Task: checks
difficulty: easy
category: security

## Prompt
Anything.

## Expected Outcome
Anything.

## Verification Checks
{checks}

## Grading Rubric
- Correctness: n/a
"""


def task_with(*checks: str) -> str:
    return TASK.format(checks="\n".join(f"- {c}" for c in checks))


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    with escape_places(tmp_path, monkeypatch) as places:
        yield places


def verdicts(result: CheckResults) -> dict[str, tuple[object, str]]:
    return {d.check: (d.passed, d.reason) for d in result.details}


@needs_bwrap
def test_runs_without_error_cannot_reach_out(
    tmp_path: Path, outside: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-must-not-leak")
    sandbox = tmp_path / "sb"
    sandbox.mkdir()
    checks = [f"runs_without_error: echo canary > {outside[k]}" for k in CANARIES]
    checks += [
        f"runs_without_error: cat {outside['tmp_secret']}",
        f"runs_without_error: cat {outside['home_secret']}",
        "runs_without_error: echo made > made.txt",
        'runs_without_error: test -z "$ANTHROPIC_API_KEY"',
        f'runs_without_error: test "$HOME" != {outside["home_secret"].parent} && touch "$HOME/x"',
        "runs_without_error: umount /root",
    ]
    result = run_checks(parse_task(task_with(*checks), "t"), sandbox)
    got = verdicts(result)
    assert result.isolation == "bubblewrap"
    for key in CANARIES:
        assert not outside[key].exists(), f"{key} reached the host"
    assert got[f"runs_without_error: echo canary > {outside['etc_canary']}"][0] is False  # / is read-only
    for key in ("tmp_secret", "home_secret"):
        passed, reason = got[f"runs_without_error: cat {outside[key]}"]
        assert passed is False and "No such file or directory" in reason
    assert (sandbox / "made.txt").read_text() == "made\n"  # the task's sandbox is writable
    assert got['runs_without_error: test -z "$ANTHROPIC_API_KEY"'][0] is True  # keys are not passed on
    assert got["runs_without_error: umount /root"][0] is False
    assert not result.all_passed


def test_without_bubblewrap_only_a_fresh_home(
    tmp_path: Path, outside: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """isolation="none" is what it says: the host is reachable (this is the contrast to the test
    above), but HOME is still a throwaway and the environment still scrubbed."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-must-not-leak")
    sandbox = tmp_path / "sb"
    sandbox.mkdir()
    task = parse_task(
        task_with(
            f"runs_without_error: echo canary > {outside['tmp_canary']}",
            'runs_without_error: test -z "$ANTHROPIC_API_KEY"',
            f'runs_without_error: test "$HOME" != {outside["home_secret"].parent}',
        ),
        "t",
    )
    with pytest.raises(SandboxUnavailableError, match="bubblewrap is not available"):
        monkeypatch.setenv("SKILLAB_BWRAP", "skillab-no-such-bwrap")
        run_checks(task, sandbox)
    result = run_checks(task, sandbox, isolation="none")
    assert result.all_passed and result.isolation == "none"
    assert outside["tmp_canary"].exists()


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("file_exists: /etc/passwd", "verification checks[0]: file_exists: path '/etc/passwd' is absolute"),
        ("file_exists: ../x", "verification checks[0]: file_exists: path '../x' climbs out of the sandbox"),
        ("file_contains: root in /etc/passwd", "file_contains: file '/etc/passwd' is absolute"),
        ("file_contains: `root` in `src/../../x`", "file_contains: file 'src/../../x' climbs out"),
        ("syntax_valid: /etc/hosts.json", "syntax_valid: path '/etc/hosts.json' is absolute"),
        ("syntax_valid: ..\\x.py", "syntax_valid: path '..\\\\x.py' climbs out"),
    ],
)
def test_check_paths_are_confined_at_load_time(check: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_task(
            task_with("file_exists: ok.py", "runs_without_error: cat /etc/passwd").replace(
                "- file_exists: ok.py", f"- {check}"
            ),
            "t",
        )
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_relative_paths_and_languages_load() -> None:
    task = parse_task(
        task_with(
            "file_exists: src/calc.py",
            "file_exists: ..hidden/x",
            "file_contains: x in ./a/b.txt",
            "syntax_valid: python",
            "syntax_valid: src/a.json",
            "runs_without_error: cat ../../etc/passwd",  # a command, confined at run time instead
        ),
        "t",
    )
    assert len(task.checks) == 6
    with pytest.raises(ValidationError, match="is absolute"):
        Check(kind="file_exists", target="/etc/passwd")


def test_symlinks_out_of_the_sandbox_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "outside-secret"}')
    sandbox = tmp_path / "sb"
    sandbox.mkdir()
    (sandbox / "leak.txt").symlink_to(secret)
    (sandbox / "leak.json").symlink_to(secret)
    (sandbox / "inner.txt").write_text("inside-text")
    (sandbox / "link.txt").symlink_to(sandbox / "inner.txt")
    task = parse_task(
        task_with(
            "file_exists: leak.txt",
            "file_contains: outside-secret in leak.txt",
            "file_contains: outside-secret",
            "syntax_valid: leak.json",
            "file_contains: inside-text in link.txt",  # a link that stays inside is fine
        ),
        "t",
    )
    got = verdicts(run_checks(task, sandbox, isolation="none"))
    assert got["file_exists: leak.txt"] == (False, "leak.txt leads outside the sandbox: not read")
    assert got["file_contains: outside-secret in leak.txt"][0] is False
    assert got["file_contains: outside-secret"][0] is False
    assert got["syntax_valid: leak.json"] == (False, "leak.json leads outside the sandbox: not read")
    assert got["file_contains: inside-text in link.txt"][0] is True


@pytest.mark.parametrize("isolation", [pytest.param("bubblewrap", marks=needs_bwrap), "none"])
def test_a_hung_check_is_killed_with_its_children(tmp_path: Path, isolation: Isolation) -> None:
    sandbox = tmp_path / "sb"
    sandbox.mkdir()
    marker = f"skillab-check-hang-{uuid.uuid4().hex}"
    command = f"setsid bash -c 'exec -a {marker} sleep 300' & sleep 300"
    result = run_checks(parse_task(task_with(f"runs_without_error: {command}"), "t"), sandbox, isolation, 1)
    assert verdicts(result)[f"runs_without_error: {command}"] == (False, "timed out after 1s")
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    if isolation == "none":  # a child that left the process group is beyond reach without bubblewrap
        for pid in left:
            os.kill(int(pid), signal.SIGKILL)
    else:
        assert left == [], f"children survived: {left}"
