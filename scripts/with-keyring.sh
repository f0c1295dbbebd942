#!/usr/bin/env bash
# Run a command with a real OS keyring: a private D-Bus session bus and a throwaway,
# unlocked gnome-keyring (the freedesktop Secret Service), as a Linux desktop has.
#
#   scripts/with-keyring.sh .venv/bin/pytest tests/core/test_vault.py
#   scripts/with-keyring.sh ./dev test
#
# Inside, RELAY_REAL_KEYRING=1 is exported: the real-keyring tests run only then (and fail,
# not skip, if the Secret Service does not answer). The keyring lives in a temporary
# folder removed afterwards; the bus is private to this command (dbus-run-session), so
# the user's own session and keyring are never touched. Needs Debian's dbus (dbus-daemon,
# dbus-run-session, dbus-send) and gnome-keyring; libsecret-tools (secret-tool) is
# optional, for the test's independent read-back:
#   apt-get install dbus gnome-keyring libsecret-tools
# As root in a container dbus-daemon prints "Failed to set fd limit"; that is harmless.
#
# Exit status: the command's; 2 when a needed tool is missing or the keyring never came up.
set -euo pipefail

die() { printf 'with-keyring: %s\n' "$*" >&2; exit 2; }

if [ "${1:-}" = "--inside-bus" ]; then
  shift
  state=$RELAY_KEYRING_STATE
  mkdir -p "$state/data" "$state/run" "$state/cache"
  chmod 700 "$state/run"
  # A fresh "login" keyring in the temporary folder, created and unlocked with a password
  # nobody needs to know again. Only the daemon sees the temporary XDG folders.
  printf '%s' "relay-test-$$" | env XDG_DATA_HOME="$state/data" XDG_RUNTIME_DIR="$state/run" \
    XDG_CACHE_HOME="$state/cache" gnome-keyring-daemon --unlock --components=secrets >/dev/null \
    || die "gnome-keyring-daemon failed to start"
  # Wait (bounded) until the Secret Service owns its name on this bus.
  for _ in $(seq 1 100); do
    if dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null \
        | grep -q 'boolean true'; then
      export RELAY_REAL_KEYRING=1
      unset RELAY_KEYRING_STATE
      exec "$@"
    fi
    sleep 0.05
  done
  die "the Secret Service did not appear on the session bus"
fi

[ $# -gt 0 ] || die "usage: scripts/with-keyring.sh COMMAND [ARGS...]"
for tool in dbus-run-session dbus-send gnome-keyring-daemon; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install dbus gnome-keyring libsecret-tools)"
done

RELAY_KEYRING_STATE=$(mktemp -d "${TMPDIR:-/tmp}/relay-keyring.XXXXXX")
export RELAY_KEYRING_STATE
trap 'rm -rf "$RELAY_KEYRING_STATE"' EXIT
rc=0
dbus-run-session -- "$0" --inside-bus "$@" || rc=$?
exit $rc
