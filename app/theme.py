"""How the text looks: light or dark, the editor's colours, its font.

The window follows the desktop's colour scheme (Qt reports it, and its changes, through
``QStyleHints.colorScheme``) unless the user picks light or dark. When the desktop's own palette
already has the wanted lightness it is kept (the native look); otherwise the application gets
the palette below. Each text area then takes its background, text, gutter and line-number
colours from the pygments style chosen for that lightness, the same style the highlighter uses,
so the code colours are drawn on the background they were designed for. The text font is the
system's fixed-width font unless the settings name a family or a size.
"""

from __future__ import annotations

from functools import lru_cache

from pygments.styles import get_all_styles, get_style_by_name
from pygments.token import Token
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from sfumato.app.settings import Settings

THEMES = {"system": "Follow the desktop", "light": "Light", "dark": "Dark"}

_styles = {"light": Settings.light_style, "dark": Settings.dark_style}  # as chosen, for the whole application

_DARK_COLORS = {  # role: colour, for a desktop whose palette is light when dark is wanted
    "Window": "#2b2b2e", "WindowText": "#e6e6e6", "Base": "#1f1f22", "AlternateBase": "#2b2b2e",
    "Text": "#e6e6e6", "Button": "#35353a", "ButtonText": "#e6e6e6", "BrightText": "#ff6b6b",
    "Highlight": "#3d7fd9", "HighlightedText": "#ffffff", "ToolTipBase": "#3a3a40", "ToolTipText": "#f0f0f0",
    "PlaceholderText": "#8c8c94", "Link": "#6fa8ff", "Mid": "#5a5a62", "Light": "#4a4a52", "Dark": "#18181a",
}
_LIGHT_COLORS = {
    "Window": "#efefef", "WindowText": "#1e1e1e", "Base": "#ffffff", "AlternateBase": "#f4f4f4",
    "Text": "#1e1e1e", "Button": "#e8e8e8", "ButtonText": "#1e1e1e", "BrightText": "#d00000",
    "Highlight": "#3d7fd9", "HighlightedText": "#ffffff", "ToolTipBase": "#ffffdc", "ToolTipText": "#1e1e1e",
    "PlaceholderText": "#8a8a8a", "Link": "#1a5fb4", "Mid": "#b8b8b8", "Light": "#ffffff", "Dark": "#a0a0a0",
}


def style_names() -> list[str]:
    return sorted(get_all_styles())


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def palette_is_dark() -> bool:
    """Whether the application is dark now."""
    return is_dark(QApplication.palette())


@lru_cache(maxsize=1)
def native_palette() -> QPalette:
    """The desktop's palette, as it was before Sfumato set one."""
    return QPalette(QApplication.palette())


def wants_dark(theme: str) -> bool:
    """Whether ``theme`` ("system", "light", "dark") means dark now."""
    if theme in ("light", "dark"):
        return theme == "dark"
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Unknown:
        return is_dark(native_palette())
    return scheme == Qt.ColorScheme.Dark


def apply_theme(theme: str, light_style: str, dark_style: str) -> None:
    """Give the application the palette ``theme`` wants now; remember the styles for the editors."""
    _styles.update(light=light_style, dark=dark_style)
    dark = wants_dark(theme)
    native = native_palette()
    palette = native if is_dark(native) == dark else _palette(_DARK_COLORS if dark else _LIGHT_COLORS)
    if QApplication.palette() != palette:
        QApplication.setPalette(palette)


def current_style() -> str:
    """The pygments style for the application's lightness now."""
    return _styles["dark" if palette_is_dark() else "light"]


def editor_palette(base: QPalette, style_name: str) -> QPalette:
    """``base`` with the text area's colours taken from the pygments style ``style_name``."""
    style = get_style_by_name(style_name)
    background = QColor(style.background_color or base.color(QPalette.ColorRole.Base).name())
    spec = style.style_for_token(Token.Text)
    text = QColor("#" + spec["color"]) if spec["color"] else QColor("#f0f0f0" if background.lightness() < 128 else "#1e1e1e")
    palette = QPalette(base)
    shift = 112 if background.lightness() < 128 else 96  # the gutter a shade off the text's background
    palette.setColor(QPalette.ColorRole.Base, background)
    palette.setColor(QPalette.ColorRole.Text, text)
    palette.setColor(QPalette.ColorRole.AlternateBase, background.lighter(shift) if shift > 100 else background.darker(104))
    palette.setColor(QPalette.ColorRole.PlaceholderText, _mix(text, background, 0.5))
    return palette


def editor_font(family: str, size: int) -> QFont:
    """The text font: ``family`` ("" for the system's fixed-width one) at ``size`` points (0: its own)."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if family:
        font.setFamily(family)
    if size > 0:
        font.setPointSize(size)
    return font


def _mix(a: QColor, b: QColor, share: float) -> QColor:
    return QColor(*(round(x * share + y * (1 - share)) for x, y in zip(a.getRgb()[:3], b.getRgb()[:3])))


def _palette(colors: dict[str, str]) -> QPalette:
    palette = QPalette()
    for role, color in colors.items():
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(color))
    disabled = QColor(colors["PlaceholderText"])
    for role in ("Text", "WindowText", "ButtonText"):
        palette.setColor(QPalette.ColorGroup.Disabled, getattr(QPalette.ColorRole, role), disabled)
    return palette
