#!/usr/bin/env bash
# Install the peer tools that the benchmarks compare Relay against, at pinned versions.
#
#   scripts/install-bench-tools.sh            # install if needed, print the executables
#   eval "$(scripts/install-bench-tools.sh)"  # ... and export RELAY_BENCH_CCUSAGE
#
# Layout (one npm prefix per tool):
#   $RELAY_BENCH_TOOLS_DIR/ccusage/node_modules/.bin/ccusage   ccusage@20.0.24
# RELAY_BENCH_TOOLS_DIR defaults to <repo>/.cache/bench-tools (gitignored).
#
# Used by benchmarks/usage_scan (issue 5: Relay's transcript usage index against
# `ccusage daily --json` on the same folder). Not needed by the test suite: the
# benchmark's smoke in `./dev test` skips ccusage when it is not installed.
#
# Idempotent and offline when already installed: the tool is checked with `--version`
# (no network); npm runs only for a missing or different version. npm is needed only
# then; without it the script stops with a clear message.
#
# stdout: exactly one line, RELAY_BENCH_CCUSAGE=<path>.
# stderr: progress and errors. Exit status: 0 ok, 2 npm missing, 1 anything else.
#
# Notes: ccusage 20 is a native (Rust) executable shipped in an optional dependency
# (@ccusage/ccusage-<platform>); the package's bin is a small node launcher that starts
# it, so optional dependencies must not be omitted (--include=optional below). 20.0.26 is
# the newest ccusage, but its @ccusage/ccusage-linux-x64 was never published (npm 404:
# the launcher then says "native binary is not available for linux-x64"); 20.0.24 is the
# newest release that runs on Linux x64, so it is pinned.
set -euo pipefail

CCUSAGE_VERSION="20.0.24"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${RELAY_BENCH_TOOLS_DIR:-$repo_root/.cache/bench-tools}"

log() { printf 'install-bench-tools: %s\n' "$*" >&2; }

NPM_PINNED_DIR="$tools_dir"
NPM_PINNED_ENV="RELAY_BENCH_"
# shellcheck source=scripts/npm-pinned.bash
source "$repo_root/scripts/npm-pinned.bash"

ccusage_exe="$(ensure ccusage ccusage "$CCUSAGE_VERSION" ccusage)"
printf 'RELAY_BENCH_CCUSAGE=%s\n' "$ccusage_exe"
