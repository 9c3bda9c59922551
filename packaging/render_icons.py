"""Render packaging/icons/sfumato.svg to the PNG sizes desktops ask for, and copy the SVG the app
uses at run time into resources/icons/.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icons.py

Writes packaging/icons/hicolor/<N>x<N>/apps/sfumato.png, the freedesktop icon-theme layout, so
the folder can be copied as is under share/icons/.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from PySide6.QtGui import QGuiApplication

from sfumato.app.about import icon_pixmap

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "packaging" / "icons" / "sfumato.svg"
THEME = ROOT / "packaging" / "icons" / "hicolor"
RUNTIME = ROOT / "resources" / "icons" / "sfumato.svg"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def main() -> int:
    QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    RUNTIME.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SOURCE, RUNTIME)  # the app's icon, which icon_pixmap draws
    for size in SIZES:
        target = THEME / f"{size}x{size}" / "apps" / "sfumato.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        pixmap = icon_pixmap(size)
        if pixmap.isNull():
            raise ValueError(f"{SOURCE}: not a valid SVG")
        if not pixmap.save(str(target), "PNG"):
            raise OSError(f"cannot write {target}")
    print(f"rendered {len(SIZES)} sizes into {THEME.relative_to(ROOT)}; copied the SVG to {RUNTIME.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
