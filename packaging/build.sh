#!/usr/bin/env bash
# Builds the one-folder bundle dist/sfumato/ (work files in build/; both are git-ignored).
# Needs the project's venv (.ci/run or the README's set-up command); installs PyInstaller into it.
set -euo pipefail
cd "$(dirname "$0")/.."

PYINSTALLER_VERSION="6.22.3"
.venv/bin/pip install -q "pyinstaller==${PYINSTALLER_VERSION}"

# The icons are committed; re-render them so the bundle never ships a stale PNG or runtime icon.
QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icons.py

.venv/bin/pyinstaller --noconfirm --log-level WARN \
  --distpath dist --workpath build packaging/sfumato.spec
echo "built dist/sfumato ($(du -sh dist/sfumato | cut -f1))"
