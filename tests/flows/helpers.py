"""Build small sample-mode projects for flow tests."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Italy": "Rome",
    "Spain": "Madrid",
    "Egypt": "Cairo",
    "Peru": "Lima",
    "Kenya": "Nairobi",
    "Chile": "Santiago",
}


def subprocess_env(server_url: str | None = None) -> dict[str, str]:
    """The environment of a CLI or worker process started by a test: the test harness's Prefect
    server, this checkout on the path, and (when given) the fake provider as the OpenAI endpoint."""
    from prefect.settings import PREFECT_API_URL

    env = os.environ | {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "PYTHONPATH": str(ROOT)}
    return env | provider_env(server_url) if server_url else env


class Workers:
    """Prefect workers of one pool (``kind``: process, docker, or fleet: the fleet's own Docker
    worker, deployments/fleet_worker.py), each running one flow run at a time, polling every
    ``poll_s``; stopped by their own process group, never by name."""

    def __init__(self, pool: str, kind: str, log_dir: Path | None = None, poll_s: float = 1.0) -> None:
        self.pool, self.kind, self.log_dir, self.poll_s = pool, kind, log_dir, poll_s
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.gateway: subprocess.Popen[bytes] | None = None  # a Docker pool's, on this machine

    def _log(self, name: str) -> Any:
        return open(self.log_dir / f"{name}.log", "wb") if self.log_dir else subprocess.DEVNULL

    def start(self, name: str) -> None:
        env = subprocess_env() | {
            "PREFECT_WORKER_QUERY_SECONDS": str(self.poll_s),
            "PREFECT_WORKER_HEARTBEAT_SECONDS": "5",
        }
        if self.kind in ("docker", "fleet") and self.gateway is None:  # the containers' only way out
            self.gateway = subprocess.Popen(
                [sys.executable, "-m", "deployments", "--fleet-gateway", self.pool],
                cwd=ROOT,
                env=env,
                stdout=self._log("gateway"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        log = self._log(name)
        if self.kind == "fleet":
            command = ["deployments", "--fleet-worker", self.pool]
        else:
            command = ["prefect", "worker", "start", "--pool", self.pool, "--type", self.kind]
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", *command, "--limit", "1", "--name", name],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        end([self.procs.pop(name)], sig, allowance=20)

    def stop(self) -> None:
        """Every worker asked to stop at once, with one allowance between them (workers that had run
        flow runs took more than 20 s each here, one after another)."""
        end([*self.procs.values(), *([self.gateway] if self.gateway else [])], signal.SIGTERM, allowance=10)
        self.procs.clear()
        self.gateway = None


def end(procs: list[subprocess.Popen[bytes]], sig: int, allowance: float) -> None:
    """``sig`` to each process's group, then SIGKILL to any group not ended within ``allowance``."""
    for proc in procs:
        os.killpg(proc.pid, sig)  # a leader that exited is a zombie until waited: its group exists
    deadline = time.monotonic() + allowance
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def bench_process(
    args: list[str], cwd: Path | None, env: dict[str, str], **popen: Any
) -> subprocess.Popen[str]:
    """The command line in a process of its own, as a user starts it (its output as text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "flows.bench", *args], cwd=cwd, env=env, text=True, **popen
    )


def bench_run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command line run to its end in a process of its own, no terminal: its exit code and output."""
    return subprocess.run(
        [sys.executable, "-m", "flows.bench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def warm_process(project: Path, env: dict[str, str], first: list[str]) -> Iterator[Path]:
    """The warm process (flows/cli/warm.py) the command ``first`` leaves behind, run from ``project``
    with ``env`` (SKILLAB_WARM on): its log, once it serves; stopped at the end by the pid it
    recorded, and waited for."""
    from flows.cli.warm import stop_all

    folder = Path(env["SKILLAB_HOME"]) / "warm"
    done = bench_run(first, project, env | {"SKILLAB_WARM": "1"})
    try:
        assert "kept a warm process" in done.stderr, done.stderr[-2000:]
        deadline = time.monotonic() + 120  # its imports, on a loaded machine
        while not list(folder.glob("*.sock")) and time.monotonic() < deadline:
            time.sleep(0.2)
        logs = list(folder.glob("*.log"))
        assert list(folder.glob("*.sock")), [log.read_text() for log in logs]
        yield logs[0]
    finally:
        for pid in stop_all(folder):
            while running(pid) and time.monotonic() < deadline + 60:
                time.sleep(0.1)


def running(pid: int) -> bool:
    """The process runs (a zombie, ended and not yet reaped by its parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def provider_env(server_url: str) -> dict[str, str]:
    """The fake provider at `server_url` as the OpenAI endpoint."""
    return {"OPENAI_BASE_URL": f"{server_url}/v1", "OPENAI_API_KEY": "sk-test"}


def use_provider(monkeypatch: pytest.MonkeyPatch, server_url: str) -> None:
    """The same, for a CLI run in this process."""
    for key, value in provider_env(server_url).items():
        monkeypatch.setenv(key, value)


def run_bench(
    project: Path, *args: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, Any] | None]:
    """`run` with the openai executor, from the project folder, reports into project/reports:
    the exit code and the newest report."""
    from flows.cli.main import main

    monkeypatch.chdir(project)
    out = project / "reports"
    code = main(["run", "--executor", "openai", "--output-dir", str(out), "--quiet", *args])
    reports = sorted(out.glob("*.json"), key=os.path.getmtime)
    return code, json.loads(reports[-1].read_text()) if reports else None


def run_capitals(
    project: Path, *args: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, Any] | None]:
    """`run_bench` of a capitals project on the scripted gpt-4o-mini, its cache in the project."""
    return run_bench(
        project,
        "--model",
        "gpt-4o-mini",
        "--cache-dir",
        str(project / "cache"),
        *args,
        monkeypatch=monkeypatch,
    )


def make_project(
    root: Path, *, n: int = 8, rubric: bool = False, extra: dict[str, Any] | None = None
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    samples = []
    for country in list(CAPITALS)[:n]:
        sample: dict[str, Any] = {
            "sample_id": f"cap-{country.lower()}",
            "prompt": f"What is the capital of {country}?",
            "assertions": [
                {"type": "contains", "value": CAPITALS[country]},
                {"type": "word_count_max", "value": 2},
            ],
        }
        if rubric:
            sample["rubric"] = "Names the capital in one word."
        samples.append(sample | (extra or {}))
    (root / "eval-samples.json").write_text(json.dumps(samples, indent=1))
    (root / "skills").mkdir(exist_ok=True)
    (root / "skills" / "v1.md").write_text("Answer the question.")
    (root / "skills" / "v2.md").write_text("Answer with one word.")
    return root


def report_runs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run entry of a sample-mode report, across cases and variants."""
    return [run for r in report["results"] for v in r["variants"].values() for run in v.get("runs", [v])]


def answer(system: str, prompt: str) -> str:
    """A scripted model: terse with v2's artifact, chatty otherwise; an honest judge for judge calls."""
    if "strict, fair grader" in system:
        block = re.search(r"<<<ANSWER_(\w+)>>>\n(.*)\n<<<END_ANSWER_\1>>>", prompt, re.S)
        text = block.group(2) if block else ""
        return json.dumps(
            {"score": 5 if len(text.split()) == 1 else 2, "reason": f"{len(text.split())} words"}
        )
    country = prompt.rstrip("?").split()[-1]
    capital = CAPITALS.get(country, "unknown")
    return capital if "one word" in system else f"I believe the capital of {country} is {capital}."


def run_tags(state: Any) -> set[str]:
    """The tags of the flow run that ended in ``state``, as the API has them."""
    import asyncio

    from prefect.client.orchestration import get_client

    async def read() -> set[str]:
        async with get_client() as client:
            return set((await client.read_flow_run(state.state_details.flow_run_id)).tags)

    return asyncio.run(read())


async def flow_run_artifacts(flow_run_id: object) -> list[Any]:
    """A flow run's artifacts, as the API has them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async with get_client() as client:
        return list(
            await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
            )
        )
