#!/usr/bin/env bash
# Install the peer tools that the benchmarks compare Relay against, at pinned versions.
#
#   scripts/install-bench-tools.sh            # install if needed, print the executables
#   eval "$(scripts/install-bench-tools.sh)"  # ... and export RELAY_BENCH_CCUSAGE and
#                                             #     RELAY_BENCH_LANGGRAPH_PYTHON
#
# Layout (one prefix per tool):
#   $RELAY_BENCH_TOOLS_DIR/ccusage/node_modules/.bin/ccusage   ccusage@20.0.24 (npm)
#   $RELAY_BENCH_TOOLS_DIR/langgraph/venv/bin/python           langgraph==1.2.24 and
#                                                              langgraph-checkpoint-sqlite==3.1.2
# RELAY_BENCH_TOOLS_DIR defaults to <repo>/.cache/bench-tools (gitignored).
#
# Used by benchmarks/usage_scan (issue 5: Relay's transcript usage index against
# `ccusage daily --json` on the same folder) and benchmarks/scheduler (the pipeline
# scheduler's per-step overhead against LangGraph with its SQLite checkpointer). Not
# needed by the test suite: the benchmarks' smokes in `./dev test` skip a peer that is
# not installed and say so.
#
# Idempotent and offline when already installed: ccusage is checked with `--version`,
# LangGraph by reading the installed versions in its venv (no network); npm or pip runs
# only for a missing or different version. npm is needed only then; without it the
# script stops with a clear message.
#
# LangGraph lives in its own virtualenv, never in the app's .venv: it brings its own
# pydantic, langchain-core and friends, which must not move the app's pinned ones. The
# venv is made with $PYTHON (default python3, >= 3.10) and pip from PyPI; only the two
# packages are pinned, their dependencies resolve to what those versions allow.
#
# stdout: exactly two lines, RELAY_BENCH_CCUSAGE=<path> and
#         RELAY_BENCH_LANGGRAPH_PYTHON=<path to the LangGraph venv's python>.
# stderr: progress and errors. Exit status: 0 ok, 2 npm or python's venv missing,
#         1 anything else.
#
# Notes: ccusage 20 is a native (Rust) executable shipped in an optional dependency
# (@ccusage/ccusage-<platform>); the package's bin is a small node launcher that starts
# it, so optional dependencies must not be omitted (--include=optional below). 20.0.26 is
# the newest ccusage, but its @ccusage/ccusage-linux-x64 was never published (npm 404:
# the launcher then says "native binary is not available for linux-x64"); 20.0.24 is the
# newest release that runs on Linux x64, so it is pinned.
set -euo pipefail

CCUSAGE_VERSION="20.0.24"
LANGGRAPH_VERSION="1.2.24"
LANGGRAPH_SQLITE_VERSION="3.1.2"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${RELAY_BENCH_TOOLS_DIR:-$repo_root/.cache/bench-tools}"

log() { printf 'install-bench-tools: %s\n' "$*" >&2; }

NPM_PINNED_DIR="$tools_dir"
NPM_PINNED_ENV="RELAY_BENCH_"
# shellcheck source=scripts/npm-pinned.bash
source "$repo_root/scripts/npm-pinned.bash"

ccusage_exe="$(ensure ccusage ccusage "$CCUSAGE_VERSION" ccusage)"
printf 'RELAY_BENCH_CCUSAGE=%s\n' "$ccusage_exe"

# ensure_langgraph  -> prints the venv's python
ensure_langgraph() {
    local venv="$tools_dir/langgraph/venv"
    local py="$venv/bin/python"
    local want="$LANGGRAPH_VERSION $LANGGRAPH_SQLITE_VERSION" have=""
    local probe='import importlib.metadata as m
print(m.version("langgraph"), m.version("langgraph-checkpoint-sqlite"))'
    if [[ -x "$py" ]]; then
        have="$("$py" -c "$probe" 2>/dev/null)" || have=""
    fi
    if [[ "$have" == "$want" ]]; then
        log "langgraph $LANGGRAPH_VERSION + langgraph-checkpoint-sqlite $LANGGRAPH_SQLITE_VERSION already installed ($py)"
        printf '%s\n' "$py"
        return 0
    fi
    local base="${PYTHON:-python3}"
    if [[ ! -x "$py" ]]; then
        if ! "$base" -c 'import venv, ensurepip' >/dev/null 2>&1; then
            log "ERROR: '$base' cannot make a virtualenv (python3 with venv and ensurepip is"
            log "       needed, e.g. Debian's python3-venv); set PYTHON to another interpreter, or"
            log "       point RELAY_BENCH_LANGGRAPH_PYTHON at a python that has langgraph installed."
            exit 2
        fi
        log "creating the LangGraph virtualenv in $venv"
        mkdir -p "$(dirname "$venv")"
        if ! "$base" -m venv "$venv" >&2; then
            log "ERROR: $base -m venv $venv failed"
            exit 1
        fi
    fi
    log "installing langgraph==$LANGGRAPH_VERSION langgraph-checkpoint-sqlite==$LANGGRAPH_SQLITE_VERSION into $venv (found: ${have:-none})"
    if ! "$py" -m pip install -q --disable-pip-version-check \
            "langgraph==$LANGGRAPH_VERSION" "langgraph-checkpoint-sqlite==$LANGGRAPH_SQLITE_VERSION" >&2; then
        log "ERROR: pip install of langgraph failed"
        exit 1
    fi
    have="$("$py" -c "$probe" 2>/dev/null)" || have=""
    if [[ "$have" != "$want" ]]; then
        log "ERROR: after installing, $venv has langgraph/langgraph-checkpoint-sqlite '${have:-<none>}', want $want"
        exit 1
    fi
    log "langgraph $LANGGRAPH_VERSION + langgraph-checkpoint-sqlite $LANGGRAPH_SQLITE_VERSION installed ($py)"
    printf '%s\n' "$py"
}

langgraph_python="$(ensure_langgraph)"
printf 'RELAY_BENCH_LANGGRAPH_PYTHON=%s\n' "$langgraph_python"
