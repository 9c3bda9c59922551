"""The About dialog (Help > About Sfumato) and the application icon.

The main window calls ``show_about(self, self.worker.info)``; ``info`` is ``None`` while the model
is still loading or when none could be loaded.
"""

from __future__ import annotations

import html
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6 import __version__ as PYSIDE_VERSION
from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QMessageBox, QWidget

if TYPE_CHECKING:
    from sfumato.model.api import ModelInfo

ICON_PATH = Path(__file__).resolve().parent.parent / "resources" / "icons" / "sfumato.svg"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)
APP_LICENSE = "Apache-2.0"
BACKEND_NAMES = {"diffusion-gemma": "DiffusionGemma (block diffusion)", "masked-diffusion": "masked diffusion"}


def icon_pixmap(size: int) -> QPixmap:
    """The application icon drawn at ``size`` x ``size``; a null pixmap if the SVG is missing."""
    renderer = QSvgRenderer(str(ICON_PATH))
    if not renderer.isValid():
        return QPixmap()
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return pixmap


def app_icon() -> QIcon:
    """The window icon, drawn from the SVG at the sizes a desktop asks for (no SVG plugin needed)."""
    icon = QIcon()
    for size in ICON_SIZES:
        pixmap = icon_pixmap(size)
        if not pixmap.isNull():
            icon.addPixmap(pixmap)
    return icon


def format_parameters(count: int) -> str:
    """A parameter count as people say it: 712_704 -> '0.713 M', 26_000_000_000 -> '26 B'."""
    if count >= 1e9:
        return f"{count / 1e9:.3g} B"
    if count >= 1e4:
        return f"{count / 1e6:.3g} M"
    return f"{count:,}"


def about_html(model_info: ModelInfo | None) -> str:
    """The dialog's text: the version, the model in use and its licence, and the app's licence."""
    lines = [f"<h3>Sfumato {metadata.version('sfumato')}</h3>", "<p>A text and code editor whose AI edits are made by a diffusion language model.</p>"]
    if model_info is None:
        lines.append("<p><b>Model:</b> none loaded (still loading, or it could not be loaded; see the status bar).</p>")
    else:
        backend = BACKEND_NAMES.get(model_info.backend, model_info.backend)
        kind = ", instruction-tuned" if model_info.instruction_tuned else ""
        lines.append(
            "<p>"
            f"<b>Model:</b> {html.escape(model_info.name)}<br>"
            f"<b>Kind:</b> {html.escape(backend)}{kind}<br>"
            f"<b>Parameters:</b> {format_parameters(model_info.parameters)}<br>"
            f"<b>Running on:</b> {html.escape(model_info.device)}<br>"
            f"<b>Model licence:</b> {html.escape(model_info.license)}"
            "</p>"
        )
    lines.append(
        f"<p>Sfumato is licensed under {APP_LICENSE}. "
        f"Python {platform.python_version()}, Qt for Python {PYSIDE_VERSION}.</p>"
    )
    return "\n".join(lines)


def show_about(parent: QWidget | None, model_info: ModelInfo | None) -> QMessageBox:
    """Open the About dialog (window-modal, without blocking the event loop) and return it."""
    box = QMessageBox(parent)
    box.setWindowTitle("About Sfumato")
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(about_html(model_info))
    box.setIconPixmap(icon_pixmap(96))
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
