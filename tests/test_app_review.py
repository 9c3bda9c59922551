"""Reviewing a result: where the cursor and the selection are, what the status bar and tab say."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from test_app_support import FakeBackend, qasync_loop, select, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.app.textpositions import document_text

TEXT = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
CTRL = Qt.KeyboardModifier.ControlModifier


@pytest.fixture
def reviewed(window, qtbot):
    """Characters 19-31 of TEXT rewritten in the window's editor, the result shown for review."""
    def start(backend=None):
        with_fake_model(window, qtbot, backend)
        editor = window.tabs.new_document().editor
        editor.setPlainText(TEXT)
        window.activateWindow()
        select(editor, 19, 31)
        window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 0.7))
        session = editor.session
        qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=10000)
        return editor, session

    return start


def test_undo_after_accept_selects_the_original_where_it_was_and_clears_the_accepted_message(window, qtbot, reviewed):
    editor, _ = reviewed()
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert "Accepted" in window.statusBar().currentMessage()
    qtbot.keyClick(editor, Qt.Key.Key_Z, CTRL)
    assert document_text(editor.document()) == TEXT
    cursor = editor.textCursor()
    assert (cursor.selectionStart(), cursor.selectionEnd()) == (19, 31)
    assert cursor.selectedText() == TEXT[19:31]
    assert "Accepted" not in window.statusBar().currentMessage()


def test_an_edit_after_accept_clears_the_accepted_message(window, qtbot, reviewed):
    editor, _ = reviewed()
    window.ai.on_session(lambda session: session.accept())
    assert "Accepted" in window.statusBar().currentMessage()
    qtbot.keyClicks(editor, "x")
    assert "Accepted" not in window.statusBar().currentMessage()


def test_try_again_sends_the_text_as_it_is_now_and_esc_still_restores_the_original(window, qtbot, reviewed):
    other = window.tabs.new_document().editor
    other.setPlainText("def sum_all(items):\n    return sum(items)\n")
    backend = FakeBackend()
    editor, first = reviewed(backend)
    qtbot.keyClick(editor, Qt.Key.Key_Home, CTRL)
    qtbot.keyClicks(editor, "import operator")  # typed outside the region while it is reviewed
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    other.setPlainText("def add_all(items):\n    return sum(items)\n")  # the other open file changed
    assert first.state == "ready"
    qtbot.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
    second = editor.session
    qtbot.waitUntil(lambda: second.state == "ready", timeout=10000)
    [(old,), (new,)] = backend.requests
    assert new.prefix == "import operator\n" + TEXT[:19] and new.suffix == TEXT[31:]
    assert any("add_all" in snippet for snippet in new.context) and not any("sum_all" in snippet for snippet in new.context)
    assert (new.init_text, new.strength, new.max_new_tokens) == (TEXT[19:31], 0.7, old.max_new_tokens)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == "import operator\n" + TEXT


def test_the_tab_shows_unsaved_changes_typed_while_a_rewrite_is_pending(window, qtbot):
    backend = FakeBackend()
    backend.hold.set()
    with_fake_model(window, qtbot, backend)
    editor = window.tabs.new_document().editor
    editor.setPlainText(TEXT)
    editor.document().setModified(False)
    select(editor, 19, 31)
    window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 0.7))
    session = editor.session
    qtbot.waitUntil(lambda: session.has_draft, timeout=10000)
    index = window.tabs.indexOf(editor)
    assert not window.tabs.tabText(index).endswith("•")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClicks(editor, "x")
    assert session.state == "running"
    assert window.tabs.tabText(index).endswith("•")
    assert window.windowTitle().startswith(f"{window.tabs.current_document().name} •")


def test_an_empty_result_says_so_ends_without_an_undo_step_and_alt_r_tries_again(window, qtbot, reviewed, monkeypatch):
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: ""))
    backend = FakeBackend()
    editor, session = reviewed(backend)
    assert session.state == "ended"
    assert editor.session is None
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()
    assert window.statusBar().currentMessage() == "The model wrote nothing here; Alt+R tries again."
    qtbot.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: len(backend.requests) == 2, timeout=10000)
    assert backend.requests[1] == tuple(replace(r, first_alternative=1) for r in backend.requests[0])  # not the empty one again
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("The model wrote nothing"), timeout=10000)
    assert document_text(editor.document()) == TEXT


def test_a_result_that_changes_nothing_says_so_and_alt_r_tries_the_next_alternatives(window, qtbot, reviewed, monkeypatch):
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: TEXT[19:31]))  # the selection as it was
    backend = FakeBackend()
    editor, session = reviewed(backend)
    assert session.state == "ended" and editor.session is None
    assert document_text(editor.document()) == TEXT and not editor.document().isUndoAvailable()
    assert window.statusBar().currentMessage() == "The model would change nothing here; your text is as it was. Alt+R tries again."
    qtbot.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: len(backend.requests) == 2, timeout=10000)
    assert backend.requests[1] == tuple(replace(r, first_alternative=1) for r in backend.requests[0])
    assert document_text(editor.document()) == TEXT


def test_esc_selects_the_original_again(window, qtbot, reviewed):
    editor, _ = reviewed()
    editor.moveCursor(QTextCursor.MoveOperation.End)  # looking elsewhere while the result waits
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == TEXT
    cursor = editor.textCursor()
    assert (cursor.selectionStart(), cursor.selectionEnd()) == (19, 31)


def test_the_reject_command_selects_the_original_again(window, qtbot, reviewed):
    editor, _ = reviewed()
    window.menu_actions.reject.trigger()
    assert editor.session is None
    assert editor.textCursor().selectedText() == TEXT[19:31]


@pytest.mark.parametrize("where", ["top", "bottom"])
def test_the_strength_box_hides_none_of_the_lines_above_the_selection(window, qtbot, where):
    """Under the selection where there is room, else beside it; inside the view either way."""
    from PySide6.QtCore import QRect

    from sfumato.app.inlinebox import InlineBox

    with_fake_model(window, qtbot)
    editor = window.tabs.new_document().editor
    editor.setPlainText("".join(f"line {n}\n" for n in range(300)))
    qtbot.waitUntil(lambda: editor.cursorRect().height() > 0)
    visible = editor.viewport().height() // editor.cursorRect().height()
    top = 3 if where == "top" else visible - 3  # the selection: three lines, at the top or the bottom of the view

    def line_rect(number: int, width: int) -> QRect:
        rect = editor.cursorRect(QTextCursor(editor.document().findBlockByNumber(number)))
        return QRect(0, rect.top(), width, rect.height())

    first, last = editor.document().findBlockByNumber(top), editor.document().findBlockByNumber(top + 2)
    select(editor, first.position(), last.position() + last.length() - 1)
    window.ai.rewrite()
    box = editor.viewport().findChild(InlineBox)
    assert box is not None and box.isVisible()
    assert editor.viewport().rect().contains(box.geometry())
    for number in range(top):
        assert not box.geometry().intersects(line_rect(number, editor.viewport().width())), number
    for number in range(top, top + 3):  # the selected lines' text ("line 123") stays in view too
        assert not box.geometry().intersects(line_rect(number, editor.fontMetrics().horizontalAdvance("line 000"))), number
