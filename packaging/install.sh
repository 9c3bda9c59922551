#!/usr/bin/env bash
# Installs the built bundle as a desktop application (Linux, freedesktop layout).
#
#     packaging/install.sh [PREFIX]        PREFIX defaults to ~/.local (no root needed)
#     packaging/install.sh --uninstall [PREFIX]
#
# PREFIX/lib/sfumato/          the bundle (dist/sfumato)
# PREFIX/bin/sfumato           a link to its executable (PREFIX/bin should be on PATH)
# PREFIX/share/applications/, share/metainfo/, share/icons/hicolor/   desktop integration
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
uninstall=false
if [ "${1:-}" = "--uninstall" ]; then
  uninstall=true
  shift
fi
PREFIX="${1:-$HOME/.local}"
SHARE="$PREFIX/share"
METAINFO="io.github.sfumato.Sfumato.metainfo.xml"
THEME="$ROOT/packaging/icons/hicolor"  # <N>x<N>/apps/sfumato.png, as rendered by render_icons.py

remove_all() {
  rm -rf "$PREFIX/lib/sfumato"
  rm -f "$PREFIX/bin/sfumato" "$SHARE/applications/sfumato.desktop" "$SHARE/metainfo/$METAINFO" \
    "$SHARE/icons/hicolor/scalable/apps/sfumato.svg"
  for png in "$THEME"/*/apps/sfumato.png; do
    rm -f "$SHARE/icons/hicolor/${png#"$THEME"/}"
  done
}

refresh_caches() {
  if command -v update-desktop-database >/dev/null; then update-desktop-database -q "$SHARE/applications" || true; fi
  if command -v gtk-update-icon-cache >/dev/null; then gtk-update-icon-cache -q -t "$SHARE/icons/hicolor" || true; fi
}

if $uninstall; then
  remove_all
  refresh_caches
  echo "removed Sfumato from $PREFIX"
  exit 0
fi

[ -x "$ROOT/dist/sfumato/sfumato" ] || { echo "install.sh: build first (packaging/build.sh)" >&2; exit 2; }
remove_all
install -d "$PREFIX/lib" "$PREFIX/bin" "$SHARE/applications" "$SHARE/metainfo" "$SHARE/icons/hicolor/scalable/apps"
cp -a "$ROOT/dist/sfumato" "$PREFIX/lib/sfumato"
ln -s "$PREFIX/lib/sfumato/sfumato" "$PREFIX/bin/sfumato"
install -m 644 "$ROOT/packaging/sfumato.desktop" "$SHARE/applications/sfumato.desktop"
install -m 644 "$ROOT/packaging/$METAINFO" "$SHARE/metainfo/$METAINFO"
install -m 644 "$ROOT/packaging/icons/sfumato.svg" "$SHARE/icons/hicolor/scalable/apps/sfumato.svg"
for png in "$THEME"/*/apps/sfumato.png; do
  install -D -m 644 "$png" "$SHARE/icons/hicolor/${png#"$THEME"/}"
done
refresh_caches
echo "installed Sfumato into $PREFIX (run: $PREFIX/bin/sfumato)"
