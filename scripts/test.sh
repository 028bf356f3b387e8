#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need (idempotent), then lint,
# format check, type check, and pytest. Exit code non-zero on any failure (pytest's 5 included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
export PREFECT_SERVER_ANALYTICS_ENABLED=false
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
