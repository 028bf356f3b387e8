"""Bad input: one clear line naming the file, the sample and the field; nothing is called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executors.errors import InputError
from flows.inputs.samples import load_config, load_samples, load_variants


def lines_for(tmp_path: Path, content: str, name: str = "eval-samples.json") -> list[str]:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_samples(path)
    return info.value.lines


def js(samples: list) -> str:
    return json.dumps(samples)


def test_valid_json_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(js([{"sample_id": "s1", "prompt": "p", "context": "c", "tags": ["t"]}]))
    s = load_samples(tmp_path / "a.json")[0]
    assert s.full_prompt == "p\n\n```\nc\n```" and s.tags == ("t",)
    (tmp_path / "a.yaml").write_text("- sample_id: s1\n  prompt: p\n  cluster: g1\n")
    assert load_samples(tmp_path / "a.yaml")[0].cluster == "g1"


def test_json_syntax_error_names_line(tmp_path: Path) -> None:
    assert lines_for(tmp_path, '[\n{"sample_id": "s1",\n "prompt": }\n]') == [
        f"{tmp_path}/eval-samples.json: line 3: invalid JSON: Expecting value"
    ]


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    out = lines_for(tmp_path, "- sample_id: s1\n  prompt: [unclosed\n- x\n", "eval-samples.yaml")
    assert len(out) == 1 and "eval-samples.yaml: line" in out[0] and "invalid YAML" in out[0]


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([{"prompt": "p"}], "sample #1: sample_id: required field missing"),
        ([{"sample_id": "s1"}], "sample s1: prompt: required field missing"),
        ([{"sample_id": "s1", "prompt": 3}], "sample s1: prompt: Input should be a valid string (got 3)"),
        (
            [{"sample_id": "s1", "promt": "p", "prompt": "p"}],
            "sample s1: promt: unknown field (did you mean 'prompt'?)",
        ),
        (
            [{"sample_id": "s1", "prompt": "p"}, {"sample_id": "s1", "prompt": "q"}],
            "sample s1: sample_id: duplicate of sample #1",
        ),
        (
            [{"sample_id": "s1", "prompt": "p", "assertions": [{"type": "contians", "value": "x"}]}],
            "sample s1: assertions[0].type: unknown assertion type 'contians' (did you mean 'contains'?)",
        ),
        (
            [{"sample_id": "s1", "prompt": "p", "assertions": [{"type": "regex", "pattern": "(unclosed"}]}],
            "sample s1: assertions[0]: bad regex '(unclosed': missing ) at position 9",
        ),
        (
            [
                {
                    "sample_id": "s1",
                    "prompt": "p",
                    "assertions": [{"type": "regex", "pattern": "x", "flags": "q"}],
                }
            ],
            "sample s1: assertions[0]: unknown regex flag 'q' (use i, m, s)",
        ),
        (
            [{"sample_id": "s1", "prompt": "p", "assertions": [{"type": "custom", "fn": "nope.py"}]}],
            "sample s1: assertions[0]: custom assertion file not found: ",
        ),
        (
            [{"sample_id": "s1", "prompt": "p", "assertions": [{"type": "contains"}]}],
            "sample s1: assertions[0].value: required for type 'contains'",
        ),
        (
            [{"sample_id": "s1", "prompt": "p", "assertions": [{"type": "max_length", "value": "ten"}]}],
            "sample s1: assertions[0].value: type 'max_length' needs a number, got 'ten'",
        ),
        (
            [
                {
                    "sample_id": "s1",
                    "prompt": "p",
                    "assertions": [{"type": "contains", "value": "x", "wieght": 2}],
                }
            ],
            "sample s1: assertions[0].wieght: unknown field (did you mean 'weight'?)",
        ),
        ({"sample_id": "s1"}, "expected an array of samples, got dict"),
    ],
)
def test_bad_samples(tmp_path: Path, samples: object, expected: str) -> None:
    out = lines_for(tmp_path, js(samples))  # type: ignore[arg-type]
    assert len(out) == 1, out
    assert out[0].startswith(f"{tmp_path}/eval-samples.json: ")
    assert expected in out[0], out[0]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    out = lines_for(
        tmp_path,
        js([{"sample_id": "a"}, {"sample_id": "b", "prompt": "p", "assertions": [{"type": "nope"}]}]),
    )
    assert len(out) == 2


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_samples(tmp_path / "missing.json")


def test_variants(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "v2").mkdir(parents=True)
    (skills / "v1.md").write_text("one")
    (skills / "v2" / "SKILL.md").write_text("two")
    got = load_variants(skills, ("baseline", "v1", "v2"))
    assert [(v.name, v.artifact) for v in got] == [("baseline", None), ("v1", "one"), ("v2", "two")]
    assert got[1].sha256 == "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed"
    with pytest.raises(InputError) as info:
        load_variants(skills, ("v1", "v3"))
    assert info.value.lines == [
        f"{skills}: variant 'v3': no v3.md or v3/SKILL.md (found: v1, v2; 'baseline' means no artifact)"
    ]


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "skillab.yaml"
    path.write_text("variants: a,b\nmax-tokens: 5\n")
    assert load_config(path) == {"variants": ["a", "b"], "max_tokens": 5}
    path.write_text("concurrenc: 3\n")
    with pytest.raises(InputError, match="concurrenc: unknown option \\(did you mean 'concurrency'\\?\\)"):
        load_config(path)
    path.write_text("concurrency: many\n")
    with pytest.raises(InputError, match=r"skillab\.yaml: concurrency: "):
        load_config(path)
