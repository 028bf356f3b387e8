"""Benchmarks: each a command (``python -m benchmarks.<name>``); RESULTS.md keeps their dated figures."""

from __future__ import annotations

import argparse


def units_parser(doc: str | None, units: int, concurrency: int = 32) -> argparse.ArgumentParser:
    """A benchmark's command line over a number of units run so many at once, its docstring the help."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=units)
    parser.add_argument("--concurrency", type=int, default=concurrency)
    return parser
