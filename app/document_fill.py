"""A long text laid into a new text document a part at a time, the window repainting between parts.

Qt's ``QTextDocument.setPlainText`` builds a block per line in one call: a 40 MB file (1.67M lines)
held the window 7 s (session 51), long enough for a desktop to call it not responding, and PySide
holds the GIL through the call, so another thread cannot take it over. A new document without a
layout takes the text in parts of ``PART_CHARS`` (whole lines) instead, at about the same total
cost; between parts the window repaints and answers the window manager, while keys and clicks wait
until the tab is open. Shown by the editor, the filled document is laid out once on the window's
thread (Qt counts every block's lines: about a fifth of the whole).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from PySide6.QtCore import QEventLoop
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication

FILLED_IN_PARTS_CHARS = 2 << 20  # a text this long takes over a third of a second in one call
PART_CHARS = 128 << 10  # about 20 ms a part


def filled_document(text: str, like: QTextDocument, progress: Callable[[float], None] | None = None) -> QTextDocument:
    """A new document (no layout, no undo history) holding ``text`` with ``like``'s font, text
    option and margin, filled a part at a time; ``progress`` hears the share done after each part."""
    document = QTextDocument()
    document.setDefaultFont(like.defaultFont())
    document.setDefaultTextOption(like.defaultTextOption())
    document.setDocumentMargin(like.documentMargin())
    document.setUndoRedoEnabled(False)
    cursor, start = QTextCursor(document), 0
    for end in _part_ends(text):
        cursor.insertText(text[start:end])
        start = end
        if progress is not None:
            progress(end / len(text))
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
    document.setUndoRedoEnabled(True)
    return document


def _part_ends(text: str) -> Iterator[int]:
    """Where each part of ``text`` ends: after the first line break ``PART_CHARS`` on, or at its end."""
    at = 0
    while at < len(text):
        end = text.find("\n", at + PART_CHARS)
        at = len(text) if end < 0 else end + 1
        yield at
