#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need (idempotent), then lint,
# format check, type check, and pytest. Exit code non-zero on any failure (pytest's 5 included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
# Debian's chromium for the browser tests (Playwright drives it; it never downloads a browser),
# bubblewrap, the OS sandbox of agent sessions and task checks, and ripgrep, which OpenCode's skill,
# grep and glob tools run (without it OpenCode downloads one from GitHub); docker.io and debootstrap
# for the fleet's tests (sessions in containers of a Docker work pool, the image built here).
need=()
for tool in chromium:chromium bwrap:bubblewrap rg:ripgrep dockerd:docker.io debootstrap:debootstrap; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "test: installing Debian's ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
bash scripts/install-agent-clis.sh
# The Docker daemon, started here when it is not running, and stopped (by its pid) when the tests end.
if ! docker info >/dev/null 2>&1; then
  dockerd >"${TMPDIR:-/tmp}/skillab-dockerd.log" 2>&1 &
  dockerd_pid=$!
  trap 'kill "$dockerd_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
fi
export PREFECT_SERVER_ANALYTICS_ENABLED=false
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# The type check beside the tests (half a minute of one core; the tests wait on CLIs and containers
# more than they compute), its verdict and output after theirs.
mypy_log=$(mktemp)
.venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
# Three workers on the two cores, each running whole test files (a file's fixtures and its fleet pool
# stay on one worker; the fleet's tests are two files, each with a pool of its own, so that the longest
# tests run side by side): most tests wait on agent CLIs, servers and containers more than they compute.
# The slowest tests are listed at the end.
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider -n 3 --dist loadfile --durations=25 "$@" ||
  status=$?
wait "$mypy_pid" || status=1
cat "$mypy_log"
rm -f "$mypy_log"
exit "$status"
