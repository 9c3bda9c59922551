"""Guesses: the ranked alternatives of a run that trusted none of them ("No confident suggestion").

Nothing is written when a result is not confident, but its alternatives are often a useful start
(a similar line, a close phrase). So the status line offers them on the next-alternative key,
for as long as the user neither edits the document nor moves the cursor off the region; the
key then shows them for review like any result, marked as a guess (app/session.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QKeySequence
from shiboken6 import isValid

from model.api import Draft

if TYPE_CHECKING:
    from app.session import InfillSession

UNCONFIDENT = "No confident suggestion. Your text is unchanged"


def usable_guesses(drafts: tuple[Draft, ...], originals: list[str]) -> tuple[Draft, ...] | None:
    """Each region's draft with only the alternatives worth a look (not blank, not the region's
    text as it is), best first; None when a region has none left."""
    guesses = []
    for draft, original in zip(drafts, originals):
        kept = tuple(c for c in draft.candidates if c.text.strip() and c.text != original)
        if not kept:
            return None
        guesses.append(replace(draft, candidates=kept))
    return tuple(guesses)


def unconfident_line(guesses: tuple[Draft, ...] | None, next_key: QKeySequence) -> str:
    """The status line of a run that trusted nothing; it offers the guesses when there are any."""
    if guesses is None:
        return f"{UNCONFIDENT}."
    return f"{UNCONFIDENT} · {next_key.toString(QKeySequence.SequenceFormat.NativeText)} shows the guesses"


class GuessOffer(QObject):
    """The guesses of ``session``, which ended unconfident, on offer until the document is edited or
    the cursor moves off the regions; then ``on_forget`` runs (once) and ``open`` turns False.
    A child of the editor: it goes with its tab."""

    def __init__(self, session: InfillSession, on_forget: Callable[[], None]):
        super().__init__(session.editor)
        self.session = session
        self.editor = session.editor
        self._spans = session.retry_spans() or []
        self._revision = self.editor.document().revision()
        self._on_forget = on_forget
        self.open = True
        self.editor.cursorPositionChanged.connect(self._cursor_moved)  # both let go when this is deleted
        self.editor.document().contentsChanged.connect(self._edited)

    def _cursor_moved(self) -> None:
        position = self.editor.textCursor().position()
        if not any(start <= position <= end for start, end in self._spans):
            self.forget()

    def _edited(self) -> None:
        if self.editor.document().revision() != self._revision:
            self.forget()

    def forget(self) -> None:
        """Withdraw the offer (it is taken, or no longer true)."""
        if not self.open:
            return
        self.open = False
        if isValid(self):  # not when its tab was closed
            self.deleteLater()
        self._on_forget()
