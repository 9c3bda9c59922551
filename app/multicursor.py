"""More cursors than one: Ctrl+D adds the next occurrence of the selection, Alt+click adds a cursor.

The editor's own cursor stays the main one; ``ExtraCursors`` keeps the others as QTextCursors on
the same document (Qt moves them with every edit). Typed text, Backspace, Delete and the arrow,
Home and End keys act at every cursor; all edits of one key are one undo step. Esc or a plain
click goes back to one cursor.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeyEvent, QKeySequence, QPainter, QPalette, QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QTextEdit

_MODIFIERS = {Qt.Key.Key_Shift, Qt.Key.Key_Control, Qt.Key.Key_Alt, Qt.Key.Key_Meta, Qt.Key.Key_AltGr}
_MOVES = {
    Qt.Key.Key_Left: (QTextCursor.MoveOperation.Left, QTextCursor.MoveOperation.PreviousWord),
    Qt.Key.Key_Right: (QTextCursor.MoveOperation.Right, QTextCursor.MoveOperation.NextWord),
    Qt.Key.Key_Up: (QTextCursor.MoveOperation.Up, QTextCursor.MoveOperation.Up),
    Qt.Key.Key_Down: (QTextCursor.MoveOperation.Down, QTextCursor.MoveOperation.Down),
    Qt.Key.Key_Home: (QTextCursor.MoveOperation.StartOfBlock, QTextCursor.MoveOperation.StartOfBlock),
    Qt.Key.Key_End: (QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveOperation.EndOfBlock),
}


class ExtraCursors:
    """The cursors beside ``editor``'s own, and what keys do with all of them."""

    def __init__(self, editor: QPlainTextEdit):
        self._editor = editor
        self.cursors: list[QTextCursor] = []

    def __bool__(self) -> bool:
        return bool(self.cursors)

    def clear(self) -> None:
        if self.cursors:
            self.cursors = []
            self._show()

    def select(self, spans: list[tuple[int, int]]) -> None:
        """The main cursor selects the first span, extra cursors the others."""
        cursors = []
        for start, end in spans:
            cursor = QTextCursor(self._editor.document())
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursors.append(cursor)
        self._editor.setTextCursor(cursors[0])
        self.cursors = cursors[1:]
        self._show()

    def add_at(self, position: int) -> None:
        """Alt+click: the main cursor stays, and ``position`` gets one too."""
        cursor = QTextCursor(self._editor.document())
        cursor.setPosition(position)
        if all(c.position() != position for c in self._all()):
            self.cursors.append(cursor)
        self._show()

    def add_next_occurrence(self) -> None:
        """Ctrl+D: select the word at the cursor; with a selection, add the next place it occurs."""
        main = self._editor.textCursor()
        if not main.hasSelection():
            main.select(QTextCursor.SelectionType.WordUnderCursor)
            self._editor.setTextCursor(main)
            return
        needle = main.selectedText()
        last = max(self._all(), key=lambda c: c.selectionEnd())
        flags = QTextDocument.FindFlag.FindCaseSensitively
        found = self._editor.document().find(needle, last.selectionEnd(), flags)
        if found.isNull():
            found = self._editor.document().find(needle, 0, flags)  # round to the top
        if found.isNull() or any(c.selectionStart() == found.selectionStart() for c in self._all()):
            return
        self.cursors.append(found)
        self._show()

    def handle_key(self, event: QKeyEvent) -> bool:
        """Apply the key at every cursor; False when it is not one that multiple cursors take."""
        key, modifiers = event.key(), event.modifiers()
        control = bool(modifiers & Qt.KeyboardModifier.ControlModifier)
        if key in _MODIFIERS:  # Ctrl on its way to Ctrl+D: the cursors stay
            return True
        if key == Qt.Key.Key_Escape:
            self.clear()
            return True
        if event.matches(QKeySequence.StandardKey.Copy):
            QApplication.clipboard().setText("\n".join(c.selectedText().replace("\u2029", "\n") for c in self._in_order()))
            return True
        if event.matches(QKeySequence.StandardKey.Paste):
            self._paste(QApplication.clipboard().text())
            return True
        if key in _MOVES and not modifiers & Qt.KeyboardModifier.AltModifier:
            move = _MOVES[key][1 if control else 0]
            mode = QTextCursor.MoveMode.KeepAnchor if modifiers & Qt.KeyboardModifier.ShiftModifier else QTextCursor.MoveMode.MoveAnchor
            self._each(lambda cursor: cursor.movePosition(move, mode))
            return True
        if key in (Qt.Key.Key_Backspace, Qt.Key.Key_Delete) and not control:
            backward = key == Qt.Key.Key_Backspace
            self._edit(lambda cursor: cursor.removeSelectedText() if cursor.hasSelection()
                       else (cursor.deletePreviousChar() if backward else cursor.deleteChar()))
            return True
        text = event.text()
        if text and text.isprintable() and not control and not modifiers & Qt.KeyboardModifier.AltModifier:
            self._edit(lambda cursor: cursor.insertText(text))
            return True
        return False

    def _paste(self, text: str) -> None:
        """One line of the clipboard at each cursor, top to bottom, when the counts match (what
        a copy from as many cursors gives); otherwise all of it at every cursor."""
        lines = text.split("\n")
        cursors = self._in_order()
        # by where each cursor starts: ``_edit`` goes bottom up, so a cursor has not moved yet when its turn comes
        pieces = dict(zip((c.selectionStart() for c in cursors), lines)) if len(lines) == len(cursors) else {}
        self._edit(lambda cursor: cursor.insertText(pieces.get(cursor.selectionStart(), text)))

    def _in_order(self) -> list[QTextCursor]:
        return sorted(self._all(), key=lambda c: c.selectionStart())

    def paint_carets(self, painter: QPainter) -> None:
        """Thin carets where the extra cursors are (the main one Qt draws itself)."""
        color = self._editor.palette().color(QPalette.ColorRole.Text)
        for cursor in self.cursors:
            rect = self._editor.cursorRect(cursor)
            painter.fillRect(rect.left(), rect.top(), 2, rect.height(), color)

    # --- the cursors together -----------------------------------------------------------------

    def _all(self) -> list[QTextCursor]:
        return [self._editor.textCursor(), *self.cursors]

    def _each(self, change) -> None:
        main = self._editor.textCursor()
        for cursor in [main, *self.cursors]:
            change(cursor)
        self._editor.setTextCursor(main)
        self._merge()
        self._show()

    def _edit(self, change) -> None:
        """One undo step for the edit at every cursor, bottom up so positions stay valid."""
        main = self._editor.textCursor()
        edit = QTextCursor(self._editor.document())
        edit.beginEditBlock()
        for cursor in sorted([main, *self.cursors], key=lambda c: c.position(), reverse=True):
            change(cursor)
        edit.endEditBlock()
        self._editor.setTextCursor(main)
        self._merge()
        self._show()

    def _merge(self) -> None:
        """Cursors that came to the same place become one."""
        seen = {(self._editor.textCursor().anchor(), self._editor.textCursor().position())}
        kept = []
        for cursor in self.cursors:
            place = (cursor.anchor(), cursor.position())
            if place not in seen:
                seen.add(place)
                kept.append(cursor)
        self.cursors = kept

    def _show(self) -> None:
        color = QColor(self._editor.palette().color(QPalette.ColorRole.Highlight))
        color.setAlpha(110)
        selections = []
        for cursor in self.cursors:
            if cursor.hasSelection():
                selection = QTextEdit.ExtraSelection()
                selection.format.setBackground(color)
                selection.cursor = QTextCursor(cursor)
                selections.append(selection)
        self._editor.set_layer("cursors", selections)
        self._editor.viewport().update()
