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

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "packaging" / "icons" / "sfumato.svg"
THEME = ROOT / "packaging" / "icons" / "hicolor"
RUNTIME = ROOT / "resources" / "icons" / "sfumato.svg"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(svg: Path, size: int) -> QImage:
    """The icon as a size x size image with a transparent background; ValueError if the SVG is bad."""
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg}: not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    for size in SIZES:
        target = THEME / f"{size}x{size}" / "apps" / "sfumato.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not render(SOURCE, size).save(str(target), "PNG"):
            raise OSError(f"cannot write {target}")
    RUNTIME.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SOURCE, RUNTIME)
    print(f"rendered {len(SIZES)} sizes into {THEME.relative_to(ROOT)}; copied the SVG to {RUNTIME.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
