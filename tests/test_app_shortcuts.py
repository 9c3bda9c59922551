"""Help > Keyboard Shortcuts lists the menus' own bindings and filters them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from test_app_support import qasync_loop  # noqa: F401 - fixture

from sfumato.app.mainwindow import MainWindow


@pytest.fixture
def window(qtbot, qasync_loop, tmp_path):  # noqa: F811
    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    return window


def test_the_list_holds_the_menus_bindings_and_follows_the_settings(window):
    window.show_shortcuts()
    rows = dict(window.shortcuts.shown())
    assert rows["File: Save"] == "Ctrl+S"
    assert rows["AI: Rewrite Selection / Infill at Cursor"] == "Ctrl+K"
    assert rows["AI: Accept"] == "Tab" and rows["AI: Reject"] == "Esc"  # keys a session reads, named in the menu
    assert rows["View: Next Tab"] == "Ctrl+PgDown, Ctrl+Tab"
    assert rows["Help: Keyboard Shortcuts"] == "F1"
    window.settings.keys["rewrite"] = "Ctrl+Alt+R"
    window.apply_settings()
    window.show_shortcuts()
    assert dict(window.shortcuts.shown())["AI: Rewrite Selection / Infill at Cursor"] == "Ctrl+Alt+R"


def test_the_filter_matches_commands_and_keys(window):
    window.show_shortcuts()
    dialog = window.shortcuts
    everything = dialog.shown()
    dialog.query.setText("save")
    assert {label for label, _ in dialog.shown()} == {"File: Save", "File: Save As…", "File: Save All"}
    dialog.query.setText("ctrl+k")
    assert [label for label, _ in dialog.shown()] == ["AI: Rewrite Selection / Infill at Cursor"]
    dialog.query.setText("")
    assert dialog.shown() == everything
