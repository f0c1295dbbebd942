# Shared by the installer scripts (sourced, not run: `source …/common.bash TAG`): the
# repository root as the working folder, log/die with the script's tag, and the Python
# that builds Relay.
# shellcheck shell=bash

TAG=${1:?usage: source common.bash TAG}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

log() { printf '\033[1m[%s]\033[0m %s\n' "$TAG" "$*" >&2; }
die() { printf '%s: %s\n' "$TAG" "$*" >&2; exit 1; }

# $PY if set, else $PYTHON, else .venv/bin/python, else python3
pick_python() {
  PY=${PY:-${PYTHON:-}}
  if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
  fi
}
