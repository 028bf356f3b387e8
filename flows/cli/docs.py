"""The documentation's tables made from the registries, so that a new assertion type or executor is
documented by its registry entry (and a test fails while the page lags behind).

    .venv/bin/python -m flows.cli.docs          # rewrite the generated blocks in docs/*.md
    .venv/bin/python -m flows.cli.docs --check  # exit 1 when a block is not current

A block sits between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``; NAME is a key of
TABLES.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from executors.agent import AgentExecutor
from executors.base import HttpExecutor
from executors.registry import EXECUTORS
from graders.registry import ASSERTIONS

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n).*?(<!-- /generated -->)", re.DOTALL)
KINDS = {"sync": "deterministic", "custom": "custom check", "judge": "LLM judge"}


def assertion_table() -> str:
    rows = ["| `type` | passes when | fields | graded by |", "|---|---|---|---|"]
    for name, spec in ASSERTIONS.items():
        fields = ", ".join(f"`{f}`" for f in spec.required)
        rows.append(f"| `{name}` | {spec.summary} | {fields or '—'} | {KINDS[spec.kind]} |")
    return "\n".join(rows)


def executor_table() -> str:
    rows = ["| `--executor` | what it runs | default model | endpoint | key |", "|---|---|---|---|---|"]
    for name, cls in EXECUTORS.items():
        if issubclass(cls, HttpExecutor):
            what, endpoint = "HTTP API", f"`{cls.env_base_url}` (default {cls.default_base_url})"
            keys = cls.env_keys
        elif issubclass(cls, AgentExecutor):
            what = f"agent CLI `{cls.binary}`"
            endpoint = f"`--base-url` (default {cls.provider.default_url})"
            keys = tuple(c.env for c in cls.provider.credentials)
        else:
            what, endpoint, keys = (
                "llama.cpp in this process (xllamacpp)",
                "`--model PATH.gguf` for any GGUF",
                (),
            )
        key = " or ".join(f"`{k}`" for k in keys) or "none"
        rows.append(f"| `{name}` | {what} | `{cls.default_model}` | {endpoint} | {key} |")
    return "\n".join(rows)


TABLES: dict[str, Callable[[], str]] = {"assertions": assertion_table, "executors": executor_table}


def render(text: str) -> str:
    """``text`` with every generated block made current."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{TABLES[m.group(2)]()}\n{m.group(3)}", text)


def stale_pages() -> list[Path]:
    pages = sorted(DOCS.glob("*.md"))
    return [p for p in pages if render(text := p.read_text(encoding="utf-8")) != text]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only report pages whose tables are stale")
    args = parser.parse_args()
    stale = stale_pages()
    if args.check:
        for page in stale:
            print(f"{page}: a generated table is not current (python -m flows.cli.docs)")
        sys.exit(1 if stale else 0)
    for page in stale:
        page.write_text(render(page.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"rewrote {page}")


if __name__ == "__main__":
    main()
