"""Reviewing a rewrite as a diff: new text green, what it replaced as a ghost under it, never in the document."""

from __future__ import annotations

import codecs

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from test_app_support import qasync_loop, window  # noqa: F401 - fixtures

from sfumato.app import recovery
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.reviewdiff import Ghost, review_diff
from sfumato.app.session import EditSession
from sfumato.app.textpositions import document_text
from sfumato.model.api import Candidate, Draft, TokenState

CODE = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
RESULT = "def add(a, b, c):\n    return a * b"  # the first two lines, without their last line break
ALT = Qt.KeyboardModifier.AltModifier


def result(*texts: str) -> tuple[Draft, ...]:
    """A finished run with one candidate per text (the alternatives of one region)."""
    return (Draft(4, tuple(Candidate(text, (TokenState(text, 0.9, True),)) for text in texts), True),)


def reviewing(qtbot, text: str = CODE, span: tuple[int, int] = (0, 31), *results: str, prose: bool = False) -> tuple[CodeEditor, EditSession]:
    """An editor showing ``text`` whose ``span`` was rewritten to ``results`` (default RESULT), under review."""
    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.prose = prose
    editor.resize(700, 400)
    editor.show()
    editor.setPlainText(text)
    editor.document().setModified(False)
    session = EditSession(editor, [span])
    session.finish(result(*(results or (RESULT,))))
    assert session.state == "ready"
    return editor, session


def ghost_text(editor: CodeEditor) -> dict[int, str]:
    """Block number: the ghost's text drawn under it."""
    return {number: layout.text() for number, layout in editor.document().documentLayout().ghosts.items()}


def green(editor: CodeEditor) -> list[str]:
    """The texts the review marks as new."""
    return [s.cursor.selectedText() for s in editor.extraSelections() if s.format.background().color().name() == "#3fa34d"]


def top_of_line(editor: CodeEditor, number: int) -> float:
    return editor.blockBoundingGeometry(editor.document().findBlockByNumber(number)).top()


def test_prose_is_compared_per_word():
    diff = review_diff("The cat sat on the mat.", "The dog sat on a mat.", prose=True)
    new = "The dog sat on a mat."
    assert [new[a:b] for a, b in diff.added] == ["dog ", "a "]
    assert diff.ghosts == (Ghost(0, (("The ", False), ("cat ", True), ("sat on ", False), ("the ", True), ("mat.", False)), True),)


def test_code_is_compared_per_line_then_per_token():
    original = "x = 1\ny = compute(x) + 1\nz = 3\nw = 4\n"
    new = "x = 1\ny = compute(x) * 2\nw = 4\n"
    diff = review_diff(original, new, prose=False)
    assert [new[a:b] for a, b in diff.added] == ["* 2"]
    assert diff.ghosts == (Ghost(1, (("y = compute(x) ", False), ("+ 1", True), ("\n", False), ("z = 3", True))),)
    assert review_diff("a\nb\nc", "a\nc", prose=False).ghosts == (Ghost(0, (("b", True),)),), "a removed line goes under the one before"
    assert review_diff("a\nb", "a\nx\nb", prose=False).ghosts == (), "a line only added has no ghost"
    assert review_diff("a\nb", "c\nb", prose=False).ghosts[0].at_start, "a run from the first line begins where the region does"


def test_a_ghost_of_the_first_line_stands_in_the_columns_its_text_stood_in(qtbot):
    """A region that starts inside its line (after the indentation, after ``x = ``, after the words
    before a gap): the ghost starts with the line's text before it, so the original is drawn under
    the new text, not at the left margin."""
    body = "def variance(values):\n    m = mean(values)\n    return m\n"
    start = body.index("m = ")
    editor, _ = reviewing(qtbot, body, (start, len(body) - 1), "return 0\n    return m")
    assert ghost_text(editor) == {1: "    m = mean(values)"}
    call = "total = compute(x)\n"
    editor, _ = reviewing(qtbot, call, (8, 18), "measure(x)")
    assert ghost_text(editor) == {0: "total = compute(x)"}
    prose = "The cat sat on the mat.\n"
    editor, _ = reviewing(qtbot, prose, (8, 23), "lay on a rug.", prose=True)
    assert ghost_text(editor) == {0: "The cat sat on the mat."}


def test_a_result_is_reviewed_as_a_diff_that_never_enters_the_document(qtbot):
    editor, session = reviewing(qtbot)
    undo_steps = editor.document().availableUndoSteps()
    assert session.showing_diff
    assert document_text(editor.document()) == RESULT + CODE[31:], "the document holds the result only"
    assert green(editor) == [", c", "* "]
    assert ghost_text(editor) == {1: "def add(a, b):\u2028    return a + b"}
    assert "+" in ghost_text(editor)[1] and "+" not in RESULT
    assert editor.saved_text() == CODE and not editor.is_modified()
    assert editor.document().availableUndoSteps() == undo_steps


def test_the_ghost_takes_room_so_the_lines_below_it_move_down_and_stay_readable(qtbot):
    editor, session = reviewing(qtbot)
    with_ghost = top_of_line(editor, 2)
    height = editor.document().documentLayout().ghosts[1].boundingRect().height()
    assert height >= 2 * editor.fontMetrics().height() - 1  # two lines of the original
    session.toggle_diff()
    assert top_of_line(editor, 2) == with_ghost - height
    hit = editor.cursorForPosition(editor.cursorRect(QTextCursor(editor.document().findBlockByNumber(3))).center())
    assert hit.blockNumber() == 3, "clicks land on the line drawn there"


