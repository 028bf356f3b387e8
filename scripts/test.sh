#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need (idempotent), then lint,
# format check, type check, and pytest. Exit code non-zero on any failure (pytest's 5 included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
# Debian's chromium for the browser tests (Playwright drives it; it never downloads a browser),
# bubblewrap, the OS sandbox of agent sessions and task checks, and ripgrep, which OpenCode's skill,
# grep and glob tools run (without it OpenCode downloads one from GitHub).
if ! command -v chromium >/dev/null 2>&1 || ! command -v bwrap >/dev/null 2>&1 || ! command -v rg >/dev/null 2>&1; then
  echo "test: installing Debian's chromium, bubblewrap and ripgrep" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium bubblewrap ripgrep >/dev/null
fi
bash scripts/install-agent-clis.sh
export PREFECT_SERVER_ANALYTICS_ENABLED=false
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
