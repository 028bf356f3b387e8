"""httpx without its command line: none of rich, click or pygments at import, the real client when
called."""

from __future__ import annotations

import subprocess
import sys

from tests.flows.helpers import ROOT

CHECK = """
import sys
import executors.base
print(sorted(m for m in ("rich", "click", "pygments") if m in sys.modules))
import httpx
sys.argv = ["httpx", "--help"]
try:
    httpx.main()
except SystemExit:
    pass
print("rich" in sys.modules)
"""


def test_httpx_comes_without_its_cli_until_it_is_called() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "[]"
    assert "Usage" in done.stdout and lines[-1] == "True"  # the real command line ran
