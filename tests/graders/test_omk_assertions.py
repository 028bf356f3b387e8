"""oh-my-knowledge 0.54's assertion types beyond the seed's: tool/turn checks, reference
similarity (ROUGE-N, BLEU, Levenshtein), assert-set, and load-time rules."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from executors.errors import InputError
from graders import similarity
from graders.judge import Judgement, assertion_aspect, judge_layer, prompts_for
from graders.registry import is_judged, parse, run_assertion
from graders.schema import Observation, Sample, ToolCall

OMK = Path("/work/cache/omk/node_modules/oh-my-knowledge/dist/grading/assertions.js")


def check(output: str, obs_fields: dict | None = None, **fields: object) -> tuple[bool, str]:
    a = parse(fields, ".")
    result = run_assertion(a, Observation(output=output, **(obs_fields or {})))
    return result.passed, result.message


CALLS = {
    "num_turns": 4,
    "tool_calls": (
        ToolCall(tool="Read", input={"file_path": "/src/App.tsx"}, output="export default App"),
        ToolCall(tool="Bash", input={"command": "npm test"}, output="3 passed"),
    ),
}


def test_turns_in_sample_mode_and_in_an_agent_run() -> None:
    assert check("x", type="turns_max", value=1)[0]  # a sample-mode call is one turn
    assert not check("x", type="turns_min", value=2)[0]
    assert check("x", CALLS, type="turns_min", value=4)[0]
    assert not check("x", CALLS, type="turns_max", value=3)[0]
    assert not check("x", {"num_turns": None}, type="turns_max", value=100)[0]  # unknown: infinite


def test_tool_calls() -> None:
    assert check("x", CALLS, type="tools_called", values=["read", "BASH"])[0]
    assert not check("x", CALLS, type="tools_called", values=["Read", "Write"])[0]
    assert not check("x", type="tools_called", values=["Read"])[0]  # sample mode: no tools
    assert check("x", type="tools_not_called", values=["Read"])[0]
    assert not check("x", CALLS, type="tools_not_called", values=["bash"])[0]
    assert check("x", CALLS, type="tools_count_max", value=2)[0]
    assert not check("x", CALLS, type="tools_count_min", value=3)[0]
    assert check("x", CALLS, type="tool_output_contains", value="bash:3 PASSED")[0]
    assert not check("x", CALLS, type="tool_output_contains", value="Read:3 passed")[0]
    assert check("x", CALLS, type="tool_input_contains", value='Read:"file_path":"/src/app')[0]
    assert not check("x", CALLS, type="tool_input_not_contains", value="Bash:npm test")[0]
    assert check("x", CALLS, type="tool_input_not_contains", value="Bash:rm -rf")[0]


def test_mock_hit() -> None:
    assert not check("x", type="mock_hit", value="Bash:1")[0]
    assert check("x", {"mock_hits": {"Bash:1": 2}}, type="mock_hit", value="Bash:1", threshold=2)[0]
    with pytest.raises(InputError, match="Tool:N"):
        parse(dict(type="mock_hit", value="Bash"), ".")


def test_rouge_bleu_levenshtein_values() -> None:
    ref = "the cat sat on the mat"
    assert similarity.rouge_n("the cat sat", ref, 1) == pytest.approx(3 / 6)
    assert similarity.rouge_n("the the the the the the", ref, 1) == pytest.approx(2 / 6)  # clipped
    assert similarity.rouge_n("猫坐在垫子上", "猫坐在垫子", 2) == 1.0  # CJK characters are tokens
    assert similarity.bleu(ref, ref) == pytest.approx(1.0)
    assert similarity.bleu("the cat", ref) == 0.0  # no 3-gram: unsmoothed BLEU is 0
    assert similarity.levenshtein("kitten", "sitting") == 3
    assert similarity.levenshtein("", "abc") == 3 and similarity.levenshtein("same", "same") == 0
    long_a, long_b = "ab" * 3000, "ba" * 3000
    assert similarity.levenshtein(long_a, long_b) == 2


def test_similarity_assertions() -> None:
    assert check("the cat sat on a mat", type="rouge_n_min", reference="the cat sat on the mat")[0]
    passed, message = check("dog", type="rouge_n_min", reference="the cat", n=2, threshold=0.1)
    assert not passed and "ROUGE-2 0.000" in message
    assert check("Paris is the capital", type="levenshtein_max", reference="Paris is the capitol", value=1)[0]
    assert not check("abc", type="levenshtein_max", reference="xyz", value=2)[0]
    assert check("a b c d e", type="bleu_min", reference="a b c d e", threshold=0.9)[0]
    with pytest.raises(InputError, match="threshold: must be between 0 and 1"):
        parse(dict(type="bleu_min", reference="r", threshold=3), ".")
    with pytest.raises(InputError, match="reference: required"):
        parse(dict(type="rouge_n_min", value="r"), ".")


def test_assert_set_any_all_not_and_nesting() -> None:
    children = [{"type": "contains", "value": "alpha"}, {"type": "contains", "value": "beta"}]
    assert check("alpha", type="assert-set", mode="any", children=children)[0]
    passed, message = check("alpha", type="assert-set", children=children)
    assert not passed and "1/2 passed (all)" in message and "missing 'beta'" in message
    negated = [{"type": "contains", "value": "beta", "not": True}, {"type": "min_length", "value": 3}]
    assert check("alpha", type="assert-set", children=negated)[0]
    nested = [{"type": "assert-set", "mode": "any", "children": children}, {"type": "max_length", "value": 9}]
    assert check("beta", type="assert-set", children=nested)[0]
    with pytest.raises(InputError, match="cannot be inside an assert-set"):
        parse(dict(type="assert-set", children=[{"type": "semantic_similarity", "reference": "r"}]), ".")
    with pytest.raises(InputError, match="children: assert-set needs at least one"):
        parse(dict(type="assert-set", children=[]), ".")
    with pytest.raises(InputError, match=r"children: \[0\] type: unknown assertion type 'contain'"):
        parse(dict(type="assert-set", children=[{"type": "contain", "value": "x"}]), ".")


def test_unknown_type_names_the_closest() -> None:
    with pytest.raises(InputError, match="did you mean 'tools_called'"):
        parse(dict(type="tool_called", values=["x"]), ".")


def test_rag_types_go_to_the_judge() -> None:
    sample = Sample(
        sample_id="s",
        prompt="What is the capital?",
        context="France's capital is Paris.",
        assertions=(
            parse(dict(type="faithfulness"), "."),
            parse(dict(type="answer_relevancy", threshold=4), "."),
            parse(dict(type="context_recall", reference="Paris"), "."),
        ),
    )
    assert all(is_judged(a) for a in sample.assertions)
    prompts = prompts_for(sample, "Paris.")
    assert [p.aspect for p in prompts] == ["faithfulness#0", "answer_relevancy#1", "context_recall#2"]
    assert "France's capital is Paris." in prompts[0].prompt and "What is the capital?" in prompts[1].prompt
    assert assertion_aspect("context_recall#2") == 2 and assertion_aspect("rubric") is None
    judgements = [Judgement(p.aspect, "j", score) for p, score in zip(prompts, [5.0, 3.0, 4.0], strict=True)]
    _, results = judge_layer(sample, judgements)
    assert [results[i].passed for i in range(3)] == [True, False, True]
    assert results[1].message.startswith("answer_relevancy 3/5 (threshold 4)")


CASES = [
    ("the cat sat on a mat with a hat", "the cat sat on the mat"),
    ("猫坐在垫子上 and the mat", "猫坐在垫子 the mat"),
    ("Review: SQL injection found; use parameterized queries!", "SQL injection; parameterized queries"),
    ("", "x"),
    ("a a a a", "a a"),
]


@pytest.mark.skipif(
    shutil.which("node") is None or not OMK.is_file(), reason="oh-my-knowledge 0.54 not installed"
)
def test_same_numbers_as_oh_my_knowledge() -> None:
    """Our ROUGE/BLEU/Levenshtein against oh-my-knowledge's own functions, run by node."""
    script = (
        f"import {{ rougeN, bleu, levenshtein }} from '{OMK}';\n"
        f"const cases = {json.dumps(CASES)};\n"
        "console.log(JSON.stringify(cases.map(([c, r]) => [rougeN(c, r, 1), rougeN(c, r, 2), bleu(c, r),"
        " levenshtein(c, r)])));\n"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    expected = json.loads(out.stdout)
    ours = [
        [
            similarity.rouge_n(c, r, 1),
            similarity.rouge_n(c, r, 2),
            similarity.bleu(c, r),
            similarity.levenshtein(c, r),
        ]
        for c, r in CASES
    ]
    assert [v for row in ours for v in row] == pytest.approx([v for row in expected for v in row])
