#!/usr/bin/env bash
# Build Relay for macOS: Relay.app (the window and relay-cli in Contents/MacOS) and a .dmg.
#
#   dist/Relay.app                               bundle id dev.relay.Relay, icon from resources/icons
#   dist/Relay-<version>-macos-<arch>.dmg        Relay.app plus an Applications link (hdiutil)
#
# Usage: installers/macos/build.sh [--no-smoke] [--no-dmg] [--python PY]
#   --python PY   the Python that has Relay, PySide6 and PyInstaller installed (default:
#                 $PYTHON, else .venv/bin/python, else python3): pip install -e ".[installer]"
# Needs the Xcode command line tools (iconutil, hdiutil, codesign). The app is signed
# ad hoc unless RELAY_CODESIGN_IDENTITY names a "Developer ID Application" identity
# (notarisation is not done here). It is built for the machine's architecture (arm64 on
# Apple silicon, x86_64 on Intel); run it on each to get both.
#
# relay-cli from a terminal, after copying Relay.app to /Applications (optional):
#   sudo mkdir -p /usr/local/bin
#   sudo ln -sf /Applications/Relay.app/Contents/MacOS/relay-cli /usr/local/bin/relay-cli
set -euo pipefail

# shellcheck source=installers/common.bash
source "$(dirname "$0")/../common.bash" build

SMOKE=1
DMG=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-smoke) SMOKE=0 ;;
    --no-dmg) DMG=0 ;;
    --python) PY=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
pick_python
[ "$(uname)" = Darwin ] || die "this script builds the macOS app; run it on macOS"
for tool in iconutil hdiutil codesign; do
  command -v "$tool" >/dev/null || die "$tool not found (xcode-select --install)"
done
"$PY" -c 'import PyInstaller, PySide6, relay' 2>/dev/null ||
  die "$PY lacks PyInstaller, PySide6 or Relay: $PY -m pip install -e '.[installer]'"

VERSION=$("$PY" -c 'from importlib.metadata import version; print(version("relay"))')
ARCH=$(uname -m)
log "Relay $VERSION for macos-$ARCH"

# The icon: resources/icons/relay.svg rendered at every iconset size, then iconutil.
work=build/macos
rm -rf "$work"
mkdir -p "$work"
"$PY" installers/icons.py iconset "$work/relay.iconset"
iconutil -c icns "$work/relay.iconset" -o "$work/relay.icns"
export RELAY_ICON_ICNS=$ROOT/$work/relay.icns

started=$SECONDS
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller installers/relay.spec
APP=dist/Relay.app
for exe in relay relay-cli; do
  [ -x "$APP/Contents/MacOS/$exe" ] || die "PyInstaller did not produce $APP/Contents/MacOS/$exe"
done
plutil -lint "$APP/Contents/Info.plist" >/dev/null
[ "$(/usr/libexec/PlistBuddy -c 'Print :CFBundleIdentifier' "$APP/Contents/Info.plist")" = dev.relay.Relay ] ||
  die "unexpected CFBundleIdentifier"
[ "$(/usr/libexec/PlistBuddy -c 'Print :CFBundleExecutable' "$APP/Contents/Info.plist")" = relay ] ||
  die "the app's main executable is not relay"
codesign --verify --deep --strict "$APP" || die "codesign verification failed"
log "app: $APP, $(du -sh "$APP" | cut -f1), built in $((SECONDS - started)) s"

if [ "$SMOKE" = 1 ]; then
  "$PY" installers/smoke.py "$APP/Contents/MacOS" --expect-version "$VERSION"
fi
[ "$DMG" = 1 ] || exit 0

stage=$work/dmg
mkdir -p "$stage"
cp -R "$APP" "$stage/"
ln -s /Applications "$stage/Applications"
dmg=dist/Relay-$VERSION-macos-$ARCH.dmg
rm -f "$dmg"
hdiutil create -volname "Relay $VERSION" -srcfolder "$stage" -fs HFS+ -format UDZO -ov "$dmg" >/dev/null
hdiutil verify "$dmg" >/dev/null
log "dmg: $dmg ($(du -h "$dmg" | cut -f1)); done in $((SECONDS - started)) s"
