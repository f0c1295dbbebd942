#!/usr/bin/env bash
# Install Relay's .deb on a *fresh* Debian: a minimal debootstrap of bookworm (no desktop,
# no fonts, no ca-certificates), then installers/linux/check-deb.sh inside it with a clean
# environment — so the .deb's Depends alone must bring everything the bundle needs.
#
# Usage: installers/linux/check-fresh.sh [dist/relay_<version>_<arch>.deb] [--suite bookworm]
#          [--mirror http://deb.debian.org/debian] [--keep-root]
# Needs root, debootstrap (apt-get install debootstrap) and the Debian mirror. About a
# minute. The root lives in build/fresh/root (removed afterwards unless --keep-root); the
# window's screenshot is copied to build/screenshots/fresh-<suite>-window.png.
set -euo pipefail

# shellcheck source=installers/common.bash
source "$(dirname "$0")/../common.bash" check-fresh

DEB=
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) SUITE=$2; shift ;;
    --mirror) MIRROR=$2; shift ;;
    --keep-root) KEEP=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) DEB=$1 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot)"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
if [ -z "$DEB" ]; then
  DEB=$(find dist -maxdepth 1 -name 'relay_*.deb' -print | sort | tail -1)
fi
[ -f "$DEB" ] || die "no .deb found (run installers/linux/build.sh first)"

fresh=$ROOT/build/fresh/root
cleanup() {
  for mnt in dev/pts dev proc; do
    if mountpoint -q "$fresh/$mnt"; then umount "$fresh/$mnt"; fi
  done
  if [ "$KEEP" = 0 ]; then rm -rf "$ROOT/build/fresh"; fi
}
trap cleanup EXIT
if [ ! -x "$fresh/usr/bin/apt-get" ]; then
  log "debootstrap --variant=minbase $SUITE (the fresh machine)"
  rm -rf "$fresh"
  mkdir -p "$fresh"
  debootstrap --variant=minbase "$SUITE" "$fresh" "$MIRROR" >"$ROOT/build/fresh/debootstrap.log"
fi
mount -t proc proc "$fresh/proc"
mount --bind /dev "$fresh/dev"
mount --bind /dev/pts "$fresh/dev/pts"

repo=$fresh/tmp/repo
rm -rf "$repo"
mkdir -p "$repo/dist"
cp -a installers "$repo/"
cp "$DEB" "$repo/dist/"
log "inside: apt-get update, then installers/linux/check-deb.sh $(basename "$DEB") --no-recommends"
# shellcheck disable=SC2016  # $1 expands inside the chroot's shell
chroot "$fresh" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 >/dev/null &&
           { dpkg -s ca-certificates >/dev/null 2>&1 && echo "ca-certificates: installed" || echo "ca-certificates: absent"; } &&
           cd /tmp/repo && installers/linux/check-deb.sh "dist/$1" --no-recommends --screenshot /tmp/window.png' \
  _ "$(basename "$DEB")"
mkdir -p build/screenshots
cp "$fresh/tmp/window.png" "build/screenshots/fresh-$SUITE-window.png"
log "the .deb installed and ran on a fresh $SUITE; screenshot: build/screenshots/fresh-$SUITE-window.png"
