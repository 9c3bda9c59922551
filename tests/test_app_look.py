"""Theme, text styles and font: switched, applied to the open editors at once, remembered."""

from __future__ import annotations

import pytest
from pygments.styles import get_style_by_name
from PySide6.QtCore import QSettings
from PySide6.QtGui import QFont, QFontDatabase, QGuiApplication, QPalette

from test_app_support import qasync_loop  # noqa: F401 - fixture

from sfumato.app import theme
from sfumato.app.mainwindow import MainWindow
from sfumato.app.settings import Settings
from sfumato.app.settings_dialog import SettingsDialog


@pytest.fixture
def window(qtbot, qasync_loop, tmp_path):  # noqa: F811
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(qasync_loop, store)
    qtbot.addWidget(window)
    path = tmp_path / "a.py"
    path.write_text("def f():\n    return 1\n")
    window.tabs.open_path(str(path))
    yield window
    window.settings.theme = "light"  # the palette is the application's: leave it light for the next tests
    window.apply_settings()


def base_color(window) -> str:
    return window.tabs.current_editor().palette().color(QPalette.ColorRole.Base).name()


def test_switching_the_theme_changes_the_palette_and_the_text_style(window):
    window.settings.theme = "light"
    window.apply_settings()
    document = window.tabs.current_document()
    assert not theme.palette_is_dark()
    assert document.highlighter.style_name == "default"
    assert base_color(window) == get_style_by_name("default").background_color
    window.settings.theme = "dark"
    window.settings.dark_style = "dracula"
    window.apply_settings()
    assert theme.palette_is_dark()
    assert document.highlighter.style_name == "dracula"
    assert base_color(window) == get_style_by_name("dracula").background_color
    editor = window.tabs.current_editor()
    numbers = editor.palette().color(QPalette.ColorRole.PlaceholderText)
    assert abs(numbers.lightness() - editor.palette().color(QPalette.ColorRole.Base).lightness()) > 40, "line numbers unreadable"


def test_the_system_theme_follows_the_desktops_colour_scheme(window, monkeypatch):
    hints = QGuiApplication.styleHints()
    window.settings.theme = "system"
    monkeypatch.setattr(type(hints), "colorScheme", lambda self: theme.Qt.ColorScheme.Dark)
    hints.colorSchemeChanged.emit(theme.Qt.ColorScheme.Dark)
    assert theme.palette_is_dark()
    assert window.tabs.current_document().highlighter.style_name == window.settings.dark_style
    monkeypatch.setattr(type(hints), "colorScheme", lambda self: theme.Qt.ColorScheme.Light)
    hints.colorSchemeChanged.emit(theme.Qt.ColorScheme.Light)
    assert not theme.palette_is_dark()
    assert window.tabs.current_document().highlighter.style_name == window.settings.light_style


def a_monospaced_family() -> str:
    system = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
    families = [f for f in QFontDatabase.families() if QFontDatabase.isFixedPitch(f) and f != system]
    if not families:
        pytest.skip("no second monospaced font installed")
    return families[0]


def test_the_font_setting_is_applied_to_open_editors_keeps_the_zoom_and_is_remembered(window):
    family = a_monospaced_family()
    editor = window.tabs.current_editor()
    editor.zoom(2)
    window.settings.font_family, window.settings.font_size = family, 17
    window.apply_settings()
    assert editor.font().family() == family and editor.font().pointSize() == 19
    editor.zoom(0)
    assert editor.font().pointSize() == 17
    window.save_settings()
    remembered = Settings.load(window.store)
    assert (remembered.font_family, remembered.font_size) == (family, 17)


def test_the_settings_dialog_shows_the_font_at_once_and_cancel_puts_it_back(window, qtbot):
    family = a_monospaced_family()
    editor = window.tabs.current_editor()
    before = editor.font().family(), editor.font().pointSize()
    dialog = SettingsDialog(window.settings, window)
    dialog.look_changed.connect(window.apply_look)
    dialog.font_size.setValue(23)
    dialog.font_family.setCurrentFont(QFont(family))
    assert editor.font().pointSize() == 23 and editor.font().family() == family
    result = dialog.result_settings()
    assert (result.font_family, result.font_size) == (family, 23)
    dialog.reject()
    window.apply_settings()  # what the window does on Cancel
    assert (editor.font().family(), editor.font().pointSize()) == before
