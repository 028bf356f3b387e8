#!/usr/bin/env bash
# The main job on a fresh machine: install, scaffold the demo, and run a real benchmark offline
# on the embedded model (Gemma 3 270M). The report is written to ~/.skillab/reports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d demo ] || .venv/bin/python -m flows.bench init demo
cd demo
../.venv/bin/python -m flows.bench run --variants v1,v2 "$@"
