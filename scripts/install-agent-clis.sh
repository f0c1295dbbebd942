#!/usr/bin/env bash
# Install the real agent CLIs that the integration tests drive, at pinned versions.
#
#   scripts/install-agent-clis.sh            # install if needed, print the executables
#   eval "$(scripts/install-agent-clis.sh)"  # ... and export RELAY_REAL_CLAUDE / _CODEX / _GEMINI / _PI
#
# Layout (one npm prefix per CLI):
#   $RELAY_AGENTS_DIR/claude/node_modules/.bin/claude   @anthropic-ai/claude-code@2.1.197
#   $RELAY_AGENTS_DIR/codex/node_modules/.bin/codex     @openai/codex@0.171.0
#   $RELAY_AGENTS_DIR/gemini/node_modules/.bin/gemini   @google/gemini-cli@0.61.0
#   $RELAY_AGENTS_DIR/pi/node_modules/.bin/pi           @mariozechner/pi-coding-agent@0.73.1
# RELAY_AGENTS_DIR defaults to <repo>/.cache/agents (gitignored).
#
# Idempotent and offline when already installed: each CLI is checked with `--version`
# (a fraction of a second, no network); npm runs only for a missing or different
# version. npm is needed only then; without it the script stops with a clear message.
#
# stdout: exactly four lines, RELAY_REAL_CLAUDE=<path>, RELAY_REAL_CODEX=<path>,
# RELAY_REAL_GEMINI=<path> and RELAY_REAL_PI=<path>.
# stderr: progress and errors. Exit status: 0 ok, 2 npm missing, 1 anything else.
#
# Notes: npm 11 warns that @anthropic-ai/claude-code's postinstall script is "not
# covered by allowScripts". That is harmless: the package's bin already is the native
# executable (shipped in the optional dependency @anthropic-ai/claude-code-<platform>),
# so optional dependencies must not be omitted (--include=optional below). Claude Code
# 2.1.197 is the last release whose engines allow Node 20; it is pinned regardless.
set -euo pipefail

CLAUDE_VERSION="2.1.197"
CODEX_VERSION="0.171.0"
GEMINI_VERSION="0.61.0"
PI_VERSION="0.73.1"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
agents_dir="${RELAY_AGENTS_DIR:-$repo_root/.cache/agents}"

log() { printf 'install-agent-clis: %s\n' "$*" >&2; }

NPM_PINNED_DIR="$agents_dir"
NPM_PINNED_ENV="RELAY_REAL_"
# shellcheck source=scripts/npm-pinned.bash
source "$repo_root/scripts/npm-pinned.bash"

claude_exe="$(ensure claude @anthropic-ai/claude-code "$CLAUDE_VERSION" claude)"
codex_exe="$(ensure codex @openai/codex "$CODEX_VERSION" codex)"
gemini_exe="$(ensure gemini @google/gemini-cli "$GEMINI_VERSION" gemini)"
pi_exe="$(ensure pi @mariozechner/pi-coding-agent "$PI_VERSION" pi)"
printf 'RELAY_REAL_CLAUDE=%s\n' "$claude_exe"
printf 'RELAY_REAL_CODEX=%s\n' "$codex_exe"
printf 'RELAY_REAL_GEMINI=%s\n' "$gemini_exe"
printf 'RELAY_REAL_PI=%s\n' "$pi_exe"
