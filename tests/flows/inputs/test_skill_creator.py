"""skill-creator's evals.json as an agentic suite: loading, confinement of input files, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from executors.errors import InputError
from flows.cli.main import main
from flows.inputs.skill_config import load_tasks
from flows.inputs.suites.skill_creator import evals_file, load_evals, skill_root, stage_inputs


def write_skill(root: Path, evals: Any, files: dict[str, str] | None = None) -> Path:
    """A skill folder as skill-creator leaves it: SKILL.md, evals/evals.json and input files."""
    (root / "evals" / "files").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: csv-skill\ndescription: Sums CSV columns.\n---\nSum it.\n")
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    path = root / "evals" / "evals.json"
    path.write_text(evals if isinstance(evals, str) else json.dumps(evals))
    return path


GOOD = {
    "skill_name": "csv-skill",
    "evals": [
        {
            "id": 1,
            "prompt": "Sum the amount column of the CSV.",
            "expected_output": "The total, 60.",
            "files": ["evals/files/sales.csv"],
            "expectations": ["The answer states the total 60", "The agent read sales.csv"],
        },
        {"id": 2, "prompt": "Say hello.", "expected_output": "A greeting.", "files": [], "expectations": []},
    ],
}


def test_loads_every_eval_with_its_fields(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "csv-skill", GOOD, {"evals/files/sales.csv": "amount\n10\n20\n30\n"})
    tasks, digest = load_evals(path)
    first, second = tasks
    assert first.task_id == "eval-1" and second.task_id == "eval-2"
    assert first.prompt == "Sum the amount column of the CSV.\n\nInput files: evals/files/sales.csv"
    assert first.expected_outcome == "The total, 60."
    assert first.expectations == ("The answer states the total 60", "The agent read sales.csv")
    assert first.input_files == ("evals/files/sales.csv",)
    assert first.input_root == str((tmp_path / "csv-skill").resolve())
    assert first.category == "csv-skill" and first.checks == () and first.type == "positive"
    # no expectations: the four-criterion judge against expected_output
    assert second.expectations == () and second.prompt == "Say hello." and second.input_files == ()
    # the hash covers the input files: a changed input is a changed suite
    (tmp_path / "csv-skill" / "evals/files/sales.csv").write_text("amount\n1\n")
    assert load_evals(path)[1] != digest


def test_tasks_flag_finds_the_evals_from_the_file_or_the_skill_folder(tmp_path: Path) -> None:
    skill = tmp_path / "csv-skill"
    path = write_skill(skill, GOOD, {"evals/files/sales.csv": "amount\n1\n"})
    assert evals_file(skill) == skill / "evals" / "evals.json" and evals_file(path) == path
    assert skill_root(path) == skill.resolve()
    assert [t.task_id for t in load_tasks(skill)[0]] == ["eval-1", "eval-2"]
    assert [t.task_id for t in load_tasks(path)[0]] == ["eval-1", "eval-2"]
    markdown_suite = tmp_path / "suite"
    markdown_suite.mkdir()
    assert evals_file(markdown_suite) is None  # a folder of task-*.md stays the seed's format
    renamed = tmp_path / "csv-evals.json"
    renamed.write_text(path.read_text())
    other = tmp_path / "other.json"
    other.write_text('{"tests": []}')
    assert evals_file(renamed) == renamed and evals_file(other) is None  # other formats pass by
    assert evals_file(tmp_path / "missing" / "evals.json") is not None  # reported as missing on load
    with pytest.raises(InputError, match=r"no such evals\.json"):
        load_tasks(tmp_path / "missing" / "evals.json")


def test_an_id_less_eval_is_named_by_its_index_and_string_ids_pass(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "s", {"evals": [{"prompt": "a"}, {"id": "edge-case", "prompt": "b"}]})
    assert [t.task_id for t in load_evals(path)[0]] == ["eval-0", "eval-edge-case"]


def test_input_files_are_staged_at_their_relative_paths(tmp_path: Path) -> None:
    path = write_skill(
        tmp_path / "s",
        {"evals": [{"id": 7, "prompt": "p", "files": ["evals/files/a.txt", "./data/dir"]}]},
        {"evals/files/a.txt": "alpha", "data/dir/b.txt": "beta"},
    )
    (task,) = load_evals(path)[0]
    assert task.input_files == ("evals/files/a.txt", "data/dir")
    sandbox = tmp_path / "sandbox"
    assert stage_inputs(task, sandbox) == ["evals/files/a.txt", "data/dir"]
    assert (sandbox / "evals/files/a.txt").read_text() == "alpha"
    assert (sandbox / "data/dir/b.txt").read_text() == "beta"
    # a file that became a link leading outside after loading is refused when it is copied
    (tmp_path / "s/evals/files/a.txt").unlink()
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path / "secret", tmp_path / "s/evals/files/a.txt")
    with pytest.raises(ValueError, match="leads outside the skill folder"):
        stage_inputs(task, tmp_path / "sandbox2")


@pytest.mark.parametrize(
    ("evals", "expected"),
    [
        ("{not json", "not valid JSON"),
        ({"skill_name": "s"}, 'evals: expected a list of evals, {"skill_name": ..., "evals": [...]} or the list alone; got no evals key'),
        ({"evals": {"id": 1}}, "evals: expected a list of evals"),
        ("3", "got a JSON int"),
        ({"evals": []}, "got an empty list"),
        ({"evals": [{"id": 1, "expected_output": "x"}]}, "eval 1 (evals[0]): prompt: required, a non-empty string"),
        ({"evals": [{"id": 1, "prompt": "  "}]}, "eval 1 (evals[0]): prompt: required"),
        ({"evals": [{"id": 3, "prompt": "p", "expectations": ["ok", 5]}]}, "eval 3 (evals[0]): expectations[1]: expected a non-empty string (got 5)"),
        ({"evals": [{"id": 3, "prompt": "p", "expectations": "one"}]}, "eval 3 (evals[0]): expectations: expected a list of strings (got str)"),
        ({"evals": [{"id": 4, "prompt": "p", "files": ["evals/files/nope.csv"]}]}, "eval 4 (evals[0]): files[0]: 'evals/files/nope.csv': no such file"),
        ({"evals": [{"id": 4, "prompt": "p", "files": ["../outside.txt"]}]}, "eval 4 (evals[0]): files[0]: '../outside.txt' climbs out of the skill folder with '..'"),
        ({"evals": [{"id": 4, "prompt": "p", "files": ["/etc/passwd"]}]}, "eval 4 (evals[0]): files[0]: '/etc/passwd' is not a path relative to the skill folder"),
        ({"evals": [{"id": 1, "prompt": "p"}, {"id": 1, "prompt": "q"}]}, "evals[1]: id: '1' repeats the id of evals[0]"),
        ({"evals": [{"id": True, "prompt": "p"}]}, "evals[0]: id: expected an integer or a string (got True)"),
        ({"evals": ["just a prompt"]}, "eval 0 (evals[0]): expected an object with id, prompt"),
        ({"skill_name": 3, "evals": [{"prompt": "p"}]}, "skill_name: expected a string (got 3)"),
    ],
)  # fmt: skip
def test_bad_evals_are_one_line_naming_file_eval_and_field(tmp_path: Path, evals: Any, expected: str) -> None:
    (tmp_path / "outside.txt").write_text("x")
    path = write_skill(tmp_path / "s", evals)
    with pytest.raises(InputError) as info:
        load_evals(path)
    (line,) = info.value.lines
    assert line.startswith(f"{path}: ") and expected in line, line


def test_a_link_out_of_the_skill_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("x")
    path = write_skill(tmp_path / "s", {"evals": [{"id": 1, "prompt": "p", "files": ["evals/files/s.txt"]}]})
    os.symlink(tmp_path / "secret.txt", tmp_path / "s/evals/files/s.txt")
    with pytest.raises(
        InputError, match=r"eval 1 \(evals\[0\]\): files\[0\]: .* leads outside the skill folder"
    ):
        load_evals(path)


def test_every_bad_eval_is_reported(tmp_path: Path) -> None:
    path = write_skill(
        tmp_path / "s", {"evals": [{"id": 1}, {"id": 2, "prompt": "ok"}, {"id": 3, "prompt": 4}]}
    )
    with pytest.raises(InputError) as info:
        load_evals(path)
    assert [line.split(": ")[1] for line in info.value.lines] == ["eval 1 (evals[0])", "eval 3 (evals[2])"]


def test_skill_run_exits_2_on_a_bad_evals_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    skill = tmp_path / "csv-skill"
    write_skill(skill, {"evals": [{"id": 9, "prompt": "p", "files": ["evals/files/missing.csv"]}]})
    monkeypatch.chdir(tmp_path)
    assert main(["skill", "run", "--skill", "csv-skill", "--tasks", "csv-skill", "--no-os-sandbox"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "evals.json: eval 9 (evals[0]): files[0]: 'evals/files/missing.csv': no such file" in err[0]
    )


def test_evals_written_for_another_skill_are_said_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_skill(tmp_path / "csv-skill", GOOD, {"evals/files/sales.csv": "amount\n60\n"})
    other = tmp_path / "other-skill"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: other-skill\ndescription: d\n---\n# A\nx\n")
    monkeypatch.chdir(tmp_path)
    # --ablate-sections without --ablate stops the command after the inputs are read, before any session.
    stop = ["--ablate-sections", "A", "--no-os-sandbox"]
    assert main(["skill", "run", "--skill", "other-skill", "--tasks", "csv-skill", *stop]) == 2
    err = capsys.readouterr().err
    assert (
        "skill_name: these evals were written for 'csv-skill', not for the skill under test 'other-skill'"
        in err
    )
    assert main(["skill", "run", "--skill", "csv-skill", "--tasks", "csv-skill", *stop]) == 2
    assert "written for" not in capsys.readouterr().err


def test_a_skill_folder_without_evals_is_named_as_such(tmp_path: Path) -> None:
    skill = tmp_path / "csv-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: csv-skill\ndescription: d\n---\nSum it.\n")
    with pytest.raises(InputError, match=r"a skill folder without evals/evals\.json"):
        load_tasks(skill)


def test_other_writers_of_the_format_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """agentskills.io's guide (assertions), an eval's name, the list alone, and keys skillab does not
    read: one notice, never an error."""
    evals = [
        {"id": 1, "name": "Sum sales", "prompt": "Sum the amount column.", "assertions": ["States 60"]},
        {"id": 2, "eval_name": "Greet", "prompt": "Say hello.", "expectations": ["Greets"], "_comment": "x"},
        {"id": 3, "prompt": "Long prompt that titles itself", "notes": "y"},
    ]
    path = write_skill(tmp_path / "s", evals)
    assert evals_file(path) == path and evals_file(tmp_path / "s") == path
    tasks, _ = load_evals(path)
    assert [t.name for t in tasks] == [
        "eval 1: Sum sales",
        "eval 2: Greet",
        "eval 3: Long prompt that titles itself",
    ]
    assert [t.expectations for t in tasks] == [("States 60",), ("Greets",), ()]
    (notice,) = capsys.readouterr().err.strip().splitlines()
    assert "ignored key(s) _comment, notes" in notice and "warning" in notice
    other = tmp_path / "other.json"  # a bare list under another name is evals when its entries have prompts
    other.write_text(json.dumps(evals))
    assert evals_file(other) == other
    other.write_text(json.dumps([{"query": "q", "should_trigger": True}]))
    assert evals_file(other) is None  # a trigger set, not evals
