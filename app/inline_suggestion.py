"""A suggestion drawn after the cursor while typing: faint text that is never part of the document.

``app/suggester.py`` decides when the model is asked and what it shows. The suggestion stands only
while the cursor stays where it was shown and the text is as it was: typing its own next characters
carries the rest along; any other edit, a move or a click takes it away. Its keys are the review's:
accept (Tab) inserts it as one undo step, accept word (Ctrl+Right) its next word, reject (Esc) drops it.
"""

from __future__ import annotations

from PySide6.QtGui import QKeyEvent, QKeySequence, QPainter, QPalette, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from sfumato.app.commandkeys import SessionKeys, key_matches
from sfumato.app.partial_accept import next_word_end
from sfumato.app.textpositions import utf16_length


class InlineSuggestion:
    """``text`` shown at ``position`` of ``editor``'s document (``shown``), with the keys that take it."""

    def __init__(self, editor: QPlainTextEdit):
        self.editor = editor
        self.text = ""
        self.position = -1
        self.keys: SessionKeys | None = None
        self._revision = -1
        self._typed = ""  # a key's text that is the suggestion's next characters: carried through it
        self.typed = False  # a key changed the text since the model was last asked (``Suggester.ask``)

    @property
    def shown(self) -> bool:
        return bool(self.text)

    def show(self, position: int, text: str, keys: SessionKeys) -> None:
        self.position, self.text, self.keys = position, text, keys
        self._revision = self.editor.document().revision()
        self.editor.viewport().update()

    def clear(self) -> None:
        if self.text:
            self.text, self._typed = "", ""
            self.editor.viewport().update()

    def handle_key(self, event: QKeyEvent) -> bool:
        """The suggestion's keys; True when the key was used. Another key lets the editor act and,
        unless it types the suggestion's next characters, takes the suggestion away."""
        if not self.shown or not self._in_place():
            self.clear()
            return False
        if key_matches(event, self.keys.accept):
            self._insert(self.text)
        elif key_matches(event, self.keys.accept_word):
            self._insert(self.text[: next_word_end(self.text)])
        elif key_matches(event, self.keys.reject):
            self.clear()
        else:
            typed = event.text()
            self._typed = typed if typed and self.text.startswith(typed) and typed != self.text else ""
            return False
        return True

    def cursor_moved(self) -> None:
        """After any cursor move or edit: the suggestion stays only where typing carried it."""
        if not self.shown:
            return
        if self._typed:
            typed, self._typed = self._typed, ""
            cursor = self.editor.textCursor()
            after = cursor.block().text()[cursor.positionInBlock() :]
            if cursor.position() == self.position + utf16_length(typed) and not after.strip() and self._typed_in(typed):
                self.show(cursor.position(), self.text[len(typed) :], self.keys)
                return
        if not self._in_place():
            self.clear()

    def paint(self, painter: QPainter) -> None:
        """Draw the text after the cursor, in the colour of a field's placeholder."""
        if not self.shown or not self._in_place():
            return
        cursor = QTextCursor(self.editor.document())
        cursor.setPosition(self.position)
        rect = self.editor.cursorRect(cursor)
        painter.setFont(self.editor.font())
        painter.setPen(self.editor.palette().color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(rect.left() + 1, rect.top() + self.editor.fontMetrics().ascent(), self.text.expandtabs(4))

    def hint(self) -> str:
        """The keys, as the status bar tells them."""
        name = {field: getattr(self.keys, field).toString(QKeySequence.SequenceFormat.NativeText)
                for field in ("accept", "accept_word", "reject")}
        return f"Suggestion: {name['accept']} takes it, {name['accept_word']} a word, {name['reject']} drops it"

    def _in_place(self) -> bool:
        cursor = self.editor.textCursor()
        return (self.editor.document().revision() == self._revision and cursor.position() == self.position
                and not cursor.hasSelection())

    def _typed_in(self, typed: str) -> bool:
        cursor = QTextCursor(self.editor.document())
        cursor.setPosition(self.position)
        cursor.setPosition(self.position + utf16_length(typed), QTextCursor.MoveMode.KeepAnchor)
        return cursor.selectedText() == typed

    def _insert(self, text: str) -> None:
        """Write ``text`` at the cursor as one undo step; the rest of the suggestion stays shown."""
        rest = self.text[len(text) :]
        self.clear()
        cursor = self.editor.textCursor()
        cursor.beginEditBlock()  # its own undo step, not merged with the typing before it
        cursor.insertText(text)
        cursor.endEditBlock()
        self.editor.ensureCursorVisible()
        if rest.strip():
            self.show(self.editor.textCursor().position(), rest, self.keys)
