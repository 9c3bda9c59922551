"""The editor widget on its own: indentation, tabs, zoom, go to line."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from app.codeeditor import CodeEditor


@pytest.fixture
def editor(qtbot):
    widget = CodeEditor()
    qtbot.addWidget(widget)
    return widget


def test_enter_keeps_the_indentation_and_indents_after_a_colon(qtbot, editor):
    qtbot.keyClicks(editor, "def f():")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "if x:")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "y")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert editor.toPlainText() == "def f():\n    if x:\n        y\n        "


def test_tab_inserts_spaces_to_the_next_stop_or_a_real_tab(qtbot, editor):
    qtbot.keyClicks(editor, "ab")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "ab  "
    editor.set_indentation(spaces=False, width=8)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "ab  \t"


def test_tab_and_shift_tab_indent_and_dedent_selected_lines_in_one_undo_step(qtbot, editor):
    editor.setPlainText("a\nb\nc\n")
    cursor = editor.textCursor()
    cursor.setPosition(0)
    cursor.setPosition(3, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "    a\n    b\nc\n"
    qtbot.keyClick(editor, Qt.Key.Key_Backtab)
    assert editor.toPlainText() == "a\nb\nc\n"
    editor.undo()
    assert editor.toPlainText() == "    a\n    b\nc\n"


def test_zoom_changes_the_font_and_resets(editor):
    size = editor.font().pointSizeF()
    editor.zoom(3)
    assert editor.font().pointSizeF() == size + 3
    editor.zoom(0)
    assert editor.font().pointSizeF() == size


def test_go_to_line_moves_the_cursor(editor):
    editor.setPlainText("one\ntwo\nthree\n")
    editor.go_to_line(3)
    assert editor.textCursor().blockNumber() == 2
    editor.go_to_line(99)
    assert editor.textCursor().blockNumber() == editor.blockCount() - 1
