#!/usr/bin/env bash
# Install Relay's .deb on this machine, check the installed programs, uninstall it again.
#
# Usage: installers/linux/check-deb.sh [dist/relay_<version>_<arch>.deb] [--screenshot out.png] [--keep]
#          [--no-recommends]
#   --screenshot  where the PNG of the installed window (under Xvfb) goes
#                 (default: build/screenshots/installed-window.png)
#   --keep        leave the package installed
#   --no-recommends  install with Depends only (what the bundle cannot run without)
# Needs root (or sudo), apt-get, and for the window xvfb-run, xdotool and imagemagick
# (installed here when missing). Checks, all from /usr/bin:
#   relay-cli --version, relay-cli doctor, relay-cli demo (installers/smoke.py --installed),
#   the menu entry and icons are where the desktop looks, and `relay` opens its window on
#   an X server (Xvfb): xdotool finds a mapped window named "Relay", a screenshot is taken.
set -euo pipefail

# shellcheck source=installers/common.bash
source "$(dirname "$0")/../common.bash" check-deb

DEB=
SHOT=build/screenshots/installed-window.png
KEEP=0
APT_OPTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --screenshot) SHOT=$2; shift ;;
    --keep) KEEP=1 ;;
    --no-recommends) APT_OPTS=(--no-install-recommends) ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) DEB=$1 ;;
  esac
  shift
done
if [ -z "$DEB" ]; then
  DEB=$(find dist -maxdepth 1 -name 'relay_*.deb' -print | sort | tail -1)
fi
[ -f "$DEB" ] || die "no .deb found (run installers/linux/build.sh first)"
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
PY=${PYTHON:-python3}

log "installing $DEB with apt-get (its Depends come from the distribution)"
$SUDO apt-get update -qq >/dev/null || true
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_OPTS[@]}" "./$DEB" >/dev/null
cleanup() {
  if [ "$KEEP" = 0 ]; then
    log "removing the package again"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq relay >/dev/null
    if [ -e /usr/bin/relay-cli ] || [ -e /opt/relay ]; then
      die "files left behind after removal"
    fi
  fi
}
trap cleanup EXIT

[ "$(readlink -f /usr/bin/relay-cli)" = /opt/relay/relay-cli ] || die "/usr/bin/relay-cli is not the bundle's"
[ "$(command -v relay-cli)" = /usr/bin/relay-cli ] || die "relay-cli on PATH is $(command -v relay-cli)"
[ -f /usr/share/applications/relay.desktop ] || die "menu entry missing"
[ -f /usr/share/icons/hicolor/256x256/apps/relay.png ] || die "icon missing"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate /usr/share/applications/relay.desktop
fi
log "dpkg: $(dpkg-query -W -f='${Package} ${Version} ${Status}' relay)"
relay-cli --version

"$PY" installers/smoke.py --installed --expect-version "$(dpkg-query -W -f='${Version}' relay)"

need=()
command -v xvfb-run >/dev/null || need+=(xvfb)
command -v xdotool >/dev/null || need+=(xdotool)
command -v import >/dev/null || need+=(imagemagick)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} for the window check"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$(dirname "$SHOT")"
home=$(mktemp -d)
log "starting the installed relay under Xvfb (screenshot: $SHOT)"
# shellcheck disable=SC2016  # the inner script's variables expand inside it
env RELAY_HOME="$home" RELAY_DEMO_STEP_DELAY=0.2 PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring \
  RELAY_VAULT_PASSPHRASE=check-deb QT_QPA_PLATFORM=xcb \
  xvfb-run -a -s "-screen 0 1360x860x24" bash -c '
    set -u
    /usr/bin/relay --demo >"$2/relay.log" 2>&1 & pid=$!
    if ! timeout 60 xdotool search --sync --onlyvisible --name "^Relay$" >/dev/null; then
      echo "check-deb: no visible window named Relay within 60 s" >&2
      cat "$2/relay.log" >&2; kill "$pid"; exit 1
    fi
    for _ in $(seq 1 60); do   # let the demo finish so the window has something to show
      relay-cli sessions 2>/dev/null | grep -q completed && break
      sleep 0.5
    done
    sleep 1
    import -window root "$1"
    kill -TERM "$pid"; wait "$pid"; rc=$?
    echo "relay exited with status $rc after SIGTERM" >&2
    [ "$rc" = 0 ] || { cat "$2/relay.log" >&2; exit 1; }' _ "$SHOT" "$home"
RELAY_HOME="$home" relay-cli sessions | grep -q completed || die "the window's demo session did not complete"
rm -rf "$home"
log "installed relay opened its window; screenshot at $SHOT"
