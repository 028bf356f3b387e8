"""The warm process (flows/cli/warm.py): what it serves, what it refuses to share, how it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cli import warm
from tests.flows.helpers import ROOT, bench_run, make_project, provider_env, running, warm_process


def command_env(tmp_path: Path) -> dict[str, str]:
    """A command's environment: a provider never called (dry runs), a home of the test's own."""
    return (
        dict(os.environ)
        | provider_env("http://127.0.0.1:9")
        | {"SKILLAB_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    )


def test_the_key_follows_what_a_fork_would_share(tmp_path: Path) -> None:
    env = {"HOME": "/home/u", "PATH": "/bin", "OPENAI_API_KEY": "sk-1"}
    base = warm.key(str(tmp_path), env)
    # what a shell changes between two commands does not matter
    assert warm.key(str(tmp_path), env | {"_": "/usr/bin/python", "PWD": "/x", "SHLVL": "3"}) == base
    # anything else in the environment does, and so do the directory and Prefect's settings files in it
    assert warm.key(str(tmp_path), env | {"OPENAI_API_KEY": "sk-2"}) != base
    assert warm.key(str(tmp_path / "elsewhere"), env) != base
    (tmp_path / "prefect.toml").write_text("[logging]\nlevel = 'DEBUG'\n")
    assert warm.key(str(tmp_path), env) != base


def test_a_users_own_modules_are_never_imported_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "users_check.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import users_check  # noqa: F401

    names = warm.importable()
    assert "users_check" not in names  # it may change before the next command
    assert {"json", "flows.cli.help_cache", "pytest"} <= names  # the standard library, skillab, libraries
    monkeypatch.delitem(sys.modules, "users_check")


def test_the_next_command_is_served_warm_with_the_same_output_and_exit_codes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", n=4)
    env = command_env(tmp_path) | {"SKILLAB_WARM": "1"}
    dry = ["run", "--executor", "openai", "--dry-run"]
    cold = bench_run(dry, project, env | {"SKILLAB_WARM": "0"})
    assert cold.returncode == 0, cold.stderr[-2000:]

    def command(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return bench_run(list(args), project, env | (extra or {}))

    with warm_process(project, env, dry) as log:
        served = command(*dry)
        assert served.returncode == 0, served.stderr[-2000:]
        assert served.stdout == cold.stdout
        assert "kept a warm process" not in served.stderr
        assert log.read_text().count("serving a command") == 1

        bad = command("run", "--samples", "nope.yaml")  # bad input: one line, exit 2, as ever
        assert bad.returncode == 2
        assert bad.stderr.strip() == f"skillab: error: {project.resolve() / 'nope.yaml'}: file not found"
        assert log.read_text().count("serving a command") == 2

        other = command(*dry, extra={"OPENAI_API_KEY": "sk-other"})  # another environment: not this one's
        assert other.returncode == 0
        assert log.read_text().count("serving a command") == 2
        assert "kept a warm process" in other.stderr  # it left its own

        # a closed stream is not handed over (the socket would take its number): the long way
        closed = subprocess.run(
            [sys.executable, "-m", "flows.bench", *dry], cwd=project, env=env, capture_output=True,
            preexec_fn=lambda: os.close(0), timeout=300,
        )  # fmt: skip
        assert closed.returncode == 0, closed.stderr
        assert log.read_text().count("serving a command") == 2

        # a served command that imported more than its warm process had: that one imports it too
        history = command("history", "--suite", "x", "--reports-dir", str(tmp_path / "none"))
        assert history.returncode == 2, history.stderr
        deadline = time.monotonic() + 120
        while "importing ahead what a command added" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "importing ahead what a command added" in log.read_text()

        pids = [int(p.read_text()) for p in (tmp_path / "home" / "warm").glob("*.pid")]
        assert len(pids) == 2
        stop = command("server", "stop")
        assert "stopped the warm processes" in stop.stdout
        assert "kept a warm process" not in stop.stderr  # stopping them leaves none behind
        assert not list((tmp_path / "home" / "warm").glob("*.pid"))
        deadline = time.monotonic() + 60
        while any(map(running, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(running, pids))


@pytest.mark.parametrize("setting", ["0", None], ids=["off", "not-at-a-terminal"])
def test_none_is_left_when_off_or_not_asked_for_by_a_script(tmp_path: Path, setting: str | None) -> None:
    project = make_project(tmp_path / "p", n=2)
    env = {k: v for k, v in command_env(tmp_path).items() if k != "SKILLAB_WARM"}
    if setting is not None:
        env["SKILLAB_WARM"] = setting
    done = bench_run(["run", "--executor", "openai", "--dry-run"], project, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "warm" not in done.stderr
    assert not (tmp_path / "home" / "warm").exists()


def test_a_stopped_warm_process_costs_one_command_a_wait_then_none(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", n=2)
    env = command_env(tmp_path) | {"SKILLAB_WARM": "1"}
    dry = ["run", "--executor", "openai", "--dry-run"]
    with warm_process(project, env, dry) as log:
        pid = int(next(log.parent.glob("*.pid")).read_text())
        os.kill(pid, signal.SIGSTOP)
        try:
            late = bench_run(dry, project, env)  # it waits warm.TAKEN_S, then runs the long way
            assert late.returncode == 0, late.stderr[-2000:]
            assert not list(log.parent.glob("*.sock"))  # no command waits on it again
            assert bench_run(dry, project, env).returncode == 0
        finally:
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 60  # resumed, it finds its socket gone and exits
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(pid)
