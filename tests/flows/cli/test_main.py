"""The command line: bad input is one line on stderr and exit code 2, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from tests.flows.helpers import make_project


def err_of(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--concurrency", "many"], "argument --concurrency: invalid int value: 'many'"),
        (["run", "--concurrency", "0"], "--concurrency: Input should be greater than or equal to 1 (got 0)"),
        (["run", "--executor", "opnai"], "--executor: unknown executor 'opnai' (did you mean 'openai'?)"),
        (["run", "--variants", "v1,v9"], "variant 'v9': no v9.md or v9/SKILL.md"),
        (["run", "--samples", "nope.json"], "nope.json: file not found"),
        (["run", "--executor", "openai"], "--executor: executor 'openai' needs OPENAI_API_KEY set"),
        (["run", "--control", "v3"], "--control: 'v3' is not among the variants v1,v2"),
        (["run", "--config", "missing.yaml"], "missing.yaml: file not found (--config)"),
        (
            ["run", "--executor", "local", "--model", "/no/such.gguf"],
            "--model: GGUF file not found: /no/such.gguf",
        ),
        (["bench"], "invalid choice: 'bench'"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    expected: str,
) -> None:
    project = make_project(tmp_path / "p", n=2)
    monkeypatch.chdir(project)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, lines = err_of(args, capsys)
    assert code == 2
    errors = [line for line in lines if line.startswith("skillab: error:")]
    assert len(errors) == 1 and expected in errors[0], lines


def test_config_file_is_read_and_flags_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(tmp_path / "p", n=2)
    (project / "skillab.yaml").write_text("variants: v1\nrepeat: 3\n")
    monkeypatch.chdir(project)
    assert main(["run", "--dry-run"]) == 0
    assert "2 samples x 1 variants (v1) x 3 run(s) = 6 model calls" in capsys.readouterr().out
    assert main(["run", "--dry-run", "--repeat", "1", "--variants", "baseline,v1,v2"]) == 0
    assert "2 samples x 3 variants (baseline, v1, v2) x 1 run(s) = 6 model calls" in capsys.readouterr().out


def test_help_reads_well(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for flag in (
        "--samples",
        "--skill-dir",
        "--variants",
        "--model",
        "--output-dir",
        "--no-judge",
        "--dry-run",
        "--blind",
        "--concurrency",
        "--repeat",
        "--executor",
        "--judge-model",
    ):
        assert flag in out
