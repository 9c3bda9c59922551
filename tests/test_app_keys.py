"""Sfumato's keys never edit text through the text widget's own bindings, whatever has focus."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeySequence, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from test_app_support import qasync_loop, select, window  # noqa: F401 - fixtures

from sfumato.app.codeeditor import CodeEditor

ALT = Qt.KeyboardModifier.AltModifier
CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.mark.parametrize("key", [Qt.Key.Key_BracketRight, Qt.Key.Key_BracketLeft, Qt.Key.Key_R], ids=["Alt+]", "Alt+[", "Alt+R"])
def test_the_review_keys_type_nothing_when_no_result_is_under_review(window, qtbot, key):
    editor = window.tabs.new_document().editor
    editor.setPlainText("alpha\n")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(editor, key, ALT)
    assert editor.toPlainText() == "alpha\n"
    assert not editor.document().isUndoAvailable()


X11_TEXT_BINDINGS = {"Ctrl+K": "delete to the end of the line", "Ctrl+D": "delete the next character"}


def _x11_binding(event) -> str | None:
    return X11_TEXT_BINDINGS.get(QKeySequence(event.keyCombination()).toString())


class X11TextWidget(QPlainTextEdit):
    """The text widget as Qt's X11 key scheme makes it (the offscreen platform binds neither key):
    Ctrl+K deletes to the end of the line, Ctrl+D the next character, and the widget claims both
    before the window's shortcuts see them."""

    def event(self, event):
        if event.type() == QEvent.Type.ShortcutOverride and _x11_binding(event):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event):  # noqa: N802 - Qt override
        action = _x11_binding(event)
        if action is None:
            super().keyPressEvent(event)
            return
        cursor = self.textCursor()
        step = QTextCursor.MoveOperation.EndOfBlock if action.endswith("line") else QTextCursor.MoveOperation.NextCharacter
        cursor.movePosition(step, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()


class X11CodeEditor(CodeEditor, X11TextWidget):
    """Sfumato's editor on top of that widget (CodeEditor's super() calls reach the X11 bindings)."""


@pytest.fixture
def x11_window(window, monkeypatch):
    """The window, its new tabs' editors on the X11 text widget."""
    monkeypatch.setattr("sfumato.app.documenttabs.CodeEditor", X11CodeEditor)
    return window


def test_the_x11_emulation_deletes_text_in_a_plain_text_widget(qtbot):
    """The stand-in does what X11 does, so the tests below can fail."""
    plain = X11TextWidget()
    qtbot.addWidget(plain)
    plain.setPlainText("alpha beta\n")
    qtbot.keyClick(plain, Qt.Key.Key_K, CTRL)
    assert plain.toPlainText() == "\n"


@pytest.mark.parametrize("key, modifiers", [
    (Qt.Key.Key_K, CTRL), (Qt.Key.Key_K, CTRL | SHIFT), (Qt.Key.Key_R, ALT),
    (Qt.Key.Key_BracketRight, ALT), (Qt.Key.Key_BracketLeft, ALT),
], ids=["Ctrl+K", "Ctrl+Shift+K", "Alt+R", "Alt+]", "Alt+["])
def test_an_ai_key_reaching_a_bare_editor_changes_no_text(qtbot, key, modifiers):
    editor = X11CodeEditor()
    qtbot.addWidget(editor)
    editor.setPlainText("alpha beta\n")
    select(editor, 2, 6)
    qtbot.keyClick(editor, key, modifiers)
    assert editor.toPlainText() == "alpha beta\n"


def focused_editor(window, qtbot, text: str, anchor: int, position: int) -> CodeEditor:
    editor = window.tabs.new_document().editor
    editor.setPlainText(text)
    select(editor, anchor, position)
    window.activateWindow()
    qtbot.waitUntil(editor.hasFocus)
    return editor


def test_ctrl_k_in_the_focused_editor_runs_the_rewrite_not_the_text_widgets_binding(x11_window, qtbot):
    from sfumato.app.inlinebox import InlineBox

    editor = focused_editor(x11_window, qtbot, "alpha beta gamma\n", 6, 10)
    qtbot.keyClick(editor, Qt.Key.Key_K, CTRL)
    assert editor.toPlainText() == "alpha beta gamma\n"
    box = editor.viewport().findChild(InlineBox)
    assert box is not None and box.isVisible()


def test_ctrl_d_in_the_focused_editor_adds_the_next_occurrence(x11_window, qtbot):
    editor = focused_editor(x11_window, qtbot, "one two one\n", 0, 3)
    qtbot.keyClick(editor, Qt.Key.Key_D, CTRL)
    assert editor.toPlainText() == "one two one\n"
    assert len(editor.extra_cursors.cursors) == 1


def test_ctrl_k_with_the_rewrite_command_off_changes_no_text(x11_window, qtbot):
    x11_window.menu_actions.rewrite.setEnabled(False)
    editor = focused_editor(x11_window, qtbot, "alpha beta gamma\n", 6, 10)
    qtbot.keyClick(editor, Qt.Key.Key_K, CTRL)
    assert editor.toPlainText() == "alpha beta gamma\n"
