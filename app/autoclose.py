"""Brackets and quotes typed get their closer; the closers the editor typed itself are typed over,
and deleted with their opener. A bracket the user typed or pasted is never skipped or removed."""

from __future__ import annotations

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit
from sfumato.app.brackets import AUTO_CLOSED, ROOM_FOR_A_PAIR
from sfumato.app.textpositions import index_of, utf16_length

MAX_AUTO_CLOSERS = 32  # auto-typed closers remembered for typing over and pair deletion


def around_cursor(editor: QPlainTextEdit) -> tuple[str, str]:
    """The characters just before and just after the cursor on its line ("" at either end)."""
    cursor = editor.textCursor()
    line = cursor.block().text()
    index = index_of(line, cursor.positionInBlock())
    return line[index - 1 : index] if index else "", line[index : index + 1]


class AutoCloser:
    """The closers ``editor`` typed, each held by a cursor that selects it."""

    def __init__(self, editor: QPlainTextEdit):
        self.editor = editor
        self._closers: list[QTextCursor] = []

    def typed(self, typed: str) -> bool:
        """Close a bracket or quote, type over its closer, or wrap the selection in it; True when done."""
        editor, cursor = self.editor, self.editor.textCursor()
        before, after = around_cursor(editor)
        if typed in AUTO_CLOSED and cursor.hasSelection():
            inner = cursor.selectedText().replace("\u2029", "\n")
            start = cursor.selectionStart()
            cursor.insertText(typed + inner + AUTO_CLOSED[typed])
            cursor.setPosition(start + 1)
            cursor.setPosition(start + 1 + utf16_length(inner), QTextCursor.MoveMode.KeepAnchor)
            editor.setTextCursor(cursor)
            return True
        if typed in AUTO_CLOSED.values() and after == typed and not cursor.hasSelection() and self._closer_at(cursor.position()):
            cursor.movePosition(QTextCursor.MoveOperation.Right)
            editor.setTextCursor(cursor)
            return True
        if typed not in AUTO_CLOSED or (after and not after.isspace() and after not in ROOM_FOR_A_PAIR):
            return False
        if typed in "\"'`" and (before.isalnum() or before == "_"):  # don't, or a closing quote
            return False
        cursor.insertText(typed + AUTO_CLOSED[typed])
        closer = QTextCursor(cursor)
        closer.movePosition(QTextCursor.MoveOperation.Left, QTextCursor.MoveMode.KeepAnchor)
        self._closers = [*self._closers[-(MAX_AUTO_CLOSERS - 1) :], closer]
        cursor.movePosition(QTextCursor.MoveOperation.Left)
        editor.setTextCursor(cursor)
        return True

    def delete_empty_pair(self) -> bool:
        """Backspace between a bracket or quote and the closer the editor typed for it deletes both."""
        cursor = self.editor.textCursor()
        before, after = around_cursor(self.editor)
        if cursor.hasSelection() or not before or AUTO_CLOSED.get(before) != after or not self._closer_at(cursor.position()):
            return False
        cursor.movePosition(QTextCursor.MoveOperation.Left)
        cursor.movePosition(QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.KeepAnchor, 2)
        cursor.removeSelectedText()
        return True

    def _closer_at(self, position: int) -> bool:
        """Whether a closer the editor typed itself still stands at ``position`` (an edit that
        replaced it leaves its cursor selecting nothing, or more)."""
        self._closers = [c for c in self._closers if c.selectionEnd() - c.selectionStart() == 1]
        return any(c.selectionStart() == position for c in self._closers)
