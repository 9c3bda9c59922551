"""The editor widget on its own: indentation, tabs, zoom, go to line."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QTextCursor

from test_app_support import select

from sfumato.app.codeeditor import CodeEditor


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


def test_toggle_comment_comments_at_the_block_indent_and_back_in_one_undo_step_each(editor):
    text = "def f():\n    if x:\n\n        y()\n    return 1\n"
    editor.setPlainText(text)
    editor.comment_marker = ("#", "")
    select(editor, 9, 40)  # from "    if x:" into "    return 1"
    assert editor.toggle_comment()
    assert editor.toPlainText() == "def f():\n    # if x:\n\n    #     y()\n    # return 1\n"
    assert editor.textCursor().selectedText() == "    # if x:\u2029\u2029    #     y()\u2029    # return 1"
    editor.toggle_comment()
    assert editor.toPlainText() == text
    editor.undo()
    assert editor.toPlainText() == "def f():\n    # if x:\n\n    #     y()\n    # return 1\n"
    editor.undo()
    assert editor.toPlainText() == text


def test_toggle_comment_comments_a_partly_commented_block_and_keeps_the_cursor_on_its_text(editor):
    editor.setPlainText("// a\nb\n")
    editor.comment_marker = ("//", "")
    select(editor, 3, 6)
    editor.toggle_comment()
    assert editor.toPlainText() == "// // a\n// b\n"
    editor.setPlainText("x = 1")
    cursor = editor.textCursor()
    cursor.setPosition(2)
    editor.setTextCursor(cursor)
    editor.comment_marker = ("#", "")
    editor.toggle_comment()
    assert editor.toPlainText() == "# x = 1" and editor.textCursor().position() == 4


def test_toggle_comment_without_a_marker_changes_nothing(editor):
    editor.setPlainText("plain words")
    assert not editor.toggle_comment()
    assert editor.toPlainText() == "plain words" and not editor.document().isUndoAvailable()


def test_duplicate_lines_copies_them_below_and_selects_the_copy(editor):
    editor.setPlainText("one\ntwo\nthree")
    select(editor, 1, 5)
    editor.duplicate_lines()
    assert editor.toPlainText() == "one\ntwo\none\ntwo\nthree"
    assert editor.textCursor().selectedText() == "ne\u2029t"
    select(editor, 20, 20)  # the last line, which has no line break
    editor.duplicate_lines()
    assert editor.toPlainText() == "one\ntwo\none\ntwo\nthree\nthree"
    editor.undo()
    editor.undo()
    assert editor.toPlainText() == "one\ntwo\nthree"


def test_move_lines_swaps_with_the_neighbour_and_stops_at_the_ends(editor):
    editor.setPlainText("a\nbb\ncc\nd")
    select(editor, 3, 6)  # "b" of "bb" to "c" of "cc"
    editor.move_lines(down=True)
    assert editor.toPlainText() == "a\nd\nbb\ncc"
    assert editor.textCursor().selectedText() == "b\u2029c"
    editor.move_lines(down=True)  # already the last lines
    assert editor.toPlainText() == "a\nd\nbb\ncc"
    editor.move_lines(down=False)
    editor.move_lines(down=False)
    editor.move_lines(down=False)
    assert editor.toPlainText() == "bb\ncc\na\nd"
    assert editor.textCursor().selectedText() == "b\u2029c"
    editor.undo()
    assert editor.toPlainText() == "a\nbb\ncc\nd"


def test_matching_bracket_pairs_the_bracket_at_or_before_the_cursor():
    from sfumato.app.brackets import matching_bracket

    text = "f(a[1], {b: (c)})"
    assert matching_bracket(text, 1) == (1, 16)  # "(" after the cursor
    assert matching_bracket(text, 17) == (16, 1)  # ")" before it
    assert matching_bracket(text, 8) == (8, 15)
    assert matching_bracket(text, 0) is None  # "f" and nothing before
    assert matching_bracket("(()", 0) is None  # no partner


def test_the_bracket_next_to_the_cursor_and_its_partner_are_marked(editor):
    editor.setPlainText("x = [1, (2)]\n🙂(y)")
    cursor = editor.textCursor()
    cursor.setPosition(4)
    editor.setTextCursor(cursor)
    marked = [(s.cursor.selectionStart(), s.cursor.selectedText()) for s in editor.extraSelections() if s.cursor.hasSelection()]
    assert marked == [(4, "["), (11, "]")]
    cursor.setPosition(15)  # after the emoji (two UTF-16 units): before "("
    editor.setTextCursor(cursor)
    marked = [(s.cursor.selectionStart(), s.cursor.selectedText()) for s in editor.extraSelections() if s.cursor.hasSelection()]
    assert marked == [(15, "("), (17, ")")]


def test_brackets_and_quotes_close_as_typed_and_are_typed_over(qtbot, editor):
    qtbot.keyClicks(editor, "print(")
    assert editor.toPlainText() == "print()"
    qtbot.keyClicks(editor, "'hi")
    assert editor.toPlainText() == "print('hi')"
    qtbot.keyClicks(editor, "')")  # typed over the closers, not doubled
    assert editor.toPlainText() == "print('hi')" and editor.textCursor().atEnd()


def test_no_closer_before_a_word_or_for_an_apostrophe(qtbot, editor):
    editor.setPlainText("word")
    qtbot.keyClicks(editor, "(")  # the cursor is at the start, before "word"
    assert editor.toPlainText() == "(word"
    editor.setPlainText("")
    qtbot.keyClicks(editor, "don't")
    assert editor.toPlainText() == "don't"


def test_a_selection_typed_over_with_a_bracket_is_wrapped(qtbot, editor):
    editor.setPlainText("a + b")
    select(editor, 0, 5)
    qtbot.keyClicks(editor, "(")
    assert editor.toPlainText() == "(a + b)" and editor.textCursor().selectedText() == "a + b"
    editor.undo()
    assert editor.toPlainText() == "a + b"


def test_backspace_in_an_empty_pair_deletes_both_and_enter_in_braces_opens_a_block(qtbot, editor):
    qtbot.keyClicks(editor, "x = [")
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert editor.toPlainText() == "x = "
    editor.setPlainText("")
    qtbot.keyClicks(editor, "if (a) {")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "b;")
    assert editor.toPlainText() == "if (a) {\n    b;\n}"


def test_brackets_the_user_typed_or_pasted_are_never_typed_over_or_deleted_as_a_pair(qtbot, editor):
    editor.setPlainText("[]")  # as if pasted: the editor closed nothing here
    cursor = editor.textCursor()
    cursor.setPosition(1)
    editor.setTextCursor(cursor)
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert editor.toPlainText() == "]"
    qtbot.keyClicks(editor, "]")
    assert editor.toPlainText() == "]]"
    editor.setPlainText("")
    qtbot.keyClicks(editor, "f(x")  # the closer the editor typed is still typed over
    qtbot.keyClicks(editor, ")")
    assert editor.toPlainText() == "f(x)"


def test_auto_close_off_types_just_what_is_typed(qtbot, editor):
    editor.auto_close = False
    qtbot.keyClicks(editor, "f(\"")
    assert editor.toPlainText() == "f(\""


def test_home_goes_to_the_first_non_blank_then_to_the_line_start(qtbot, editor):
    editor.setPlainText("x\n    return 1")
    cursor = editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    editor.setTextCursor(cursor)
    qtbot.keyClick(editor, Qt.Key.Key_Home)
    assert editor.textCursor().positionInBlock() == 4
    qtbot.keyClick(editor, Qt.Key.Key_Home)
    assert editor.textCursor().positionInBlock() == 0
    qtbot.keyClick(editor, Qt.Key.Key_End)
    qtbot.keyClick(editor, Qt.Key.Key_Home, Qt.KeyboardModifier.ShiftModifier)
    assert editor.textCursor().selectedText() == "return 1"


def _marked_pixels(editor, text: str) -> int:
    from sfumato.app.invisibles import MARK

    editor.setPlainText(text)
    image = editor.viewport().grab().toImage()
    return sum(image.pixel(x, y) == MARK.rgb() for x in range(image.width()) for y in range(image.height()))


def test_bidi_and_zero_width_characters_are_drawn_where_they_are_and_named(qtbot, editor):
    """The font draws nothing for them: the editor does (a bar at each, its name as a tooltip)."""
    from sfumato.app.invisibles import invisible_at, marks

    editor.resize(400, 120)
    editor.show()
    qtbot.waitExposed(editor)
    assert _marked_pixels(editor, "abcdef\nplain 😀 text") == 0
    assert _marked_pixels(editor, "ab\u202ecd\u200bef\nplain 😀 text\u2066") > 0
    assert [name for _, name in marks(editor)] == ["U+202E RIGHT-TO-LEFT OVERRIDE", "U+200B ZERO WIDTH SPACE", "U+2066 LEFT-TO-RIGHT ISOLATE"]
    first = marks(editor)[0][0]
    assert invisible_at(editor, first.center()) == "U+202E RIGHT-TO-LEFT OVERRIDE"
    assert invisible_at(editor, first.center() + QPointF(40, 0)) is None


def test_only_invisible_characters_in_view_are_marked_the_last_line_in_view_too(qtbot, editor):
    from sfumato.app.invisibles import marks

    editor.resize(400, 120)
    editor.show()
    qtbot.waitExposed(editor)
    editor.setPlainText("\n".join(f"line {i}" + ("\u200b" if i in (0, 199) else "") for i in range(200)))
    assert [(rect.top() < 20, name) for rect, name in marks(editor)] == [(True, "U+200B ZERO WIDTH SPACE")]
    bottom = editor.cursorForPosition(QPoint(0, editor.viewport().height() - 2)).block()  # shown only in part
    cursor = QTextCursor(bottom)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    cursor.insertText("\u202e")
    assert [name for _, name in marks(editor)] == ["U+200B ZERO WIDTH SPACE", "U+202E RIGHT-TO-LEFT OVERRIDE"]
    editor.verticalScrollBar().setValue(editor.verticalScrollBar().maximum())
    assert [name for _, name in marks(editor)] == ["U+200B ZERO WIDTH SPACE"]  # line 199's; line 0 and the other out of view
