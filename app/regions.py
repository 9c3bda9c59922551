"""The regions of an infill session: spans of the document tracked by anchors (QTextCursors).

Text typed before a region moves it, text typed at its edges stays outside it (its start moves on
an insert there, its end does not), and ``changed`` tells when an edit reached the original text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtGui import QTextCursor, QTextDocument

from app.textpositions import as_stored, utf16_length
from model.api import Candidate, TokenState


class Region:
    """A tracked span holding ``original`` (or, while a draft is shown, the draft)."""

    def __init__(self, document: QTextDocument, start: int, end: int, original: str):
        self.original = original
        self.start = QTextCursor(document)
        self.end = QTextCursor(document)
        self.place(start, end)

    def place(self, start: int, end: int) -> None:
        self.start.setPosition(start)
        self.end.setPosition(end)
        self.end.setKeepPositionOnInsert(end > start)

    def span(self) -> tuple[int, int]:
        return self.start.position(), self.end.position()

    def changed(self) -> bool:
        """Whether an edit changed the original text here (the draft taken out; only the span is read)."""
        start, end = self.span()
        if start > end or end - start != utf16_length(self.original):
            return True
        cursor = QTextCursor(self.start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        return cursor.selectedText().replace("\u2029", "\n") != self.original

    def ending_as_original(self, candidate: Candidate) -> Candidate:
        """``candidate``, with a line break at its end where the original has one: lines selected
        down to the start of the next line are replaced by lines, never run into the next one."""
        if not self.original.endswith("\n") or not candidate.text or as_stored(candidate.text).endswith("\n"):
            return candidate
        return replace(candidate, text=candidate.text + "\n", tokens=(*candidate.tokens, TokenState("\n", 1.0, True)))

    def detach(self) -> None:
        """Stop tracking: a document updates every cursor on it at every edit."""
        self.start = QTextCursor()
        self.end = QTextCursor()


def original_spans(regions: Sequence[Region]) -> list[tuple[int, int]]:
    """Each region's place once every region holds its original again."""
    spans, shift = [], 0
    for region in regions:
        start, end = region.span()
        length = utf16_length(region.original)
        spans.append((start - shift, start - shift + length))
        shift += (end - start) - length
    return spans
