"""The regions of an infill session, and its draft in the document.

A ``Region`` is a span tracked by anchors (QTextCursors): text typed before it moves it, text typed
at its edges stays outside it (its start moves on an insert there, its end does not), and
``changed`` tells when an edit reached the original text. ``DraftRegions`` writes a draft into a
session's regions without it ever becoming part of the user's history (docs/architecture.md, "The
rules that protect the user's text") and takes it out again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtGui import QTextCursor, QTextDocument

from sfumato.app.textpositions import as_stored, document_text, index_of, text_between, utf16_length
from sfumato.model.api import Candidate, TokenState

log = logging.getLogger(__name__)


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
        return text_between(self.start.document(), start, end) != self.original

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



class DraftRegions:
    """A session's regions and the draft written into them, as **one edit block that is always the
    top of the undo stack**: ``take_out`` removes it with a single ``undo()`` and drops the redo
    entry that leaves, so the document minus that one step is exactly what the user wrote.
    ``to_original`` and ``to_shown`` map positions between the text as shown and the text without
    the draft."""

    def __init__(self, document: QTextDocument, spans: Sequence[tuple[int, int]]):
        self.document = document
        self.regions = [Region(document, s, e, text_between(document, s, e)) for s, e in sorted(spans)]
        self._draft_undo_steps: int | None = None  # None: no draft in the document
        self._draft_revision = -1

    def __len__(self) -> int:
        return len(self.regions)

    @property
    def originals(self) -> list[str]:
        return [region.original for region in self.regions]

    def spans(self) -> list[tuple[int, int]]:
        return [region.span() for region in self.regions]

    def original_spans(self) -> list[tuple[int, int]]:
        """Each region's place once every region holds its original again."""
        spans, shift = [], 0
        for region in self.regions:
            start, end = region.span()
            length = utf16_length(region.original)
            spans.append((start - shift, start - shift + length))
            shift += (end - start) - length
        return spans

    @property
    def has_draft(self) -> bool:
        return self._draft_undo_steps is not None

    def changed(self) -> bool:
        """An edit reached a region's original text (asked with the draft taken out)."""
        return any(region.changed() for region in self.regions)

    def text_without_draft(self) -> str:
        text = document_text(self.document)
        if not self.has_draft:
            return text
        for region, (start, end) in reversed(list(zip(self.regions, self.spans()))):
            text = text[: index_of(text, start)] + region.original + text[index_of(text, end) :]
        return text

    def write(self, texts: list[str], as_draft: bool) -> None:
        """Replace every region's text with ``texts`` in one edit block; re-anchor the regions."""
        spans = self.spans()
        steps = self.document.availableUndoSteps()
        cursor = QTextCursor(self.document)
        cursor.beginEditBlock()
        lengths = []
        for (start, end), text in reversed(list(zip(spans, texts))):
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(text)
            lengths.insert(0, cursor.position() - start)
        cursor.endEditBlock()
        self._place(spans, lengths)
        if as_draft and self.document.availableUndoSteps() > steps:
            self._draft_undo_steps = self.document.availableUndoSteps()
            self._draft_revision = self.document.revision()

    def take_out(self) -> None:
        """Remove the draft with one undo and drop the redo entry it leaves."""
        if not self.has_draft:
            return
        spans = self.spans()
        self._draft_undo_steps, steps = None, self._draft_undo_steps
        if self.document.availableUndoSteps() == steps and self.document.revision() == self._draft_revision:
            self.document.undo()
            self.document.clearUndoRedoStacks(QTextDocument.Stacks.RedoStack)
            self._place(spans, [utf16_length(region.original) for region in self.regions])
        else:  # something edited the text behind the session's back: restore the text anyway
            log.warning("the document changed outside an infill session's control; restoring the regions")
            self.write(self.originals, as_draft=False)

    def replace_draft(self, texts: list[str]) -> None:
        """Take the draft out (one undo) and write ``texts`` as the new one."""
        self.take_out()
        self.write(texts, as_draft=True)

    def _place(self, spans: list[tuple[int, int]], lengths: list[int]) -> None:
        """Re-anchor the regions after their texts (at ``spans``) became ``lengths`` long."""
        shift = 0
        for region, (start, end), length in zip(self.regions, spans, lengths):
            region.place(start + shift, start + shift + length)
            shift += length - (end - start)

    def touches(self, low: int, high: int) -> bool:
        """The selection ``low``-``high`` (a caret when equal) reaches inside a region."""
        return any(start < high and low < end if low < high else start < low < end for start, end in self.spans())

    def to_original(self, position: int) -> int:
        """Where ``position`` (in the text as shown) falls once the draft is taken out."""
        shift = 0
        for region, (start, end) in zip(self.regions, self.spans()):
            if position < start:
                break
            length = utf16_length(region.original) if self.has_draft else end - start
            if position < end:
                return start + shift + min(position - start, length)
            shift += length - (end - start)
        return position + shift

    def to_shown(self, before: list[tuple[int, int]], position: int) -> int:
        """Where ``position`` in the text without the draft (regions at ``before``) is once it is shown."""
        shift = 0
        for (start, end), (shown_start, shown_end) in zip(before, self.spans()):
            if position <= start:
                break
            if position < end:
                return min(shown_start + position - start, shown_end)
            shift = shown_end - end
        return position + shift

    def detach(self) -> None:
        for region in self.regions:
            region.detach()
