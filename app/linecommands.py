"""Commands on whole lines of a text widget: toggle comments, duplicate, move up or down.

Each edits the lines the selection touches in one edit block (one undo step) and keeps the
selection on the same text. The editor runs them inside an infill session's ``user_edit``.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from PySide6.QtGui import QTextBlock, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from sfumato.app.comments import Marker, toggle_line_comments
from sfumato.app.textpositions import position_of


def selected_blocks(editor: QPlainTextEdit) -> tuple[QTextBlock, QTextBlock]:
    """The first and last lines the selection touches (a selection ending at a line's start spares it)."""
    cursor = editor.textCursor()
    first = editor.document().findBlock(cursor.selectionStart())
    last = editor.document().findBlock(max(cursor.selectionStart(), cursor.selectionEnd() - 1))
    return first, last


def select(editor: QPlainTextEdit, anchor: int, position: int) -> None:
    """Select from ``anchor`` to ``position`` (Qt positions)."""
    cursor = editor.textCursor()
    cursor.setPosition(anchor)
    cursor.setPosition(position, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)


def toggle_comment(editor: QPlainTextEdit, marker: Marker) -> None:
    """Comment out the selected lines with ``marker``, or uncomment them."""
    first, last = selected_blocks(editor)
    blocks = [first]
    while blocks[-1] != last:
        blocks.append(blocks[-1].next())
    had_selection = editor.textCursor().hasSelection()
    new_lines = toggle_line_comments([block.text() for block in blocks], marker)
    edit = QTextCursor(editor.document())
    edit.beginEditBlock()
    for block, new in zip(blocks, new_lines):
        old = block.text()  # edit only the characters that change, so cursors stay on their text
        for tag, i1, i2, j1, j2 in reversed(SequenceMatcher(None, old, new, autojunk=False).get_opcodes()):
            if tag != "equal":
                edit.setPosition(block.position() + position_of(old, i1))
                edit.setPosition(block.position() + position_of(old, i2), QTextCursor.MoveMode.KeepAnchor)
                edit.insertText(new[j1:j2])
    edit.endEditBlock()
    if had_selection:
        select(editor, first.position(), last.position() + last.length() - 1)


def duplicate_lines(editor: QPlainTextEdit) -> None:
    """Copy the selected lines below themselves and select the copy."""
    first, last = selected_blocks(editor)
    cursor = editor.textCursor()
    anchor, position = cursor.anchor() - first.position(), cursor.position() - first.position()
    start, end = first.position(), last.position() + last.length() - 1
    edit = QTextCursor(editor.document())
    edit.setPosition(start)
    edit.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
    lines = edit.selectedText()
    edit.clearSelection()
    edit.insertText("\n" + lines.replace("\u2029", "\n"))
    select(editor, end + 1 + anchor, end + 1 + position)


def move_lines(editor: QPlainTextEdit, down: bool) -> None:
    """Swap the selected lines with the line below (or above); the selection moves with them."""
    first, last = selected_blocks(editor)
    neighbour = last.next() if down else first.previous()
    if not neighbour.isValid():
        return
    cursor = editor.textCursor()
    anchor, position = cursor.anchor() - first.position(), cursor.position() - first.position()
    top, bottom = (first, neighbour) if down else (neighbour, last)
    start = top.position() + (neighbour.length() if down else 0)  # where the moved lines begin
    edit = QTextCursor(editor.document())
    edit.setPosition(top.position())
    edit.setPosition(bottom.position() + bottom.length() - 1, QTextCursor.MoveMode.KeepAnchor)
    lines = edit.selectedText().split("\u2029")
    split = len(lines) - 1 if down else 1  # the neighbour goes from one end to the other
    edit.insertText("\n".join(lines[split:] + lines[:split]))
    select(editor, start + anchor, start + position)
