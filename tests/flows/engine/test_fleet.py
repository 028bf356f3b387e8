"""Agent sessions in containers of a Prefect Docker work pool: the real Docker daemon, the fleet's
image built here, the fleet's own Docker workers (prefect-docker's, starting containers ahead:
deployments/fleet_worker.py), the real Claude Code CLI inside the containers against the scripted
model server on this machine's 127.0.0.1, storage through a folder URL.
The other agent CLIs in containers, other storage and faults: test_fleet_agents_and_faults.py."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.flows.engine.fleet_support import (
    comparable,
    containers,
    first_turns,
    register,
    run,
    wait_for_sessions,
)
from tests.flows.helpers import Workers
from tests.flows.modes.agentic.test_skill_bench import agent, judge, skill_run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]
POOL = "skillab-test-fleet"


def test_a_suite_over_three_docker_workers_gives_the_local_report(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 sessions (3 tasks x 2 arms x 2 runs) in containers of three workers under a fleet limit of
    2: the same report as the suite run here, the files the sessions left where a local run leaves
    them, the key from the pool's Secret block, and never more than 2 requests at the model at once."""
    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent, delay=0.3).anthropic_env(
        monkeypatch
    ) as server:  # slow enough for sessions to overlap
        local = run(suite, server.url, "local")
        assert server.peak > 2  # unbounded, sessions overlap
        server.peak, here = 0, server.count()
        with socket.create_server(("0.0.0.0", 0)) as bait, Inspected(bait.getsockname()[1]) as seen:
            remote = run(suite, server.url, "remote", "--fleet-pool", POOL, "--fleet-sessions", "2")
        assert server.peak <= 2
        sessions = [c for c in server.calls[here:] if c.body.get("tools")]
    assert comparable(remote) == comparable(local)
    assert sessions and all(c.auth.get("x-api-key") == "sk-fleet" for c in sessions)
    (folder,) = (suite / "remote").glob("calc-skill-*")
    assert (folder / "sandbox/task-01/run-1/with-skill/calc.py").read_text().endswith("return a + b\n")
    meta = json.loads((folder / "outputs/task-01/run-1/with-skill/meta.json").read_text())
    assert meta["skill_invoked"] and remote["meta"]["isolation"] == "bubblewrap"
    # the image the containers said they were, in what ran: a night on a rebuilt image is told apart
    image = remote["meta"]["fingerprint"]["image"]
    assert re.fullmatch(r"skillab-session:[0-9a-f]{16} on [0-9a-f]{12}", image), image
    assert local["meta"]["fingerprint"].get("image") is None
    assert seen.containers, "no container of the pool was seen running"
    for info in seen.containers.values():  # what each container held: no more than a local session
        host, env = info["HostConfig"], dict(e.split("=", 1) for e in info["Config"]["Env"])
        assert env.get("ANTHROPIC_API_KEY") == "sk-fleet" and "sk-fleet-other" not in json.dumps(env)
        assert os.environ["PREFECT_API_AUTH_STRING"] not in json.dumps(
            env
        )  # the API only through the gateway
        assert host["CapDrop"] == ["ALL"] and sorted(host["CapAdd"]) == ["NET_ADMIN", "SYS_ADMIN"]
        assert not host["Privileged"] and "no-new-privileges" in host["SecurityOpt"]
        assert not any(o.startswith("seccomp=unconfined") for o in host["SecurityOpt"])
        binds = host["Binds"] or []
        assert len(binds) == 2 and binds[0].endswith(":ro") and "/inputs/" in binds[0], binds
        assert binds[1].endswith(":rw") and "/sessions/" in binds[1]  # its own results folder only
        assert host["NetworkMode"] == "none"  # the gateway's socket is its only way out
    # and from the container's own processes (not the agent's): the worker machine's other ports, the
    # bridge and the internet are unreachable, the gateway closes on a destination its run does not
    # name, and the API's secrets are refused to it (it holds no credential; the gateway adds none)
    expected = {
        "bridge": "OSError",
        "outside": "OSError",
        "gateway-other": "closed",
        "gateway-secrets": "HTTP/1.1 403",
    }
    assert seen.probed == expected, seen.probed