def test_the_toggle_key_switches_between_diff_and_clean_and_the_keys_work_as_before(qtbot):
    editor, session = reviewing(qtbot, CODE, (0, 31), RESULT, "def add(a, b):\n    return b + a")
    shown = document_text(editor.document())
    undo_steps = editor.document().availableUndoSteps()
    qtbot.keyClick(editor, Qt.Key.Key_D, ALT)
    assert not session.showing_diff and ghost_text(editor) == {} and green(editor) == []
    assert document_text(editor.document()) == shown and editor.document().availableUndoSteps() == undo_steps
    qtbot.keyClick(editor, Qt.Key.Key_D, ALT)
    assert session.showing_diff and ghost_text(editor)
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)  # the second alternative, as a diff of its own
    assert green(editor) == ["b ", "a"] and ghost_text(editor) == {1: "    return a + b"}
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)  # the original: nothing changed, nothing to show
    assert document_text(editor.document()) == CODE and ghost_text(editor) == {} and green(editor) == []
    qtbot.keyClick(editor, Qt.Key.Key_BracketLeft, ALT)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == "def add(a, b):\n    return b + a" + CODE[31:]
    assert ghost_text(editor) == {} and editor.session is None
    editor.undo()
    assert document_text(editor.document()) == CODE and not editor.document().isUndoAvailable()


def test_esc_during_a_diff_restores_the_text_byte_for_byte_with_no_undo_step(qtbot):
    editor, _ = reviewing(qtbot, "Sfumato rewrites text in place.\n", (0, 31), "Sfumato redraws the text in place.", prose=True)
    assert green(editor) == ["redraws the "]
    assert ghost_text(editor) == {0: "Sfumato rewrites text in place."}
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == "Sfumato rewrites text in place.\n"
    assert ghost_text(editor) == {} and not editor.document().isUndoAvailable() and not editor.document().isRedoAvailable()


def test_a_ghost_of_wrapped_prose_wraps_like_the_text(qtbot):
    paragraph = "word " * 80 + "end."
    editor, _ = reviewing(qtbot, paragraph + "\n", (0, len(paragraph)), paragraph.replace("end.", "fin."), prose=True)
    editor.set_word_wrap(True)
    ghost = editor.document().documentLayout().ghosts[0]
    assert ghost.lineCount() > 1 and ghost.boundingRect().width() <= editor.viewport().width()


def test_a_save_and_a_recovery_copy_during_the_review_hold_no_diff(window, qtbot, tmp_path):
    path = tmp_path / "add.py"
    path.write_bytes(CODE.replace("\n", "\r\n").encode())
    document = window.tabs.open_path(str(path))
    editor = document.editor
    editor.document().setModified(True)  # edited, so both a save and a copy write it
    session = EditSession(editor, [(0, 31)])
    session.finish(result(RESULT))
    assert session.showing_diff and ghost_text(editor)
    store = recovery.Recovery(lambda: [document], tmp_path / "recovery")
    store.snapshot()
    assert [recovery.decode_copy(p.read_bytes()).text for p in store.folder.glob("*.recovery")] == [CODE]
    store.close()
    assert window.tabs.save(document)
    assert path.read_bytes() == CODE.replace("\n", "\r\n").encode()
    assert session.showing_diff and document_text(editor.document()) == RESULT + CODE[31:]


def test_esc_after_a_diff_review_leaves_the_file_byte_identical(window, qtbot, tmp_path):
    path = tmp_path / "add.py"
    original = codecs.BOM_UTF8 + CODE.replace("\n", "\r\n").encode()
    path.write_bytes(original)
    document = window.tabs.open_path(str(path))
    editor = document.editor
    session = EditSession(editor, [(0, 31)])
    session.finish(result(RESULT, "def add(a, b):\n    return b - a"))
    for key in (Qt.Key.Key_D, Qt.Key.Key_D, Qt.Key.Key_BracketRight):  # clean, the diff again, the next one
        qtbot.keyClick(editor, key, ALT)
    assert session.showing_diff and ghost_text(editor)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert not editor.document().isModified() and "•" not in window.tabs.tabText(window.tabs.currentIndex())
    editor.document().setModified(True)  # so that the save writes the file rather than skip an unedited one
    assert window.tabs.save(document)
    assert path.read_bytes() == original


def test_the_choice_of_diff_or_clean_is_remembered_for_the_next_reviews(window, qtbot):
    from test_app_support import with_fake_model

    with_fake_model(window, qtbot)
    editor = window.tabs.new_document().editor
    editor.setPlainText(CODE)
    cursor = editor.textCursor()
    cursor.setPosition(19)
    cursor.setPosition(31, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)
    window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 0.7))
    qtbot.waitUntil(lambda: editor.session is not None and editor.session.state == "ready", timeout=10000)
    assert editor.session.showing_diff and window.menu_actions.review_diff.isChecked()
    qtbot.keyClick(editor, Qt.Key.Key_D, ALT)
    assert not window.settings.review_diff and not window.menu_actions.review_diff.isChecked()
    assert not window.ai.starter.options.review_diff
    window.menu_actions.review_diff.trigger()
    assert window.settings.review_diff and editor.session.showing_diff
    editor.session.reject()
    editor.document().setModified(False)


def test_a_document_of_prose_is_reviewed_per_word(window, tmp_path):
    (tmp_path / "notes.md").write_text("text\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    assert window.tabs.open_path(str(tmp_path / "notes.md")).editor.prose
    assert not window.tabs.open_path(str(tmp_path / "code.py")).editor.prose
