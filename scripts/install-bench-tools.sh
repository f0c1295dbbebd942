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

# installed_version <executable>  -> prints the bare version, or nothing
installed_version() {
    local exe="$1" out
    [[ -x "$exe" ]] || return 0
    out="$("$exe" --version 2>/dev/null)" || return 0
    # "20.0.26"
    grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' <<<"$out" | head -n1 || true
}

# ensure <name> <npm package> <version> <bin name>  -> prints the executable path
ensure() {
    local name="$1" package="$2" version="$3" bin="$4"
    local prefix="$tools_dir/$name"
    local exe="$prefix/node_modules/.bin/$bin"
    local have
    have="$(installed_version "$exe")"
    if [[ "$have" == "$version" ]]; then
        log "$name $version already installed ($exe)"
        printf '%s\n' "$exe"
        return 0
    fi
    if [[ -x "$exe" && -z "$have" ]]; then
        log "$exe exists but '$bin --version' failed (it needs node on PATH); reinstalling"
    fi
    if ! command -v npm >/dev/null 2>&1; then
        log "ERROR: npm not found on PATH; it is needed to install $package@$version."
        log "       Install Node.js (>= 20, with npm), or point RELAY_BENCH_${name^^} at an"
        log "       existing $bin $version executable."
        exit 2
    fi
    log "installing $package@$version into $prefix (found: ${have:-none})"
    mkdir -p "$prefix"
    if ! npm install --prefix "$prefix" --no-audit --no-fund --include=optional \
            --loglevel=error "$package@$version" >&2; then
        log "ERROR: npm install $package@$version failed"
        exit 1
    fi
    have="$(installed_version "$exe")"
    if [[ "$have" != "$version" ]]; then
        log "ERROR: after installing, $exe reports version '${have:-<does not run>}', want $version"
        exit 1
    fi
    log "$name $version installed ($exe)"
    printf '%s\n' "$exe"
}

ccusage_exe="$(ensure ccusage ccusage "$CCUSAGE_VERSION" ccusage)"
printf 'RELAY_BENCH_CCUSAGE=%s\n' "$ccusage_exe"
