"""Agent sessions in containers of a Prefect Docker work pool: the real Docker daemon, the fleet's
image built here, real prefect-docker workers, the real Claude Code CLI inside the containers
against the scripted model server on this machine's 127.0.0.1, storage through a folder URL."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from flows.cli.main import main
from tests.fakes.provider import FakeProvider
from tests.fakes.s3 import s3_bucket
from tests.flows.helpers import Workers, subprocess_env
from tests.flows.modes.agentic.test_skill_bench import agent, calc_project, judge, skill_run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]
POOL = "skillab-test-fleet"
CLIS = ("claude", "copilot", "opencode")  # one image for every test here: its base layer is made once


def docker_ready() -> str | None:
    try:
        proc = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if proc.returncode == 0 else proc.stderr.decode()[-300:]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """The image, the pool and its deployment (storage: a folder, mounted), three workers."""
    if (problem := docker_ready()) is not None:
        pytest.fail(f"the Docker daemon is not running (scripts/test.sh starts it): {problem}")
    from deployments.fleet import register

    storage = tmp_path_factory.mktemp("fleet-storage")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ANTHROPIC_API_KEY", "sk-fleet")  # into a Secret block the worker gives containers
        env.setenv("OPENAI_API_KEY", "sk-fleet-other")  # registered too: no claude container gets it
        register(POOL, str(storage), CLIS)
    workers = Workers(POOL, "docker", tmp_path_factory.mktemp("workers"))
    try:
        for i in range(3):
            workers.start(f"worker-{i}")
        yield workers
    finally:
        workers.stop()


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return calc_project(
        tmp_path / "proj",
        {
            "task-01-easy": ("add 0", "Create calc.py with add(a, b)."),
            "task-02-easy": ("add 1", "Write calc.py defining add(a, b)."),
            "task-03-medium": ("add 3", "Make calc.py with add(a, b)."),
        },
    )


def run(suite: Path, url: str, results: str, *extra: str, runs: int = 2) -> dict[str, Any]:
    args = [*skill_run(suite, url, results), "--runs", str(runs)]
    assert main([*args, "--timeout", "60", "--concurrency", "6", *extra]) == 0
    (folder,) = (suite / results).glob("calc-skill-*")
    return json.loads((folder / "report.json").read_text())


#: What differs between two runs of the same suite whatever ran them: timings, costs and token counts
#: (a container's CLI describes another machine in its system prompt), folders, ids.
VARYING = re.compile(r"duration|tokens|cost|latency|timestamp|seconds|dir$|outputs|^id$", re.I)


def comparable(value: Any) -> Any:
    """A report less what varies between runs (its meta is the run's own)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k != "meta" and not VARYING.search(k)}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def first_turns(server: FakeProvider) -> int:
    """Agent sessions the scripted server saw start: a request with tools and no tool result yet."""
    return server.count(
        lambda c: bool(c.body.get("tools")) and "tool_result" not in json.dumps(c.body["messages"])
    )


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
            for cid in set(containers()) - set(self.containers):
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
        wait_for_containers(3)  # every worker running a session
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


def containers(*status: str) -> list[str]:
    """The ids of the pool's containers that exist now (running or paused), or in ``status``."""
    proc = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=io.prefect.work-pool-name={POOL}"]
        + [f"--filter=status={s}" for s in status],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()


def running_containers() -> int:
    return len(containers())


def wait_for_containers(n: int) -> None:
    deadline = time.monotonic() + 240
    while running_containers() < n and time.monotonic() < deadline:
        time.sleep(0.5)
    assert running_containers() == n, f"{n} sessions were to be running in containers"


def test_a_pool_without_a_worker_gives_errors_not_a_hang(
    fleet: Workers, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions dispatched to a pool no worker polls (its machines gone) become errors the report
    counts once the wait runs out, and their flow runs are cancelled."""
    from deployments.fleet import register

    register("skillab-test-idle", str(tmp_path / "idle-storage"), CLIS)
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


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with s3_bucket(monkeypatch, "skillab-fleet") as bucket:
        yield f"s3://{bucket}/runs"


def test_sessions_travel_through_s3_with_nothing_mounted(
    fleet: Workers, s3: str, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool whose storage is an s3:// URL: no folder is mounted into its containers and no
    credential of the bucket reaches them: each flow run carries URLs signed for its own session's
    part (its inputs and record to read, its mark, files and record to write), and every session's
    inputs, record and files travel through the bucket; the parent grades them as usual."""
    import fsspec
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    from deployments.fleet import register

    register("skillab-test-s3", s3, CLIS)
    workers = Workers("skillab-test-s3", "docker", tmp_path)
    workers.start("s3-worker")
    monkeypatch.chdir(suite)
    for path in (suite / "suite").glob("task-03*"):
        path.unlink()
    try:
        with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
            report = run(suite, server.url, "s3", "--fleet-pool", "skillab-test-s3", runs=1)
    finally:
        workers.stop()

    async def template() -> tuple[dict[str, Any], list[Any]]:
        async with get_client() as client:
            pool = await client.read_work_pool("skillab-test-s3")
            deployment = await client.read_deployment_by_name("skillab-session/skillab-test-s3")
            runs = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
            )
            return pool.base_job_template, runs

    base, runs = asyncio.run(template())
    props = base["variables"]["properties"]
    assert props["volumes"]["default"] == [] and props["env"]["default"] == {}
    assert runs
    for r in runs:  # URLs signed for its session's part alone, no credential of the bucket
        key, inputs = r.parameters["key"], r.parameters["inputs"]
        assert sorted(r.parameters["signed"]) == sorted(
            [f"GET inputs/{inputs}.tar", f"GET sessions/{key}/session.json"]
            + [f"PUT sessions/{key}/{name}" for name in ("started", "files.tar", "session.json")]
        )
        assert "fleet-test-secret" not in json.dumps(r.parameters) + json.dumps(r.job_variables)
    records = fsspec.filesystem("s3", skip_instance_cache=True).glob(
        f"{s3.removeprefix('s3://')}/sessions/*/session.json"
    )
    assert len(records) == 4  # 2 tasks x 2 arms
    assert report["summary"]["with-skill"]["avgCompositeScore"] == 90


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


def test_copilot_and_opencode_sessions_run_in_the_fleets_containers(
    fleet: Workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copilot CLI and OpenCode in the fleet's image: a two-agent matrix through the pool finds each
    agent's scripted effect (none on copilot; on opencode a fix of one task of two), every session clean."""
    from tests.flows.modes.agentic.test_agent_matrix import EASY, anthropic_agents, opencode_agent

    calc_project(
        tmp_path,
        {"task-01-easy": ("task 1", "Create calc.py with add(a, b)."), "task-02-easy": ("task 2", EASY)},
    )
    monkeypatch.chdir(tmp_path)
    with FakeProvider(judge, agent=anthropic_agents) as server:
        server.chat_agent = opencode_agent
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        args = ["skill", "run", "--skill", "calc-skill", "--tasks", "suite", "--runner", "copilot,opencode"]
        args += ["--base-url", f"copilot={server.url},opencode={server.url}/v1"]
        args += ["--judge-model", "claude-opus-4", "--results-dir", str(tmp_path / "results")]
        main([*args, "--timeout", "240", "--concurrency", "4", "--fleet-pool", POOL])
    (root,) = (tmp_path / "results").glob("calc-skill-agents-*")
    report = json.loads((root / "report.json").read_text())
    lifts = {a["runner"]: a for a in report["matrix"]["agents"]}
    assert lifts["copilot"]["paired"]["mean"] == 0 and lifts["opencode"]["paired"]["mean"] == 25
    assert all(a["invokedRate"] == 1.0 and a["errors"] == 0 for a in lifts.values())


def test_the_budget_holds_for_sessions_in_the_pool(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--max-calls counts the sessions the parent dispatches: 2 of the 6 run, 4 are not run."""
    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent).anthropic_env(monkeypatch) as server:
        args = [*skill_run(suite, server.url, "budget"), "--max-calls", "2"]
        main([*args, "--fleet-pool", POOL, "--concurrency", "1"])
        assert first_turns(server) == 2
    (folder,) = (suite / "budget").glob("calc-skill-*")
    meta = json.loads((folder / "report.json").read_text())["meta"]
    assert len(meta["notRun"]) == 4 and all(n["reason"] == "budget" for n in meta["notRun"])


def test_a_hung_container_is_cancelled_and_counted_as_an_error(
    fleet: Workers, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A container frozen mid-session (docker pause) stores no result: once the session's timeout and
    the grace period have passed since a worker took it, its flow run is cancelled and the session is
    an error the report counts. (A frozen container outlives the cancellation: removed here.)"""
    monkeypatch.chdir(suite)
    for path in (suite / "suite").glob("task-0[23]*"):
        path.unlink()
    monkeypatch.setenv("SKILLAB_FLEET_GRACE_S", "1")
    frozen: list[str] = []

    def freeze_the_first() -> None:
        deadline = time.monotonic() + 120
        while not frozen and time.monotonic() < deadline:
            for container in containers("running"):
                if subprocess.run(["docker", "pause", container], capture_output=True).returncode == 0:
                    frozen.append(container)
                    break
            time.sleep(0.2)

    with FakeProvider(judge, agent=agent, delay=1.0) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        args = [*skill_run(suite, server.url, "hung"), "--timeout", "10"]
        watcher = threading.Thread(target=freeze_the_first)
        watcher.start()
        try:
            main([*args, "--fleet-pool", POOL, "--concurrency", "1"])
        finally:
            watcher.join()
            subprocess.run(["docker", "rm", "-f", *frozen], capture_output=True, check=False)
    (folder,) = (suite / "hung").glob("calc-skill-*")
    errors = [json.loads(p.read_text()) for p in folder.glob("outputs/task-01/*/meta.json")]
    assert frozen and any(m["status"] == "error" and "after a worker took it" in m["error"] for m in errors)


def restart_the_server(down_s: float) -> None:
    """The test's Prefect server killed outright and, ``down_s`` later, started again on its port
    with its database (a crash and a restart, as a machine's service manager does it)."""
    import httpx
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    server = SubprocessASGIServer._instances[None]
    assert server.api_url == str(get_current_settings().api.url) and server.server_process
    server.server_process.kill()
    server.server_process.wait()
    time.sleep(down_s)
    server.server_process = server._run_uvicorn_command()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{server.api_url}/health", timeout=5).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError("the Prefect server did not come back")


def test_a_prefect_server_restarted_mid_run_loses_nothing(
    fleet: Workers, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server killed while sessions run in containers and started again: the run finishes with
    every session run once and none an error, the fleet's limit held throughout, every slot it took
    given back (the leases outlive the server: a leaked slot would stall the next run), and the run
    itself, taken back once the API answers again, completed in the Prefect UI."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    from flows.engine.fleet import fleet_name

    monkeypatch.chdir(suite)
    with FakeProvider(judge, agent=agent, delay=1.0).anthropic_env(monkeypatch) as server:
        args = [*skill_run(suite, server.url, "restart"), "--fleet-pool", POOL, "--fleet-sessions", "2"]
        # the parent in a process of its own: a run that stalls is killed, not left holding the test
        with open(tmp_path / "parent.err", "wb") as err:
            parent = subprocess.Popen(
                [sys.executable, "-m", "flows.bench", *args, "--timeout", "90"],
                env=subprocess_env(),
                stderr=err,
            )
        try:
            wait_for_containers(2)  # the fleet's two sessions running
            restart_the_server(down_s=5)
            assert parent.wait(timeout=300) == 0
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
        assert first_turns(server) == 6 and server.peak <= 2
        limit = fleet_name("claude")

    async def afterwards() -> tuple[int, Any]:
        async with get_client() as client:
            slots = (await client.read_global_concurrency_limit_by_name(limit)).active_slots
            (newest,) = await client.read_flow_runs(  # this test's parent
                flow_filter=FlowFilter(name=FlowFilterName(any_=["skill-bench"])),
                sort=FlowRunSort.START_TIME_DESC,
                limit=1,
            )
            return slots, newest.state

    slots, state = asyncio.run(afterwards())
    told = (tmp_path / "parent.err").read_text()
    assert slots == 0 and state is not None and state.is_completed(), state
    assert "stopped answering" in told and "answers again: the run goes on with it" in told, told
    (folder,) = (suite / "restart").glob("calc-skill-*")
    report = json.loads((folder / "report.json").read_text())
    assert all(report["summary"][arm]["errorCount"] == 0 for arm in ("baseline", "with-skill"))
