"""The proof that a mode is a type: a throwaway fourth mode, one folder (written here, outside the
repository) plus one registry line, is picked up by the command line, the nightly deployments, the
certificate, the console, JUnit and the report server, none of which is changed for it."""

from __future__ import annotations

import json
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import flows.modes.registry as registry
from deployments.suites import build, load
from flows.cli.main import build_parser, main
from flows.report.ci import write_junit
from flows.report.console import economy_lines
from flows.report.schema import load_report
from flows.report.server import create_app
from flows.report.validity import certify

DESCRIPTOR = '''
"""The echo mode: each word of --words is a case, scored by its length."""

from pathlib import Path
from types import MappingProxyType
from typing import Any

from flows.report.modes import BaseMode


class EchoMode(BaseMode):
    name = "echo"
    report = "echo_mode.model:EchoReport"
    words = MappingProxyType({"echo": "score each word by its length (a mode made by a test)"})

    def add_commands(self, sub: Any) -> None:
        from echo_mode.cli import add_commands

        add_commands(sub)

    def nightly_flow(self) -> Any:
        from echo_mode.cli import nightly_echo

        return nightly_echo

    def check_suite(self, config: Path) -> None:
        from echo_mode.cli import suite_words

        suite_words(config)


MODE = EchoMode()
'''

MODEL = '''
"""The echo mode's report: one line of its own in the certificate, its own JUnit suite."""

from typing import Literal

from pydantic import Field

from flows.report.entries import CaseResult, SampleVariantResult
from flows.report.schema import CheckStatus, JunitCase, Meta, Report, ValidityCheck


class EchoReport(Report):
    """An echo-mode run."""

    mode: Literal["echo"]
    meta: Meta
    results: list[CaseResult[SampleVariantResult]] = Field(default_factory=list)

    unit = "word"
    unit_verb = "echoed"

    def own_checks(self, limit: float) -> list[ValidityCheck]:
        return [ValidityCheck(check="echo", status=CheckStatus.PASS, line="every word came back")]

    def junit(self, threshold: float) -> list[tuple[str, list[JunitCase]]]:
        return [("echo", [JunitCase(c.sample_id, None, None) for c in self.results])]
'''

CLI = '''
"""The echo command, and its nightly flow."""

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from prefect import flow

from executors.errors import InputError
from flows.cli.command import Command
from flows.report.build import assemble, new_report_id, publish
from flows.report.console import print_summary
from flows.report.entries import CaseResult, SampleVariantResult
from flows.report.schema import Meta
from flows.report.validity import certify
from tasks.schema import NotRun, SAMPLE_SCALE

from echo_mode.model import EchoReport


def echo(words: list[str], out: Path) -> Path:
    started = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    meta = Meta(
        variants=["echo"], control="echo", model="none", executor="none", judge_model=None,
        sample_count=len(words), task_count=len(words), total_cost_usd=0.0,
        timestamp=started.isoformat(), cli_version="test", seed=1, cache_hits=2, calls=len(words),
        not_run=[NotRun(sample_id="left", variant="echo", run=1, kind="execute", reason="budget")],
    )
    results = [
        CaseResult[SampleVariantResult](
            sample_id=w, prompt=w,
            variants={"echo": SampleVariantResult(run=1, ok=True, composite_score=min(5.0, len(w)), output=w)},
        )
        for w in words
    ]
    report = assemble(EchoReport, new_report_id(started, ["echo"]), meta, SAMPLE_SCALE, None, results)
    report.validity = certify(report, 0.1)
    path = publish(report, out)
    print_summary(report, path)
    return path


def cmd_echo(args: argparse.Namespace, command: Command) -> int:
    echo(args.words.split(","), Path(args.out))
    return 0


def add_commands(sub: Any) -> None:
    p = sub.add_parser("echo", help="score each word by its length (a mode made by a test)")
    p.add_argument("--words", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=cmd_echo)


def suite_words(config: Path) -> list[str]:
    words = yaml.safe_load(config.read_text(encoding="utf-8")).get("words")
    if not isinstance(words, list):
        raise InputError(f"{config}: words: a list of words")
    return words


@flow(name="nightly-echo")
def nightly_echo(config: str, suite: str) -> str:
    return str(echo(suite_words(Path(config)), Path(config).parent / "reports"))
'''


@pytest.fixture
def echo_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fourth mode: its folder, and its line in the registry."""
    folder = tmp_path / "code" / "echo_mode"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    for name, text in {"mode": DESCRIPTOR, "model": MODEL, "cli": CLI}.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder.parent))
    from echo_mode.mode import MODE  # type: ignore[import-not-found]

    monkeypatch.setattr(registry, "MODES", [*registry.MODES, MODE])  # the registry line
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("echo_mode")]:
        del sys.modules[name]


def test_the_command_line_runs_it(echo_mode: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "echo" in build_parser().format_help()
    out = echo_mode / "reports"
    assert main(["echo", "--words", "a,bbb,cc", "--out", str(out)]) == 0
    (path,) = out.glob("*.json")
    report = load_report(path)
    assert type(report).__name__ == "EchoReport" and report.mode == "echo"
    assert [c.sample_id for c in report.results] == ["a", "bbb", "cc"]
    printed = capsys.readouterr().out
    assert "validity: certified" in printed and "PASS echo: every word came back" in printed
    # the console counts the mode's own units, as its report class names them
    assert "cache: 2 result(s) taken from the cache, 3 word(s) echoed" in economy_lines(report)
    assert any(line.startswith("not run: 1 word(s)") for line in economy_lines(report))


def test_the_certificate_and_junit_take_its_lines(echo_mode: Path) -> None:
    main(["echo", "--words", "a,bb", "--out", str(echo_mode / "reports")])
    (path,) = (echo_mode / "reports").glob("*.json")
    report = load_report(path)
    checks = {c.check: c.status for c in certify(report, 0.1).checks}
    assert checks["echo"] == "PASS" and "graders" in checks  # its own line, and the shared ones
    junit = echo_mode / "junit.xml"
    write_junit(report, junit, threshold=3.0)
    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    assert [tc.get("name") for tc in suites["skillab.echo"]] == ["a", "bb"]
    assert "skillab.validity" in suites


def test_nightly_deploys_it(echo_mode: Path) -> None:
    (echo_mode / "echo.yaml").write_text("words: [a, b]\n", encoding="utf-8")
    spec = echo_mode / "deployments.yaml"
    spec.write_text(
        "suites:\n  - name: echo-nightly\n    mode: echo\n    config: echo.yaml\n    cron: '0 5 * * *'\n",
        encoding="utf-8",
    )
    assert [s.mode for s in load(spec)] == ["echo"]
    (deployment,) = build(spec)
    assert deployment.flow_name == "nightly-echo" and "echo" in deployment.tags
    (echo_mode / "echo.yaml").write_text("words: none\n", encoding="utf-8")
    with pytest.raises(Exception, match="words: a list of words"):
        load(spec)


def test_the_report_server_shows_it(echo_mode: Path) -> None:
    reports = echo_mode / "reports"
    main(["echo", "--words", "hello,hi", "--out", str(reports)])
    (path,) = reports.glob("*.json")
    client = TestClient(create_app(reports), base_url="http://127.0.0.1:7799")
    index = client.get("/")
    assert index.status_code == 200 and path.stem in index.text
    page = client.get(f"/run/{path.stem}")
    assert page.status_code == 200 and "hello" in page.text and "every word came back" in page.text
    assert json.loads(client.get(f"/api/run/{path.stem}").text)["mode"] == "echo"
