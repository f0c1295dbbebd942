#!/usr/bin/env bash
# Build Relay's Linux artefacts from the repository:
#
#   dist/relay/                                   the PyInstaller bundle (relay, relay-cli, _internal/)
#   dist/relay-<version>-linux-<arch>.tar.gz      the bundle plus the .desktop entry and icons
#   dist/relay_<version>_<debarch>.deb            /opt/relay, /usr/bin/relay{,-cli}, menu entry, icons
#
# Usage: installers/linux/build.sh [--bundle-only] [--no-smoke] [--python PY]
#   --bundle-only  stop after the bundle (no tar.gz, no .deb)
#   --no-smoke     skip installers/smoke.py on the bundle
#   --python PY    the Python that has Relay, PySide6 and PyInstaller installed
#                  (default: $PYTHON, else .venv/bin/python, else python3);
#                  `pip install -e ".[installer]"` gives it all
# Needs: objdump (binutils); for the .deb also dpkg-deb and dpkg-shlibdeps (dpkg-dev),
# which compute Depends from the bundle's ELF files, so build on the oldest Debian/Ubuntu
# release the .deb is meant for. RELAY_DEB_MAINTAINER overrides the Maintainer field.
set -euo pipefail

# shellcheck source=installers/common.bash
source "$(dirname "$0")/../common.bash" build

BUNDLE_ONLY=0
SMOKE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle-only) BUNDLE_ONLY=1 ;;
    --no-smoke) SMOKE=0 ;;
    --python) PY=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
pick_python

command -v objdump >/dev/null || die "objdump not found (apt-get install binutils)"
"$PY" -c 'import PyInstaller, PySide6, relay' 2>/dev/null ||
  die "$PY lacks PyInstaller, PySide6 or Relay: $PY -m pip install -e '.[installer]'"

VERSION=$("$PY" -c 'from importlib.metadata import version; print(version("relay"))')
ARCH=$(uname -m)
BUNDLE=dist/relay
log "Relay $VERSION for linux-$ARCH with $("$PY" -m PyInstaller --version 2>/dev/null | tail -1)"

started=$SECONDS
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller installers/relay.spec
for exe in relay relay-cli; do
  [ -x "$BUNDLE/$exe" ] || die "PyInstaller did not produce $BUNDLE/$exe"
done
dangling=$(find "$BUNDLE" -xtype l)
[ -z "$dangling" ] || die "dangling symlinks in the bundle: $dangling"
log "bundle: $BUNDLE, $(du -sh "$BUNDLE" | cut -f1), built in $((SECONDS - started)) s"

if [ "$SMOKE" = 1 ]; then
  "$PY" installers/smoke.py "$BUNDLE" --expect-version "$VERSION"
fi
[ "$BUNDLE_ONLY" = 1 ] && exit 0

# --- tar.gz ---------------------------------------------------------------------------
stage=build/linux
rm -rf "$stage"
mkdir -p "$stage"
tarname=relay-$VERSION-linux-$ARCH
cp -a "$BUNDLE" "$stage/$tarname"
mkdir -p "$stage/$tarname/share/applications" "$stage/$tarname/share/icons/hicolor/256x256/apps" \
  "$stage/$tarname/share/icons/hicolor/scalable/apps"
cp installers/linux/relay.desktop "$stage/$tarname/share/applications/relay.desktop"
cp resources/icons/relay-256.png "$stage/$tarname/share/icons/hicolor/256x256/apps/relay.png"
cp resources/icons/relay.svg "$stage/$tarname/share/icons/hicolor/scalable/apps/relay.svg"
tar -C "$stage" -czf "dist/$tarname.tar.gz" "$tarname"
log "tar.gz: dist/$tarname.tar.gz ($(du -h "dist/$tarname.tar.gz" | cut -f1))"

# --- .deb -----------------------------------------------------------------------------
command -v dpkg-deb >/dev/null || die "dpkg-deb not found: the .deb needs Debian's dpkg"
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps not found (apt-get install dpkg-dev)"
DEBARCH=$(dpkg --print-architecture)
root=$stage/deb
mkdir -p "$root/DEBIAN" "$root/opt" "$root/usr/bin" "$root/usr/share/applications" \
  "$root/usr/share/icons/hicolor/256x256/apps" "$root/usr/share/icons/hicolor/scalable/apps" \
  "$root/usr/share/doc/relay"
cp -a "$BUNDLE" "$root/opt/relay"
ln -s /opt/relay/relay "$root/usr/bin/relay"  # absolute: Debian policy 10.5 across top-level dirs
ln -s /opt/relay/relay-cli "$root/usr/bin/relay-cli"
install -m 644 installers/linux/relay.desktop "$root/usr/share/applications/relay.desktop"
install -m 644 resources/icons/relay-256.png "$root/usr/share/icons/hicolor/256x256/apps/relay.png"
install -m 644 resources/icons/relay.svg "$root/usr/share/icons/hicolor/scalable/apps/relay.svg"
printf 'Relay %s\n\nThe Python runtime, Qt (LGPLv3) and the other libraries in /opt/relay/_internal\nkeep their own licences; see their *.dist-info folders.\n' \
  "$VERSION" > "$root/usr/share/doc/relay/copyright"

# Depends: what the bundle's ELF files link from the system (the desktop stack that
# installers/bundle_trim.py leaves out, libc …), with versions from the shlibs files.
log "computing Depends with dpkg-shlibdeps"
is_elf() { [ "$(head -c4 "$1" | tail -c3)" = ELF ]; }
elves=()
while IFS= read -r -d '' file; do
  if is_elf "$file"; then elves+=("$file"); fi
done < <(find "$root/opt/relay" -type f \( -name '*.so*' -o -perm -u+x \) -print0)
mapfile -t libdirs < <(find "$root/opt/relay" -name '*.so*' -printf '%h\n' | sort -u)
shl=$stage/shlibdeps
mkdir -p "$shl/debian"
printf 'Source: relay\n\nPackage: relay\nArchitecture: any\n' > "$shl/debian/control"
depends=$(cd "$shl" && dpkg-shlibdeps -O --warnings=0 --ignore-missing-info \
  "${libdirs[@]/#/-l$ROOT/}" "${elves[@]/#/-e$ROOT/}" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies"

sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$DEBARCH/" \
    -e "s/@INSTALLED_SIZE@/$(du -sk --exclude=DEBIAN "$root" | cut -f1)/" \
    -e "s/@DEPENDS@/$depends/" installers/linux/control.in > "$root/DEBIAN/control"
if [ -n "${RELAY_DEB_MAINTAINER:-}" ]; then
  sed -i "s/^Maintainer: .*/Maintainer: $RELAY_DEB_MAINTAINER/" "$root/DEBIAN/control"
fi
printf 'relay (%s) unstable; urgency=medium\n\n  * Built from the Relay repository by installers/linux/build.sh.\n\n -- %s  %s\n' \
  "$VERSION" "$(sed -n 's/^Maintainer: //p' "$root/DEBIAN/control")" "$(date -R)" |
  gzip -9n > "$root/usr/share/doc/relay/changelog.gz"
chmod -R u+rwX,go+rX,go-w "$root"
find "$root/opt/relay" -type f -name '*.so*' -exec chmod 644 {} +  # libraries need no x bit
deb=dist/relay_${VERSION}_$DEBARCH.deb
dpkg-deb --root-owner-group -Zxz -z6 --build "$root" "$deb" >/dev/null
log ".deb: $deb ($(du -h "$deb" | cut -f1)); Depends: $depends"
log "done in $((SECONDS - started)) s"
