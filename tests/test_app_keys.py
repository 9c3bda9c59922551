"""Sfumato's keys never edit text through the text widget's own bindings, whatever has focus."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from test_app_support import qasync_loop, select, window  # noqa: F401 - fixtures

from app.codeeditor import CodeEditor

ALT = Qt.KeyboardModifier.AltModifier


@pytest.mark.parametrize("key", [Qt.Key.Key_BracketRight, Qt.Key.Key_BracketLeft, Qt.Key.Key_R], ids=["Alt+]", "Alt+[", "Alt+R"])
def test_the_review_keys_type_nothing_when_no_result_is_under_review(window, qtbot, key):
    editor = window.tabs.new_document().editor
    editor.setPlainText("alpha\n")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(editor, key, ALT)
    assert editor.toPlainText() == "alpha\n"
    assert not editor.document().isUndoAvailable()