def test_waiting_runs_start_their_containers_ahead_and_every_run_runs_once(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 sessions at --concurrency 12 over the module's three fleet workers: nine runs wait in the
    pool, so each worker starts a waiting run's container ahead (the first it owns; two may prepare
    the same run) and claims it when a slot frees. The report is the local one; every session's flow
    run ran once (one RUNNING state, ended COMPLETED), some in a container started ahead; none of those
    is left at the end. (At --concurrency 6 only one to three runs waited at a time, often none of
    them a given worker's own: in one run of the test in four or five here, no container was started ahead.)"""
    monkeypatch.chdir(suite)
    since = datetime.now(UTC)
    with FakeProvider(judge, agent=agent, delay=0.3).anthropic_env(monkeypatch) as server:
        local = run(suite, server.url, "local")
        remote = run(suite, server.url, "remote", "--fleet-pool", POOL, "--concurrency", "12")
    assert comparable(remote) == comparable(local)
    runs = asyncio.run(session_runs(since))
    ran = {run_id: states for run_id, (states, _) in runs.items() if "RUNNING" in states}
    assert len(ran) == 12
    assert all(states.count("RUNNING") == 1 and states[-1] == "COMPLETED" for states in ran.values()), runs
    # any other flow run was never begun: one the parent cancelled as its worker looked gone, and
    # dispatched again (a worker's heartbeats unrecorded by the busy test server for a minute)
    assert all(states[-1] == "CANCELLED" for run_id, (states, _) in runs.items() if run_id not in ran), runs
    # a worker's log lines reach the API in its batches (every 2 s; later when the server is busy)
    deadline = time.monotonic() + 30
    while not any("was started ahead" in line for _, logs in runs.values() for line in logs):
        assert time.monotonic() < deadline, "no run's container was started ahead"
        time.sleep(1)
        runs = asyncio.run(session_runs(since))
    deadline = time.monotonic() + 60
    while containers(POOL) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert containers(POOL) == []  # the losers of a race ended, the workers removed what they held


async def session_runs(since: datetime) -> dict[str, tuple[list[str], list[str]]]:
    """The session flow runs created since ``since``: each one's state types in order, and its logs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId

    from flows.engine.container_engine import SESSION_FLOW

    out = {}
    async with get_client() as client:
        for run in await client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[SESSION_FLOW]))
        ):
            if run.created is None or run.created < since:
                continue
            states = sorted(await client.read_flow_run_states(run.id), key=lambda s: s.timestamp)
            logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
            out[str(run.id)] = ([s.type.value for s in states], [line.message for line in logs])
    return out


#: Run by `docker exec` in a fleet container: what its own processes can reach (PORT: a listener on
#: every address of the worker machine).
CONTAINER_PROBE = """
import json, socket
def tcp(host, port):
    try:
        socket.create_connection((host, port), 3).close()
        return "open"
    except OSError:
        return "OSError"
out = {"bridge": tcp("172.17.0.1", PORT), "outside": tcp("1.1.1.1", 80)}
gateway = socket.socket(socket.AF_UNIX)
gateway.settimeout(10)
gateway.connect("/run/skillab-gateway/gateway.sock")
gateway.sendall(b"127.0.0.1:PORT\\n")
out["gateway-other"] = "closed" if gateway.recv(16) == b"" else "open"
api = socket.socket(socket.AF_UNIX)
api.settimeout(10)
api.connect("/run/skillab-gateway/gateway.sock")
body = b'{"include_secrets": true}'
head = "POST /api/block_documents/filter HTTP/1.1\\r\\nHost: api\\r\\nContent-Length: %d\\r\\n\\r\\n"
api.sendall(b"prefect\\n" + (head % len(body)).encode() + body)
out["gateway-secrets"] = api.recv(12).decode()
print(json.dumps(out))
"""


class Inspected:
    """Every container of the pool seen running while the block runs: its id -> `docker inspect`;
    and in the first one, what CONTAINER_PROBE finds reachable (``port``: the bait listener)."""

    def __init__(self, port: int) -> None:
        self.containers: dict[str, Any] = {}
        self.port = port
        self.probed: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Inspected:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _watch(self) -> None:
        while not self._stop.wait(0.3):
            for cid in set(containers(POOL)) - set(self.containers):
                proc = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True, check=False)
                if proc.returncode == 0:
                    self.containers[cid] = json.loads(proc.stdout)[0]
                if not self.probed:
                    script = CONTAINER_PROBE.replace("PORT", str(self.port))
                    probe = subprocess.run(
                        ["docker", "exec", cid, "python3", "-c", script],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if probe.returncode == 0:
                        self.probed = json.loads(probe.stdout)


def probe_agent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Tries every address but the model endpoint from inside the session, then answers."""
    if "tool_result" in json.dumps(body["messages"]):
        return [{"type": "text", "text": "probed"}]
    targets = json.loads(PROBES.read_text())
    script = (
        "import socket, json\n"
        "out = {}\n"
        f"for host, port in {targets!r}:\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3).close(); out[f'{host}:{port}'] = 'open'\n"
        "    except OSError as e:\n"
        "        out[f'{host}:{port}'] = type(e).__name__\n"
        "open('net.json', 'w').write(json.dumps(out))\n"
    )
    return [{"type": "tool_use", "name": "Bash", "input": {"command": f"python3 - <<'EOF'\n{script}EOF"}}]


PROBES = Path(os.environ.get("TMPDIR", "/tmp")) / "skillab-fleet-probes.json"


def test_a_session_in_a_container_reaches_the_model_endpoint_and_nothing_else(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session reaches its model (it ran), while the Prefect API, the model server's own port, the
    Docker bridge's gateway and any outside address refuse it, as they do a session run here."""
    from prefect.settings import get_current_settings

    monkeypatch.chdir(suite)
    for path in (suite / "suite").glob("task-0[23]*"):  # one task: two sessions probe
        path.unlink()
    api = urlsplit(str(get_current_settings().api.url))
    with FakeProvider(judge, agent=probe_agent) as server:
        model = urlsplit(server.url)
        targets = [
            ("127.0.0.1", api.port),
            ("127.0.0.1", model.port),
            ("172.17.0.1", api.port),
            ("1.1.1.1", 80),
        ]
        PROBES.write_text(json.dumps(targets))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = [*skill_run(suite, server.url, "net"), "--fleet-pool", POOL]
        main([*args, "--timeout", "60", "--concurrency", "4"])
    (folder,) = (suite / "net").glob("calc-skill-*")
    seen = json.loads((folder / "sandbox/task-01/with-skill/net.json").read_text())
    assert len(seen) == 4 and all(v != "open" for v in seen.values()), seen


def test_killing_a_worker_loses_nothing_and_an_unchanged_baseline_is_not_run_again(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed while every worker runs a session: its container finishes, every session runs
    once, none is an error. A second run with the skill edited dispatches only the with-skill arm."""
    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent, delay=1.0).anthropic_env(monkeypatch) as server:
        args = [*skill_run(suite, server.url, "kill"), "--fleet-pool", POOL]
        args += ["--timeout", "240", "--concurrency", "6"]
        codes: list[int] = []
        thread = threading.Thread(target=lambda: codes.append(main(args)))
        thread.start()
        wait_for_sessions(server, 3)  # every worker running a session
        fleet.kill("worker-0")
        thread.join(600)
        assert codes == [0]
        assert first_turns(server) == 6  # 3 tasks x 2 arms, each run once
        fleet.start("worker-0")
        skill_md = suite / ".claude" / "skills" / "calc-skill" / "SKILL.md"
        skill_md.write_text(skill_md.read_text() + "\nPrefer short functions.\n")
        assert main(args) == 0
        assert first_turns(server) == 9  # only the with-skill arm ran again
    first, second = sorted((suite / "kill").glob("calc-skill-*"))
    report = json.loads((first / "report.json").read_text())
    assert all(report["summary"][arm]["errorCount"] == 0 for arm in ("baseline", "with-skill"))
    assert json.loads((second / "report.json").read_text())["meta"]["reusedSessions"] == 3


def test_a_pool_without_a_worker_gives_errors_not_a_hang(
    fleet: Workers, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions dispatched to a pool no worker polls (its machines gone) become errors the report
    counts once the wait runs out, and their flow runs are cancelled."""
    register("skillab-test-idle", str(tmp_path / "idle-storage"))
    monkeypatch.chdir(suite)
    monkeypatch.setenv("SKILLAB_FLEET_NO_WORKER_S", "2")
    with FakeProvider(judge, agent=agent) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        args = skill_run(suite, server.url, "idle")
        assert main([*args, "--fleet-pool", "skillab-test-idle"]) != 0
        assert first_turns(server) == 0
    (folder,) = (suite / "idle").glob("calc-skill-*")
    meta = json.loads((folder / "outputs/task-01/with-skill/meta.json").read_text())
    assert meta["status"] == "error" and "no worker of the pool online for 2s" in meta["error"]


def test_a_trigger_suite_in_containers_gives_the_local_figures(
    fleet: Workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trigger sessions through the pool: the same rates, listing records and verdicts as here."""
    from tests.fakes.provider import SkillScript
    from tests.flows.modes.triggers.test_trigger_bench import NAME, project

    root = project(tmp_path, {"v1": "Writes greeting files. Use when asked for a greeting file."})
    monkeypatch.chdir(root)
    reports = []
    with FakeProvider() as server:
        SkillScript(
            NAME, p_by_query={"What is 17 times 3?": 0.0, "Explain what a greeting card is": 0.0}
        ).install(server)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["skill", "triggers", "run", "--queries", "queries.yaml", "--base-url", server.url, "--quiet"]
        args += [
            "--skill",
            str(root / "skills" / "v1" / NAME),
            "--no-cache",
            "--timeout",
            "60",
            "--runs",
            "1",
        ]
        for where, extra in (("here", []), ("fleet", ["--fleet-pool", POOL])):
            assert main([*args, "--results-dir", str(root / where), *extra]) == 0
            (path,) = (root / where).glob("*-triggers-*.json")
            reports.append(json.loads(path.read_text()))
    here, there = reports
    assert comparable(there) == comparable(here)
    (summary,) = there["triggers"]["summaries"]
    assert summary["counted"] == 4 and summary["queries"][0]["trigger"]["rate"] == 1.0
    assert there["meta"]["fleetPool"] == POOL and here["meta"].get("fleetPool") is None


def test_a_pool_that_cannot_take_the_run_is_one_line_and_exit_2(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No deployment for the pool, or a flag the fleet cannot honour: exit 2 before any session."""
    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        args = skill_run(suite, server.url, "bad")
        assert main([*args, "--fleet-pool", "no-such-pool"]) == 2
        assert "--fleet-pool: no deployment 'skillab-session/no-such-pool'" in capsys.readouterr().err
        assert main([*args, "--fleet-pool", POOL, "--allow-network"]) == 2
        assert "--fleet-pool: not with --allow-network" in capsys.readouterr().err
        assert first_turns(server) == 0
