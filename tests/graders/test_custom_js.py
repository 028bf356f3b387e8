"""JavaScript custom assertions (oh-my-knowledge's ``.mjs`` format) run by the real node, sandboxed."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from executors.errors import InputError
from flows.inputs.samples import load_samples
from graders import confined, custom_js
from graders.registry import parse, run_assertion
from graders.schema import Assertion, AssertionResult, Observation, Sample

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def write(tmp_path: Path, body: str, name: str = "check.mjs") -> Assertion:
    (tmp_path / name).write_text(body)
    return parse(dict(type="custom", fn=name, timeout_s=3), str(tmp_path))


def run(tmp_path: Path, a: Assertion, output: str = "hello world") -> AssertionResult:
    sample = Sample(sample_id="s1", prompt="p", source_dir=str(tmp_path), tags=("x",))
    return run_assertion(a, Observation(output=output, sample=sample))


def test_pass_and_fail_with_message_and_context(tmp_path: Path) -> None:
    a = write(
        tmp_path,
        "export default function (output, { sample, assertion }) {\n"
        "  const ok = output.includes('hello') && sample.sample_id === 's1' && assertion.fn === 'check.mjs';\n"
        "  return { pass: ok, message: ok ? 'found hello' : 'no hello in ' + output };\n"
        "}\n",
    )
    result = run(tmp_path, a)
    assert result.passed and result.message == "found hello"
    result = run(tmp_path, a, output="goodbye")
    assert not result.passed and result.message == "no hello in goodbye"


def test_async_function_and_named_check_export(tmp_path: Path) -> None:
    a = write(
        tmp_path,
        "export default async function (output) {\n"
        "  await new Promise((r) => setTimeout(r, 20));\n"
        "  return { pass: output.length > 3, message: `length ${output.length}`, score: 0.5 };\n"
        "}\n",
    )
    result = run(tmp_path, a)
    assert result.passed and result.message == "length 11" and result.score == 0.5
    b = write(tmp_path, "export function check(output) { return { pass: false }; }\n", "named.mjs")
    assert not run(tmp_path, b).passed


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("export default function () { throw new TypeError('boom here'); }\n", "threw TypeError: boom here"),
        ("export default async () => { throw new Error('later'); };\n", "Error: later"),
        ("export default function () { while (true) {} }\n", "timed out after 3s"),
        ("export default () => new Promise(() => setInterval(() => {}, 1000));\n", "timed out after 3s"),
    ],
)
def test_a_throw_a_rejection_and_a_hang_are_grading_errors_with_their_message(
    tmp_path: Path, source: str, said: str
) -> None:
    result = run(tmp_path, write(tmp_path, source))
    assert not result.passed and result.error and said in result.message, result.message


@pytest.mark.parametrize("returned", ["true", "'yes'", "null", "{ message: 'x' }", "[1]"])
def test_non_object_return_is_a_grading_error(tmp_path: Path, returned: str) -> None:
    a = write(tmp_path, f"export default () => {returned};\n")
    result = run(tmp_path, a)
    assert not result.passed and result.error and "expected { pass: boolean" in result.message


def test_environment_is_scrubbed_and_home_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    a = write(
        tmp_path,
        "import { homedir } from 'node:os';\n"
        "export default () => ({ pass: process.env.ANTHROPIC_API_KEY === undefined,"
        " message: homedir() });\n",
    )
    result = run(tmp_path, a)
    assert result.passed and "skillab-sandboxes" in result.message


def test_output_flood_is_capped(tmp_path: Path) -> None:
    a = write(
        tmp_path,
        "export default () => { for (let i = 0; i < 2000; i++) console.log('x'.repeat(1000));"
        " return { pass: true, message: 'm'.repeat(100000) }; };\n",
    )
    result = run(tmp_path, a)
    assert result.passed and len(result.message) == custom_js.MESSAGE_CAP


def test_answer_survives_a_full_pipe_and_a_slow_reader(tmp_path: Path) -> None:
    """Node leaves a piped stdout non-blocking: when a check's output has filled the pipe, the
    answer's write must wait for the reader rather than die of EAGAIN (seen on a loaded CI machine).
    The check fills the pipe itself so the full pipe does not depend on timing."""
    write(
        tmp_path,
        "import { writeSync } from 'node:fs';\n"
        "export default () => { console.log('start');\n"
        "  try { for (;;) writeSync(1, 'x'.repeat(4096)); } catch (err) { if (err.code !== 'EAGAIN') throw err; }\n"
        "  return { pass: true, message: 'ok' }; };\n",
    )
    (tmp_path / "wrapper.mjs").write_text(custom_js._WRAPPER)
    payload = {"path": str(tmp_path / "check.mjs"), "output": "", "sample": {}, "assertion": {}}
    (tmp_path / "payload.json").write_text(json.dumps(payload))
    node = subprocess.Popen(
        [custom_js.node_binary(), str(tmp_path / "wrapper.mjs"), "run", str(tmp_path / "payload.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert node.stdout is not None
    time.sleep(1.5)  # the pipe fills while nobody reads
    out = node.stdout.read()
    assert node.wait(timeout=30) == 0, out[-500:]
    assert json.loads(out.split(confined.MARKER.encode())[-1]) == {
        "pass": True,
        "message": "ok",
        "score": None,
    }


def test_load_time_errors_name_the_field(tmp_path: Path) -> None:
    (tmp_path / "nodefault.mjs").write_text("export const x = 1;\n")
    with pytest.raises(InputError, match=r"^fn: .*nodefault.mjs: no default export"):
        parse(dict(type="custom", fn="nodefault.mjs"), str(tmp_path))
    (tmp_path / "object.mjs").write_text("export default { pass: true };\n")
    with pytest.raises(InputError, match="default export is object"):
        parse(dict(type="custom", fn="object.mjs"), str(tmp_path))
    (tmp_path / "broken.mjs").write_text("export default function (\n")
    with pytest.raises(InputError, match="cannot load: SyntaxError"):
        parse(dict(type="custom", fn="broken.mjs"), str(tmp_path))
    with pytest.raises(InputError, match="not found"):
        parse(dict(type="custom", fn="missing.mjs"), str(tmp_path))


def test_samples_file_with_a_bad_module_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "nodefault.mjs").write_text("export const x = 1;\n")
    samples = tmp_path / "eval-samples.json"
    samples.write_text(
        json.dumps(
            [{"sample_id": "s1", "prompt": "p", "assertions": [{"type": "custom", "fn": "nodefault.mjs"}]}]
        )
    )
    with pytest.raises(InputError) as info:
        load_samples(samples)
    (line,) = info.value.lines
    assert line.startswith(f"{samples}") and "s1" in line and "assertions[0].fn:" in line
    assert "no default export" in line


@pytest.mark.skipif(confined.isolation() != "bubblewrap", reason="bubblewrap cannot build a sandbox here")
def test_runs_in_the_os_sandbox(tmp_path: Path) -> None:
    """The samples' folder is read-only to the check and the real HOME is covered."""
    a = write(
        tmp_path,
        "import { writeFileSync, existsSync } from 'node:fs';\n"
        "export default () => {\n"
        "  let wrote = true;\n"
        "  try { writeFileSync(new URL('./leak.txt', import.meta.url), 'x'); } catch { wrote = false; }\n"
        f"  return {{ pass: !wrote && !existsSync({json.dumps(str(Path.home() / '.bashrc'))}),"
        " message: String(wrote) };\n"
        "};\n",
    )
    result = run(tmp_path, a)
    assert result.passed, result.message
    assert not (tmp_path / "leak.txt").exists()
