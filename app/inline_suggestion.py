"""A suggestion drawn at the cursor while typing: faint text that is never part of the document.

``app/suggester.py`` decides when the model is asked and what it shows. The text is laid into the
line as an input method's uncommitted text is (the line layout's preedit area: what follows the
cursor, a closing bracket say, moves right to make room), in the colour of a field's placeholder.
It stands only while the cursor stays where it was shown and the text is as it was: typing its own
next characters carries the rest along; any other edit, a move or a click takes it away. Its keys
are the review's: accept (Tab) inserts it as one undo step, accept word (Ctrl+Right) its next word,
reject (Esc) drops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import (
    QKeyEvent,
    QPalette,
    QTextBlock,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
    QTextLayout,
)

from sfumato.app.commandkeys import SessionKeys, key_matches, key_names
from sfumato.app.partial_accept import next_word_end
from sfumato.app.textpositions import index_of, utf16_length

if TYPE_CHECKING:
    from sfumato.app.codeeditor import CodeEditor

CLOSERS = ")]}\"'`"  # what may follow the cursor on its line: the closers auto-close typed, say
_MARK = QTextFormat.Property.UserProperty + 1  # on the format that colours the suggestion


def after_cursor(cursor: QTextCursor) -> str:
    """The text after ``cursor`` on its line."""
    line = cursor.block().text()
    return line[index_of(line, cursor.positionInBlock()) :]


def only_closers(text: str) -> bool:
    """``text`` (the line after the cursor) holds nothing but closing brackets, quotes and spaces."""
    return all(ch in CLOSERS or ch.isspace() for ch in text)


class InlineSuggestion:
    """``text`` shown at ``position`` of ``editor``'s document (``shown``), with the keys that take it."""

    def __init__(self, editor: CodeEditor):
        self.editor = editor
        self.text = ""
        self.position = -1
        self.keys: SessionKeys | None = None
        self._revision = -1
        self._block = QTextBlock()  # the line laid out with the text: followed as edits move it
        self._carried = ""  # a key's text that is the suggestion's next characters: carried through it
        self.typed = False  # a key changed the text since the model was last asked (``Suggester.ask``)

    @property
    def shown(self) -> bool:
        return bool(self.text)

    def show(self, position: int, text: str, keys: SessionKeys) -> None:
        """Lay ``text`` in at ``position``, less the closers that already follow it on the line."""
        self.clear()
        cursor = QTextCursor(self.editor.document())
        cursor.setPosition(position)
        after = after_cursor(cursor).strip()
        if after and text.rstrip().endswith(after):
            text = text.rstrip()[: -len(after)]
        if not text.strip():
            return
        self.position, self.text, self.keys = position, text, keys
        self._revision, self._block = self.editor.document().revision(), cursor.block()
        self._lay(cursor.positionInBlock(), text)
        self.editor.set_layer("brackets", [])  # a bracket's mark would run over the text laid in after it

    def clear(self) -> None:
        if self.text:
            self.text, self._carried = "", ""
            if self._block.isValid():
                self._lay(-1, "")

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
            self._carried = typed if typed and self.text.startswith(typed) and typed != self.text else ""
            return False
        return True

    def cursor_moved(self) -> None:
        """After any cursor move or edit: the suggestion stays only where it was, or where the key
        being typed carries it (``key_done`` decides once the key's edit is whole)."""
        if self.shown and not self._carried and not self._in_place():
            self.clear()

    def key_done(self) -> None:
        """A key's edit is done: if it typed the suggestion's next characters, the rest stays shown
        after them (less a closer auto-close typed, which is there already); else it goes."""
        typed, self._carried = self._carried, ""
        if not typed or not self.shown:
            return
        cursor = self.editor.textCursor()
        if cursor.position() == self.position + utf16_length(typed) and only_closers(after_cursor(cursor)) and self._carried_in(typed):
            self.show(cursor.position(), self.text[len(typed) :], self.keys)
        elif not self._in_place():
            self.clear()

    def _lay(self, column: int, text: str) -> None:
        """Put ``text`` into the line's layout at ``column`` (-1 and "": take it out), coloured."""
        block = self._block
        layout = block.layout()
        layout.setPreeditArea(column, text)
        formats = [f for f in layout.formats() if not f.format.hasProperty(_MARK)]
        if text:
            faint = QTextLayout.FormatRange()
            faint.start, faint.length = column, utf16_length(text)
            faint.format = QTextCharFormat()
            faint.format.setForeground(self.editor.palette().color(QPalette.ColorRole.PlaceholderText))
            faint.format.setProperty(_MARK, True)
            formats.append(faint)
        layout.setFormats(formats)
        self.editor.document().markContentsDirty(block.position(), block.length())  # laid out again; the text is as it was

    def hint(self) -> str:
        """The keys, as the status bar tells them."""
        name = key_names(self.keys)
        return f"Suggestion: {name['accept']} takes it, {name['accept_word']} a word, {name['reject']} drops it"

    def _in_place(self) -> bool:
        cursor = self.editor.textCursor()
        return (self.editor.document().revision() == self._revision and cursor.position() == self.position
                and not cursor.hasSelection())

    def _carried_in(self, typed: str) -> bool:
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
