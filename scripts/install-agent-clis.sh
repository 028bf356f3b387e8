#!/usr/bin/env bash
# Installs the agent CLIs (and tsc for syntax checks) from the npm registry into a cache folder,
# idempotently. skillab finds them there ($SKILLAB_AGENT_CLI_DIR, default ~/.cache/skillab/agent-clis).
set -euo pipefail
dir=${SKILLAB_AGENT_CLI_DIR:-$HOME/.cache/skillab/agent-clis}
# The claude CLI one release older, under its own prefix: the nights that must tell a changed CLI apart.
older="@anthropic-ai/claude-code@2.1.331"
packages=("@anthropic-ai/claude-code@2.1.332" "@openai/codex@0.171.0" "@google/gemini-cli@0.61.0" "@github/copilot@1.0.102" "opencode-ai@1.18.33" "typescript@5")
stamp="$dir/.skillab-$(printf '%s ' "${packages[@]}" "$older" | sha256sum | cut -c1-16)"
[ -f "$stamp" ] && exit 0
mkdir -p "$dir"
echo "agent CLIs: installing ${packages[*]} into $dir" >&2
npm install --no-audit --no-fund --loglevel=error --prefix "$dir" "${packages[@]}" >&2
npm install --no-audit --no-fund --loglevel=error --prefix "$dir/older" "$older" >&2
[ -x "$dir/older/node_modules/.bin/claude" ] || { echo "missing the older claude" >&2; exit 1; }
for bin in claude codex gemini copilot opencode tsc; do [ -x "$dir/node_modules/.bin/$bin" ] || { echo "missing $bin" >&2; exit 1; }; done
touch "$stamp"
