"""Hostile suites and plugins against the real parts: the claude CLI in bubblewrap, the forwarder,
the scripted model server on 127.0.0.1. Each attack of the "hostile suites" issue fails, and the
user gets one line."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from executors.base import ExecutorSettings
from executors.case_env import refusal
from executors.claude_code import ClaudeCodeExecutor
from executors.contents import LINK_NOTE, archive_tree, copy_tree, inspect_tree
from executors.egress import PLACEHOLDER_KEY
from executors.errors import InputError
from executors.parsing import load_json, load_yaml
from executors.redaction import MASK, redact
from executors.sandbox import host_env, probe, run_sandboxed
from executors.workspace import claim, sandboxes, sweep
from flows.report.logtext import md
from graders.plugin_eval import RegexGrader, merge_case, parse_case
from graders.plugin_grading import RunEvidence, grade_deterministic
from tests.agents import agent_request, need
from tests.fakes.escape import bash_agent
from tests.fakes.provider import FakeProvider

needs_bwrap = pytest.mark.skipif(probe() is not None, reason=f"bubblewrap cannot run here: {probe()}")
#: A fake key for every provider, and credentials of other kinds a user's shell may hold.
FAKE_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-anthropic-" + uuid.uuid4().hex,
    "OPENAI_API_KEY": "sk-fake-openai-" + uuid.uuid4().hex,
    "GEMINI_API_KEY": "fake-gemini-" + uuid.uuid4().hex,
    "GOOGLE_API_KEY": "fake-google-" + uuid.uuid4().hex,
    "AWS_SECRET_ACCESS_KEY": "fake-aws-" + uuid.uuid4().hex,
    "GITHUB_TOKEN": "fake-github-" + uuid.uuid4().hex,
}


def claude_session(server: FakeProvider, root: Path, **fields: Any) -> Any:
    need("claude")
    request = agent_request(root, **fields)
    return asyncio.run(ClaudeCodeExecutor(ExecutorSettings(base_url=server.url)).session(request))


def tool_output(session: Any) -> str:
    (result,) = [e for e in session.events if e.kind == "tool_result"]
    return str(result.text)


@pytest.fixture
def planted() -> Iterator[dict[str, Path]]:
    """A secret file outside every place a sandbox needs: /srv and /var/tmp (another checkout, a
    service's data), removed afterwards."""
    token = uuid.uuid4().hex
    places = {
        "srv": Path("/srv") / f"skillab-planted-{token}",
        "var": Path(tempfile.mkdtemp(prefix="skillab-planted-", dir="/var/tmp")),
    }
    for folder in places.values():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".env").write_text(f"PLANTED=canary-{token}\n")
    try:
        yield places
    finally:
        for folder in places.values():
            shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
def test_a_session_holds_no_key_and_reaches_only_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: dict[str, Path]
) -> None:
    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    with FakeProvider(answer=lambda system, prompt: "other") as other:
        probe_script = "; ".join(
            [
                "env",
                "cat /proc/self/environ | tr '\\0' '\\n'",
                *(f"cat {p}/.env" for p in planted.values()),
                "ls /work /home /srv /opt 2>&1",
                # the Prefect API, the judge, any other local server; and the model server directly
                f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {other.port}), 3)\" "
                "&& echo REACHED-OTHER",
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', MODEL), 3)\" "
                "&& echo REACHED-MODEL-DIRECTLY",
            ]
        )
        with FakeProvider(agent=bash_agent("")) as server:
            server.agent = bash_agent(probe_script.replace("MODEL", str(server.port)))
            session = claude_session(server, tmp_path)
            calls = list(server.calls)
        assert not other.calls
    assert session.ok, session.error
    out = tool_output(session)
    raw = (tmp_path / "out" / "raw_stream.jsonl").read_text()
    for name, value in FAKE_KEYS.items():
        assert value not in out and value not in raw, f"{name} reached the sandbox or the results"
    assert f"ANTHROPIC_API_KEY={PLACEHOLDER_KEY}" in out  # what the CLI was given instead
    assert "canary-" not in out and "REACHED-OTHER" not in out and "REACHED-MODEL-DIRECTLY" not in out
    assert out.count("No such file or directory") >= 4  # /srv, /var/tmp, /work, /home are not there
    # ... and yet every model call carried the user's key, added by the forwarder on the host
    anthropic = [c for c in calls if c.protocol == "anthropic"]
    assert anthropic and all(c.auth.get("x-api-key") == FAKE_KEYS["ANTHROPIC_API_KEY"] for c in anthropic)
    bodies = json.dumps([c.body for c in calls])  # what the model was sent: no key, no planted file
    assert "canary-" not in bodies and not any(v in bodies for v in FAKE_KEYS.values())


