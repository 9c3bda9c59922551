"""Several cursors: Ctrl+D's next occurrences and Alt+click, typing and moving at all of them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from test_app_support import FakeBackend, make_engine, qasync_loop  # noqa: F401 - fixture

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.infill import InfillOptions, EditStarter
from sfumato.app.commandkeys import DEFAULT_SESSION_KEYS


@pytest.fixture
def editor(qtbot):
    widget = CodeEditor()
    widget.auto_close = False
    qtbot.addWidget(widget)
    widget.resize(600, 300)
    widget.show()
    return widget


def test_ctrl_d_selects_the_word_then_each_next_occurrence_and_typing_replaces_them_all(qtbot, editor):
    editor.setPlainText("x = item\ny = item + item\n")
    cursor = editor.textCursor()
    cursor.setPosition(5)
    editor.setTextCursor(cursor)
    editor.add_next_occurrence()
    assert editor.textCursor().selectedText() == "item" and not editor.extra_cursors
    editor.add_next_occurrence()
    editor.add_next_occurrence()
    editor.add_next_occurrence()  # no fourth: it comes round to the first and stops
    assert len(editor.extra_cursors.cursors) == 2
    qtbot.keyClicks(editor, "thing")
    assert editor.toPlainText() == "x = thing\ny = thing + thing\n"
    editor.undo()  # one key at every cursor is one undo step
    assert editor.toPlainText() == "x = thin\ny = thin + thin\n"
    while editor.document().isUndoAvailable():
        editor.undo()
    assert editor.toPlainText() == "x = item\ny = item + item\n"


def test_arrows_backspace_and_end_act_at_every_cursor_and_esc_leaves_one(qtbot, editor):
    editor.setPlainText("ab\ncd\nef")
    for line in (1, 2):
        editor.extra_cursors.add_at(editor.document().findBlockByNumber(line).position())
    assert len(editor.extra_cursors.cursors) == 2
    qtbot.keyClick(editor, Qt.Key.Key_End)
    qtbot.keyClicks(editor, "!")
    assert editor.toPlainText() == "ab!\ncd!\nef!"
    qtbot.keyClick(editor, Qt.Key.Key_Left)
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert editor.toPlainText() == "a!\nc!\ne!"
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert not editor.extra_cursors
    qtbot.keyClicks(editor, "?")
    assert editor.toPlainText() == "a?!\nc!\ne!"  # at the main cursor only


def test_alt_click_adds_a_cursor_and_a_plain_click_clears_them(qtbot, editor):
    editor.setPlainText("one\ntwo\n")
    second = editor.cursorRect(editor.textCursor()).center() + QPoint(0, editor.fontMetrics().height())
    qtbot.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.AltModifier, second)
    assert len(editor.extra_cursors.cursors) == 1
    qtbot.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=second)
    assert not editor.extra_cursors


def test_a_session_starts_with_one_cursor(qtbot, qasync_loop, editor):  # noqa: F811
    engine = make_engine(qasync_loop, FakeBackend(), qtbot)
    starter = EditStarter(engine, InfillOptions(), DEFAULT_SESSION_KEYS)
    editor.setPlainText("alpha alpha\n")
    editor.add_next_occurrence()
    editor.add_next_occurrence()
    assert editor.extra_cursors
    session = starter.rewrite(editor)
    assert not editor.extra_cursors
    editor.add_next_occurrence()
    assert not editor.extra_cursors
    session.reject()


def test_ctrl_k_with_several_selections_rewrites_them_all_in_one_session(qtbot, qasync_loop, editor):  # noqa: F811
    backend = FakeBackend()
    engine = make_engine(qasync_loop, backend, qtbot)
    starter = EditStarter(engine, InfillOptions(), DEFAULT_SESSION_KEYS)
    text = "a = item\nb = item + 1\n"
    editor.setPlainText(text)
    cursor = editor.textCursor()
    cursor.setPosition(5)
    editor.setTextCursor(cursor)
    editor.add_next_occurrence()
    editor.add_next_occurrence()  # both "item"s selected
    session = starter.rewrite(editor, strength=0.5)
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    [requests] = backend.requests
    assert [r.init_text for r in requests] == ["item", "item"] and requests[1].prefix == "a = item\nb = "
    expected = f"a = {FakeBackend.result(0)}\nb = {FakeBackend.result(1)} + 1\n"
    assert editor.toPlainText() == expected
    again = starter.again(session)  # the originals back, both regions run again
    qtbot.waitUntil(lambda: again.state == "ready", timeout=10000)
    assert [r.init_text for r in backend.requests[1]] == ["item", "item"]
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == expected
    editor.undo()
    assert editor.toPlainText() == text and not editor.document().isUndoAvailable()


def test_copy_at_several_cursors_and_paste_gives_each_cursor_its_line(qtbot, editor):
    from PySide6.QtWidgets import QApplication

    editor.setPlainText("red = 1\nblue = 2\n")
    editor.extra_cursors.select([(0, 3), (8, 12)])
    qtbot.keyClick(editor, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.clipboard().text() == "red\nblue"
    editor.extra_cursors.select([(6, 7), (15, 16)])  # the two numbers
    qtbot.keyClick(editor, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert editor.toPlainText() == "red = red\nblue = blue\n"
    QApplication.clipboard().setText("x")
    editor.extra_cursors.select([(0, 0), (10, 10)])
    qtbot.keyClick(editor, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)  # one piece, two cursors: all of it at each
    assert editor.toPlainText() == "xred = red\nxblue = blue\n"


def test_ctrl_d_pressed_as_a_person_does_it_keeps_adding(qtbot, editor):
    """Each Ctrl+D is a Ctrl press and then D: the Ctrl press alone must not drop the cursors."""
    editor.setPlainText("a a a a\n")
    for _ in range(4):
        qtbot.keyPress(editor, Qt.Key.Key_Control)
        editor.add_next_occurrence()  # what the window's Ctrl+D shortcut runs
        qtbot.keyRelease(editor, Qt.Key.Key_Control)
    assert len(editor.extra_cursors.cursors) == 3
