"""Closing and saving documents: what the user did not ask for never happens."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QMessageBox

from test_app_support import qasync_loop, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.app.reopen import recall


def answer_unsaved(monkeypatch, answer: QMessageBox.StandardButton) -> list[str]:
    """Answer every "Save the changes?" with ``answer``; the questions asked, in order."""
    asked = []

    def question(parent, title, text, *args):
        asked.append(text)
        return answer

    monkeypatch.setattr(QMessageBox, "question", question)
    return asked


def test_cancelling_quit_leaves_every_tab_and_the_reopen_list_as_they_were(window, qtbot, tmp_path, monkeypatch):
    paths = [tmp_path / f"{name}.txt" for name in "abcde"]
    for path in paths:
        path.write_text("saved\n")
        window.tabs.open_path(str(path))
    window.tabs.documents()[-1].editor.insertPlainText("changed ")
    window.tabs.setCurrentIndex(1)
    asked = answer_unsaved(monkeypatch, QMessageBox.StandardButton.Cancel)
    assert not window.close()
    assert asked == ["Save the changes to e.txt?"]
    assert [d.path for d in window.tabs.documents()] == [str(p) for p in paths]
    assert window.tabs.currentIndex() == 1
    assert recall(window.store) == []
    answer_unsaved(monkeypatch, QMessageBox.StandardButton.Discard)
    assert window.close()
    assert [item.path for item in recall(window.store)] == [str(p) for p in paths]
    assert paths[-1].read_text() == "saved\n"


def test_cancelling_close_others_closes_none_of_them(window, tmp_path, monkeypatch):
    paths = [tmp_path / f"{name}.txt" for name in "abc"]
    for path in paths:
        path.write_text("saved\n")
        window.tabs.open_path(str(path))
    window.tabs.documents()[2].editor.insertPlainText("changed ")
    answer_unsaved(monkeypatch, QMessageBox.StandardButton.Cancel)
    {action.text(): action for action in window.tabs.tab_menu(1).actions()}["Close Others"].trigger()
    assert [d.path for d in window.tabs.documents()] == [str(p) for p in paths]


def test_saving_an_unmodified_document_writes_nothing(window, tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"a\r\nb\nc\r\n")
    document = window.tabs.open_path(str(path))
    assert window.tabs.save(document)
    assert path.read_bytes() == b"a\r\nb\nc\r\n"
    assert not document.is_modified()


def test_mixed_line_endings_become_one_with_a_real_edit_and_the_status_bar_says_so_once(window, qtbot, tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"a\r\nb\nc\r\n")
    document = window.tabs.open_path(str(path))
    document.editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClicks(document.editor, "d")
    assert window.tabs.save(document)
    assert path.read_bytes() == b"a\r\nb\r\nc\r\nd"
    assert "line endings" in window.statusBar().currentMessage() and "CRLF" in window.statusBar().currentMessage()
    qtbot.keyClicks(document.editor, "e")
    assert window.tabs.save(document)
    assert path.read_bytes() == b"a\r\nb\r\nc\r\nde"
    assert "line endings" not in window.statusBar().currentMessage()


def test_a_rejected_rewrite_then_save_leaves_the_file_byte_identical(window, qtbot, tmp_path):
    """The issue's check: select all of a file, rewrite, Esc, Ctrl+S; the bytes are the original's."""
    with_fake_model(window, qtbot)
    path = tmp_path / "nine.py"
    original = b"".join(b"x%d = %d\r\n" % (n, n) if n % 3 else b"x%d = %d\n" % (n, n) for n in range(9))
    path.write_bytes(original)
    editor = window.tabs.open_path(str(path)).editor
    editor.selectAll()
    window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 1.0))
    session = editor.session
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert window.tabs.save()
    assert path.read_bytes() == original


def test_only_invisible_characters_the_file_did_not_hold_are_asked_about_on_save(window, tmp_path, monkeypatch):
    """Right-to-left text and emoji sequences need their marks: a file that has them saves as usual."""
    path = tmp_path / "rtl.txt"
    path.write_text("\u05e9\u05dc\u05d5\u05dd\u200f 👩\u200d💻\n")
    document = window.tabs.open_path(str(path))
    document.editor.insertPlainText("x ")
    asked = answer_unsaved(monkeypatch, QMessageBox.StandardButton.Yes)
    assert window.tabs.save(document) and asked == []
    document.editor.insertPlainText("\u200b")
    assert window.tabs.save(document) and len(asked) == 1 and "U+200B ZERO WIDTH SPACE" in asked[0]
    document.editor.insertPlainText("y")
    assert window.tabs.save(document) and len(asked) == 1  # saved once: the file holds it now


def test_an_ascii_file_holds_no_invisible_character_and_one_typed_in_is_asked_about(window, tmp_path, monkeypatch):
    path = tmp_path / "plain.txt"
    path.write_text("plain ascii\n")
    document = window.tabs.open_path(str(path))
    asked = answer_unsaved(monkeypatch, QMessageBox.StandardButton.Yes)
    document.editor.insertPlainText("\u2067")
    assert window.tabs.save(document) and len(asked) == 1 and "U+2067" in asked[0]


def test_a_python_or_json_file_gets_the_parse_check_its_reviews_use_and_prose_does_not(window, tmp_path):
    from sfumato.app.syntax_check import json_error, python_error

    code, config, notes = tmp_path / "tool.py", tmp_path / "package.json", tmp_path / "notes.md"
    code.write_text("print('hi')\n")
    config.write_text('{"name": "tool"}\n')
    notes.write_text("# Notes\n")
    assert window.tabs.open_path(str(code)).editor.syntax_check is python_error
    assert window.tabs.open_path(str(config)).editor.syntax_check is json_error
    assert window.tabs.open_path(str(notes)).editor.syntax_check is None


def test_a_document_saved_under_a_new_name_takes_that_names_language_wrap_and_review(window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    document = window.tabs.new_document()
    document.editor.setPlainText("# Notes\n\nA long paragraph of prose, as a writer keeps it on one line.\n")
    assert window.language_label.text() == "Plain text" and not document.editor.prose
    target = tmp_path / "notes.md"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args: (str(target), ""))
    assert window.tabs.save_as(document)
    assert window.language_label.text() == document.language == "Markdown"
    assert document.editor.prose  # a review compares words
    assert document.editor.lineWrapMode() == document.editor.LineWrapMode.WidgetWidth  # prose wraps (the default)


def test_a_large_file_opens_under_a_busy_cursor_after_a_status_line_says_so(window, tmp_path, monkeypatch):  # noqa: F811
    """Qt takes seconds to hold a 40 MB file: the window tells so before it stops to read it."""
    from PySide6.QtWidgets import QApplication

    from sfumato.app import document_fill, documenttabs

    seen = []
    real_open = documenttabs.Document.open

    def observed(path, editor, progress):
        cursor = QApplication.overrideCursor()
        seen.append((cursor.shape() if cursor is not None else None, window.statusBar().currentMessage()))
        return real_open(path, editor, progress)

    monkeypatch.setattr(documenttabs.Document, "open", observed)
    monkeypatch.setattr(document_fill, "FILLED_IN_PARTS_CHARS", 1000)
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text("x\n")
    large.write_text("x = 1\n" * 400)  # 2,400 bytes: above the bar set here
    window.tabs.open_path(str(small))
    window.tabs.open_path(str(large))
    assert seen[0] == (None, seen[0][1]) and not seen[0][1].startswith("Opening")
    assert seen[1] == (Qt.CursorShape.WaitCursor, "Opening large.txt (0 MB)…")
    assert QApplication.overrideCursor() is None  # given back once the tab is open


def test_a_long_text_is_laid_in_a_part_at_a_time_while_the_window_goes_on(window, tmp_path, monkeypatch):  # noqa: F811
    """A 40 MB file held the window 7 s in one Qt call: filled in parts, the window's events run
    between them and the status line counts up; the tab then holds the file exactly, as any other."""
    from PySide6.QtCore import QTimer

    from sfumato.app import document_fill

    monkeypatch.setattr(document_fill, "FILLED_IN_PARTS_CHARS", 5000)
    monkeypatch.setattr(document_fill, "PART_CHARS", 1000)
    text = "name = '\U0001f600 café'\n\tif name:\n\t\treturn name  # 🎉\n" * 400  # 17,600 characters
    path = tmp_path / "long.py"
    path.write_text(text, encoding="utf-8")
    messages, ticks = [], []
    said = window.notices.say
    monkeypatch.setattr(window.notices, "say", lambda message, *args: (messages.append(message), said(message, *args)))
    ticker = QTimer()
    ticker.timeout.connect(lambda: ticks.append(1))
    ticker.start(0)
    document = window.tabs.open_path(str(path))
    ticker.stop()
    editor = document.editor
    assert len(ticks) > 5  # the window's events ran while the text went in
    shares = [m.rsplit(" ", 1)[-1] for m in messages if m.startswith("Opening long.py")][1:]
    assert shares[-1] == "100%" and len(shares) > 5
    assert editor.toPlainText() == text
    assert editor.document().defaultFont() == editor.font()
    assert editor.tabStopDistance() == editor.fontMetrics().horizontalAdvance(" ") * editor.indent_width
    assert not editor.document().isUndoAvailable() and not document.is_modified()
    cursor = editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    cursor.insertText("x")
    assert window.tabs.tabText(window.tabs.indexOf(editor)) == "long.py •"  # the title follows the new document
    editor.undo()
    assert editor.toPlainText() == text and window.tabs.tabText(window.tabs.indexOf(editor)) == "long.py"