@needs_bwrap
def test_allow_network_widens_it_and_says_so(tmp_path: Path) -> None:
    with FakeProvider(answer=lambda system, prompt: "other") as other:
        command = (
            f"python3 -c \"import urllib.request as u; u.urlopen('{other.url}/', timeout=5)\" && echo REACHED"
        )
        with FakeProvider(agent=bash_agent(command)) as server:
            session = claude_session(server, tmp_path, allow_network=True)
    assert session.ok, session.error
    assert "REACHED" in tool_output(session)


def test_a_case_env_cannot_redirect_the_session() -> None:
    for name in (
        "ANTHROPIC_BASE_URL",
        "HTTPS_PROXY",
        "https_proxy",
        "NODE_OPTIONS",
        "NODE_EXTRA_CA_CERTS",
        "SSL_CERT_FILE",
        "LD_PRELOAD",
        "CLAUDE_CONFIG_DIR",
        "ANTHROPIC_API_KEY",
        "MY_API_TOKEN",
        "PATH",
    ):
        assert refusal(name) is not None, name
    for name in ("MAX_THINKING_TOKENS", "BASH_DEFAULT_TIMEOUT_MS", "GREETING_STYLE"):
        assert refusal(name) is None, name
    case = {
        "schema_version": "1.0",
        "name": "redirect",
        "execution": {"prompt": "hi", "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}},
        "graders": [{"name": "g", "type": "regex", "pattern": "hi"}],
    }
    data = merge_case(case, None, [], "redirect")
    with pytest.raises(InputError) as caught:
        parse_case(data, "evals/redirect")
    (line,) = caught.value.lines
    assert line.startswith("evals/redirect: execution.env.ANTHROPIC_BASE_URL: a case may not set it")


def test_a_case_env_in_prompt_front_matter_is_refused_by_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main
    from tests.fakes.capture_claude import write_plugin

    plugin = write_plugin(tmp_path / "plugins")
    case = plugin / "evals" / "steal"
    case.mkdir(parents=True)
    (case / "prompt.md").write_text(
        "---\nschema_version: '1.0'\nenv:\n  HTTPS_PROXY: http://127.0.0.1:9\n---\nSay hi.\n"
    )
    (case / "graders").mkdir()
    (case / "graders" / "hi.md").write_text("---\ntype: regex\n---\nhi\n")
    monkeypatch.chdir(tmp_path)
    code = main(["skill", "run", "--suite", str(plugin)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "steal" in err[0] and "execution.env.HTTPS_PROXY: a case may not set it" in err[0]


def test_a_plugin_link_out_of_its_folder_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main
    from tests.fakes.capture_claude import write_plugin

    plugin = write_plugin(tmp_path / "plugins")
    (plugin / "skills" / "calc-rules" / "rootdir").symlink_to("/root")
    (tmp_path / "suite").mkdir()
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    code = main(["skill", "run", "--skill", str(plugin), "--tasks", "suite"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "rootdir: a link that leaves the folder (-> /root): refused" in err[0]
    assert time.monotonic() - started < 60  # refused, not copied


# ----------------------------------------------------------------- copies


def tree_strategy() -> st.SearchStrategy[list[tuple[str, str, str]]]:
    """Entries (kind, path, link target) of a folder: files, folders, and links that stay inside,
    leave it (absolute or with ..), dangle, or loop."""
    names = st.sampled_from(["a", "b", "c", "sub/d", "sub/e", "sub/deep/f"])
    targets = st.sampled_from(["a", "sub", "../outside", "/etc", "/root", "sub/../a", "missing", "loop", "."])
    entry = st.one_of(
        st.tuples(st.just("file"), names, st.just("")),
        st.tuples(st.just("dir"), names, st.just("")),
        st.tuples(st.just("link"), names, targets),
    )
    return st.lists(entry, max_size=8)


def build(root: Path, entries: list[tuple[str, str, str]]) -> None:
    root.mkdir(parents=True)
    (root.parent / "outside").mkdir(exist_ok=True)
    (root.parent / "outside" / "secret").write_text("host")
    for kind, rel, target in entries:
        path = root / rel
        if path.exists() or path.is_symlink():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            continue
        if kind == "file":
            path.write_text(rel)
        elif kind == "dir":
            path.mkdir()
        else:
            path.symlink_to(path.name if target == "loop" else target)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=tree_strategy())
def test_a_copy_never_brings_anything_from_outside(
    tmp_path_factory: pytest.TempPathFactory, entries: Any
) -> None:
    base = tmp_path_factory.mktemp("tree")
    src, dst = base / "src", base / "dst"
    build(src, entries)
    leaves = any(
        not Path(os.path.realpath(p)).is_relative_to(os.path.realpath(src))
        for p in src.rglob("*")
        if p.is_symlink()
    )
    try:
        copy_tree(src, dst, "skill x")
    except InputError as exc:
        assert leaves, f"refused a tree that stays inside: {exc}"
        assert "a link that leaves the folder" in str(exc) and "\n" not in str(exc)
        return
    assert not leaves
    for path in dst.rglob("*"):
        assert Path(os.path.realpath(path)).is_relative_to(os.path.realpath(dst)), path
        if path.is_file():
            assert path.read_text() != "host"


def test_copy_bounds_and_special_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "skill"
    src.mkdir()
    for i in range(12):
        (src / f"f{i}").write_text("x" * 1000)
    monkeypatch.setenv("SKILLAB_COPY_MAX_FILES", "10")
    with pytest.raises(InputError, match="more than 10 files"):
        inspect_tree(src, "skill x")
    monkeypatch.delenv("SKILLAB_COPY_MAX_FILES")
    os.mkfifo(src / "pipe")
    with pytest.raises(InputError, match="pipe: not a regular file, folder or link"):
        copy_tree(src, tmp_path / "copy", "skill x")


def test_a_skill_creator_files_entry_that_is_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    from flows.inputs.suites.skill_creator import load_evals

    skill = tmp_path / "ext"
    (skill / "evals").mkdir(parents=True)
    os.mkfifo(skill / "fifo")
    evals = {
        "skill_name": "s",
        "evals": [{"id": 1, "prompt": "hi", "files": ["fifo"], "expectations": ["ok"]}],
    }
    (skill / "evals" / "evals.json").write_text(json.dumps(evals))
    with pytest.raises(InputError, match="fifo: not a regular file"):
        load_evals(skill / "evals" / "evals.json")  # refused at once: reading a fifo would hang


def test_an_error_about_a_name_with_a_newline_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main

    (tmp_path / "eval-samples.json").write_text(
        json.dumps([{"sample_id": "a\n## Where Skill Helps", "prompt": "p"}])
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--dry-run", "--samples", "eval-samples.json"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_results_keep_no_link_out_of_the_sandbox(tmp_path: Path) -> None:
    sandbox = tmp_path / "sb"
    (sandbox / "inner").mkdir(parents=True)
    (sandbox / "inner" / "file.txt").write_text("mine")
    (sandbox / "leakdir").symlink_to("/root")
    (sandbox / "ok").symlink_to("inner/file.txt")
    replaced = archive_tree(sandbox, tmp_path / "archive")
    assert replaced == 1
    leak = tmp_path / "archive" / "leakdir"
    assert not leak.is_symlink() and leak.read_text() == LINK_NOTE.format(target="/root")
    assert (tmp_path / "archive" / "ok").read_text() == "mine"


# ----------------------------------------------------------------- bounds


def test_a_catastrophic_regex_is_a_grading_error_within_its_budget() -> None:
    run = RunEvidence(events=_last_message("a" * 34 + "!"), created_files=[], read_file=lambda p: None)
    started = time.monotonic()
    # the pattern: the regex engine needs no budget for it (re froze on it)
    quick = grade_deterministic(RegexGrader(name="q", type="regex", pattern="^(a+)+$"), run)
    assert quick is not None and quick.explanation == "pattern not found in last_message"
    # one that backtracks exponentially there too: a grading error, within the budget
    slow = grade_deterministic(RegexGrader(name="slow", type="regex", pattern="^(a|aa)+$"), run)
    assert slow is not None and not slow.passed and slow.error
    assert "grading error: pattern took too long" in slow.explanation
    assert time.monotonic() - started < 30


def _last_message(text: str) -> list[dict[str, Any]]:
    return [{"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}]


def test_an_alias_bomb_and_deep_nesting_are_refused_quickly() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    started = time.monotonic()
    with pytest.raises(yaml.YAMLError, match="expands to more than"):
        load_yaml(bomb)
    assert time.monotonic() - started < 10
    with pytest.raises(yaml.YAMLError, match="nested too deeply"):
        load_yaml("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        load_json("[" * 100_000 + "]" * 100_000)
    assert load_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}


FORKS = """
import os, time
started = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        started += 1
    except OSError:
        break
print(f"STARTED={started}", flush=True)
"""


@needs_bwrap
def test_a_check_is_bounded_in_processes_and_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("SKILLAB_SANDBOX_PIDS", "40")
    python = os.path.realpath(sys.executable)
    code, out = run_sandboxed(
        [python, "-I", "-S", "-c", FORKS],
        isolation="bubblewrap",
        workdir=work,
        env=host_env(),
        timeout_s=60,
        cap=4000,
        readable=[Path(sys.base_prefix), Path(python).parent],
    )
    started = int(out.rsplit("STARTED=", 1)[1].split()[0])
    assert started < 40  # the pids cgroup (or, for a non-root user, the process rlimit) held
    monkeypatch.setenv("SKILLAB_SANDBOX_DISK_MB", "20")
    code, out = run_sandboxed(
        [
            "/bin/bash",
            "-c",
            "for i in $(seq 60); do head -c 1048576 /dev/zero > f$i; sleep 0.05; done; echo END",
        ],
        isolation="bubblewrap",
        workdir=work,
        env=host_env(),
        timeout_s=60,
        cap=4000,
    )
    assert code is None and "the sandbox's disk bound" in out and "END" not in out


# ----------------------------------------------------------------- secrets and names


def test_secrets_are_masked_in_every_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.store.files import atomic_write_json

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-" + "z" * 20)
    text = f"key {'sk-ant-' + 'q' * 30} token {'tok-' + 'z' * 20} gh {'ghp_' + 'A' * 36} fine"
    assert redact(text) == f"key {MASK} token {MASK} gh {MASK} fine"
    atomic_write_json(tmp_path / "r.json", {"transcript": text})
    written = (tmp_path / "r.json").read_text()
    assert "sk-ant-" not in written and "tok-" not in written and written.count(MASK) == 3


#: The key shapes as first written, each behind ``\b``: the fast form must mask exactly the same.
WORD_BOUNDED_SHAPES = re.compile(
    r"\bsk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_\-]{20,}|\bAIza[0-9A-Za-z_\-]{30,}|\bgh[pousr]_[A-Za-z0-9]{30,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b|\bhf_[A-Za-z0-9]{30,}"
)
PIECES = (
    "sk-",
    "sk-ant-",
    "AIza",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "AKIA",
    "hf_",
    "risk-",
    "é",
    "_",
    "-",
    " ",
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text("aZ09_-é ", min_size=1, max_size=40), max_size=12))
def test_key_shapes_start_at_a_word_boundary(parts: list[str]) -> None:
    from executors.redaction import KEY_SHAPES

    text = "".join(parts)
    assert KEY_SHAPES.sub(MASK, text) == WORD_BOUNDED_SHAPES.sub(MASK, text)


def test_the_forwarder_serves_only_its_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from executors.egress import ANTHROPIC, forwarder

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEYS["ANTHROPIC_API_KEY"])

    def status(port: int, target: str) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(f"GET {target} HTTP/1.1\r\nHost: elsewhere\r\n\r\n".encode())
            return conn.recv(200).split(b"\r\n", 1)[0]

    with FakeProvider() as server:
        route = forwarder().route(ANTHROPIC, f"{server.url}/gateway", tcp=True)
        assert route.port is not None
        escapes = (
            "/gateway/../admin",
            "/gateway/v1/../../admin",
            "/gateway/%2e%2e/admin",
            "/gateway/%2E%2E/admin",
            "/gateway%2f..%2fadmin",
            "/gateway/..%2Fadmin",
            "/gateway/..%5cadmin",
            "/gateway\\..\\admin",
            "//admin/gateway",
            "/gateway/./../admin",
            "/..",
        )
        for target in (
            "/admin/secrets",
            "/gatewayx/v1/messages",
            f"http://127.0.0.1:{server.port}/",
            "*",
            *escapes,
        ):
            assert status(route.port, target).split()[1] in (b"403", b"400"), target
        assert (
            status(route.port, "/gateway/v1/models").split()[1] == b"404"
        )  # forwarded: the upstream answered
        assert not server.calls
        # a path that only looks odd but stays under the prefix is forwarded, normalised
        assert status(route.port, "/gateway//v1/./models").split()[1] == b"404"


def test_a_request_path_is_normalised_as_an_upstream_would_read_it() -> None:
    from executors.egress import normalised_target

    assert normalised_target("/v1/../admin") == "/admin"
    assert normalised_target("/v1/%2e%2e%2Fadmin?x=%2e") == "/admin?x=%2e"
    assert normalised_target("/v1\\..\\admin") == "/admin"
    assert normalised_target("//v1///messages/") == "/v1/messages/"
    assert normalised_target("/v1/messages?beta=true") == "/v1/messages?beta=true"
    assert normalised_target("/../v1") is None
    # what a lenient or twice-decoding upstream reads as "..": refused, never forwarded as sent
    for odd in ("/v1/..;/admin", "/v1/.%2e;/admin", "/v1/%252e%252e/admin", "/v1/%c0%ae%c0%ae/admin",
                "/v1/%u002e%u002e/admin", "/v1/..%00/admin", "/v1/..%20/admin", "/v1/.../admin"):  # fmt: skip
        assert normalised_target(odd) is None, odd
    assert normalised_target("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse") == (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert normalised_target("http://elsewhere/v1") is None


def test_secrets_are_masked_in_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import logging

    from flows.engine.runlog import RedactSecrets

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEYS["ANTHROPIC_API_KEY"])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger("skillab-test-redaction")
    logger.addHandler(handler)
    try:
        logger.error("call failed with key %s", FAKE_KEYS["ANTHROPIC_API_KEY"])
    finally:
        logger.removeHandler(handler)
    assert FAKE_KEYS["ANTHROPIC_API_KEY"] not in stream.getvalue() and MASK in stream.getvalue()


def test_names_cannot_rewrite_the_report() -> None:
    name = "<script>alert(1)</script>\n## Where Skill Helps\n- injected | row |"
    case = {"schema_version": "1.0", "name": name, "execution": {"prompt": "p"}}
    data = merge_case(case | {"graders": [{"name": "g", "type": "regex", "pattern": "p"}]}, None, [], "x")
    with pytest.raises(InputError) as caught:
        parse_case(data, "evals/x")
    assert "name: must be one line without control characters" in caught.value.lines[0]
    cell = md("<script>x</script> | y\n## z")
    assert "<" not in cell and "\n" not in cell and "\\|" in cell


# ----------------------------------------------------------------- leftovers


def test_the_sweep_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = claim(sandboxes() / f"orphan{uuid.uuid4().hex[:6]}")
    (sandboxes() / ".owners" / orphan.name).write_text(str(dead.pid))
    (orphan / "leak").symlink_to("/root")
    mine = claim(sandboxes() / f"mine{uuid.uuid4().hex[:6]}")
    try:
        sweep()
        assert not orphan.exists() and mine.exists()
        assert Path("/root").exists()  # the link was removed, not followed
    finally:
        shutil.rmtree(mine, ignore_errors=True)
        (sandboxes() / ".owners" / mine.name).unlink(missing_ok=True)


def test_report_meta_records_the_network(tmp_path: Path) -> None:
    from flows.report.build import isolation_meta

    assert "model endpoint only" in str(isolation_meta("bubblewrap")["network"])
    assert "--allow-network" in str(isolation_meta("bubblewrap", True)["network"])
    assert "no OS sandbox" in str(isolation_meta("none")["network"])
    json.dumps(isolation_meta("none"))
