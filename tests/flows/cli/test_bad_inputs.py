"""The corpus of malformed inputs (tests/data/bad_inputs.yaml): each gives exactly its one error line
on stderr and exit code 2, before any model call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from executors.agent import CLI_DIR_ENV, DEFAULT_CLI_DIR
from flows.cli.main import main

CORPUS = Path(__file__).resolve().parents[3] / "tests" / "data" / "bad_inputs.yaml"
EXPECTED = Path(__file__).resolve().parents[3] / "tests" / "data" / "bad_inputs_expected.yaml"
CASES = yaml.safe_load(CORPUS.read_text())
BASE_FILES = {
    "eval-samples.json": '[{"sample_id": "s1", "prompt": "What is 2+2?", "assertions": [{"type": "contains", "value": "4"}]}]',
    "skills/v1.md": "Answer.",
    "skills/v2.md": "Answer briefly.",
    ".claude/skills/calc/SKILL.md": "---\nname: calc\ndescription: calc\n---\n# Calc\n",
    "suite/task-01-easy.md": "# Task: t\ndifficulty: easy\n\n## Prompt\np\n\n## Expected Outcome\no\n\n"
    "## Verification Checks\n- file_exists: a.py\n\n## Grading Rubric\nr\n",
}


def write_files(case: dict, root: Path) -> None:
    """``files`` (text; "hex:..." for bytes; "{deep}" expands to brackets nested ``deep`` times),
    ``dirs`` (folders where a file is expected) and ``symlinks`` (name -> target)."""
    deep = int(case.get("deep", 0))
    for name, content in (BASE_FILES | (case.get("files") or {})).items():
        path = root / name
        if content is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if content.startswith("hex:"):
            path.write_bytes(bytes.fromhex(content[4:]))
        else:
            path.write_text(content.replace("{deep}", "[" * deep + "]" * deep))
    for name in case.get("dirs") or []:
        (root / name).mkdir(parents=True, exist_ok=True)
    for name, target in (case.get("symlinks") or {}).items():
        (root / name).symlink_to(target)


def run_case(case: dict, root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    write_files(case, root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        if case["args"][0] == "deployments":
            from deployments.__main__ import main as deployments_main

            code = deployments_main(case["args"][1:])
        else:
            try:
                code = main(case["args"])
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    lines = [line.replace(str(root), "{dir}") for line in err.splitlines() if line.strip()]
    return code, lines


def test_corpus_is_large_and_named_uniquely() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) >= 40 and len(set(names)) == len(names)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input(
    case: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
    ):
        monkeypatch.delenv(key, raising=False)
    # The agent CLIs stay where set-up put them (found through HOME until HOME changes below).
    monkeypatch.setenv(CLI_DIR_ENV, os.environ.get(CLI_DIR_ENV) or str(DEFAULT_CLI_DIR))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no user-level skills or configs leak in
    for key, value in (case.get("env") or {}).items():
        monkeypatch.setenv(key, value)
    code, lines = run_case(case, tmp_path / "project", capsys)
    expected = yaml.safe_load(EXPECTED.read_text()) if EXPECTED.exists() else {}
    if os.environ.get("SKILLAB_RECORD_BAD_INPUTS"):
        print(f"RECORD {case['name']}: {lines!r}")
        return
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0] == expected.get(case["name"]), f"{case['name']}: {lines[0]!r}"
