# Sourced by the scripts that install pinned npm executables (install-agent-clis.sh,
# install-bench-tools.sh): one npm prefix per tool, checked with `--version` (offline)
# before npm runs. The caller defines `log` and sets:
#   NPM_PINNED_DIR   the folder holding one prefix per tool
#   NPM_PINNED_ENV   the variable prefix named in hints (RELAY_REAL_, RELAY_BENCH_)
# shellcheck shell=bash

# installed_version <executable>  -> prints the bare version, or nothing
installed_version() {
    local exe="$1" out
    [[ -x "$exe" ]] || return 0
    # stderr too: pi prints its version there
    out="$("$exe" --version 2>&1)" || return 0
    # "2.1.197 (Claude Code)" / "codex-cli 0.171.0" / "20.0.24"
    grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' <<<"$out" | head -n1 || true
}

# ensure <name> <npm package> <version> <bin name>  -> prints the executable path
# Exit status (of the script): 2 npm missing, 1 the install failed or the version is wrong.
ensure() {
    local name="$1" package="$2" version="$3" bin="$4"
    local prefix="$NPM_PINNED_DIR/$name"
    local exe="$prefix/node_modules/.bin/$bin"
    local have
    have="$(installed_version "$exe")"
    if [[ "$have" == "$version" ]]; then
        log "$name $version already installed ($exe)"
        printf '%s\n' "$exe"
        return 0
    fi
    if [[ -x "$exe" && -z "$have" ]]; then
        log "$exe exists but '$bin --version' failed (its launcher needs node on PATH); reinstalling"
    fi
    if ! command -v npm >/dev/null 2>&1; then
        log "ERROR: npm not found on PATH; it is needed to install $package@$version."
        log "       Install Node.js (>= 20, with npm), or point ${NPM_PINNED_ENV}${name^^} at an"
        log "       existing $bin $version executable."
        exit 2
    fi
    log "installing $package@$version into $prefix (found: ${have:-none})"
    mkdir -p "$prefix"
    # optional dependencies carry the native executables: never omitted
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
