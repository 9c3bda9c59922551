"""Suggestions while typing: when a key the user typed changed the text (a line's words, the line
break Enter made) and the cursor rests at the end of its line, the model writes the rest of the
line (or the new line) in the background, as Ctrl+K there would; a result it is sure of
(its tokens' mean probability at least ``SUGGEST_BAR``, ``PROSE_BAR`` in prose) is shown at the cursor
(``app/inline_suggestion.py``). Only a local model is asked: typing never sends text to a server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import shiboken6

from sfumato.app.commandkeys import SessionKeys
from sfumato.app.inline_suggestion import after_cursor, only_closers
from sfumato.model.api import Draft, InfillRequest

if TYPE_CHECKING:
    from sfumato.app.codeeditor import CodeEditor
    from sfumato.app.worker_adapter import WorkerAdapter
    from sfumato.model.worker import Job

# Each chosen on the training split (docs/training.md, session 37) as the lowest bar at which at least
# 40% of the suggestions shown are the rest exactly. Code (evaluate_lm --typed: lines cut after a
# typed word): 0.8 showed 34% of them, 38% exact; 0.9 15%, 60% (whole lines at a blank line: 8%, 62%).
# Prose (--ends: a paragraph's last words): 0.5 showed 30%, 26% exact; 0.6 14.5%, 48%.
SUGGEST_BAR = 0.9
PROSE_BAR = 0.6


class Suggester:
    """Asks ``worker`` for a suggestion at a resting cursor (``ask``) and shows a sure one.
    ``enabled`` is the setting; ``local`` says the loaded model is not a server's."""

    def __init__(self, worker: WorkerAdapter, keys: Callable[[], SessionKeys], say: Callable[[str], None],
                 local: Callable[[], bool]):
        self.worker, self._keys, self._say, self._local = worker, keys, say, local
        self.enabled = True
        self._job: Job | None = None

    def ask(self, editor: CodeEditor, request: InfillRequest) -> bool:
        """Run ``request`` (Ctrl+K's at ``editor``'s cursor) as a suggestion if the user typed since
        the last rest and nothing but closers (a bracket auto-close typed, say) follows the cursor on its
        line; False when no suggestion is asked for."""
        typed, editor.suggestion.typed = editor.suggestion.typed, False
        cursor = editor.textCursor()
        if not (self.enabled and typed and self._local() and editor.hasFocus() and not editor.suggestion.shown
                and only_closers(after_cursor(cursor))):
            return False
        revision, position = editor.document().revision(), cursor.position()
        one = replace(request, n_alternatives=1, first_alternative=0, one_line=True)  # a line, even where Ctrl+K writes a block
        self._job = self.worker.submit([one], lambda drafts: None,
                                      lambda drafts: self._show(editor, revision, position, drafts),
                                      lambda error: None, lambda: None, owner=editor)
        return self._job is not None

    def cancel(self) -> None:
        """The user typed or moved on, or a session starts: the suggestion running is not wanted."""
        if self._job is not None:
            self._job.cancel()
            self._job = None

    def _show(self, editor: CodeEditor, revision: int, position: int, drafts: tuple[Draft, ...]) -> None:
        self._job = None
        if not shiboken6.isValid(editor):  # its tab was closed meanwhile
            return
        cursor = editor.textCursor()
        if editor.session is not None or editor.document().revision() != revision or cursor.position() != position or cursor.hasSelection():
            return
        candidate = drafts[0].candidates[0]
        text = candidate.text.split("\n")[0].rstrip()
        if text.strip() and candidate.mean_probability >= (PROSE_BAR if editor.prose else SUGGEST_BAR):
            editor.suggestion.show(position, text, self._keys())
        if editor.suggestion.shown:
            self._say(editor.suggestion.hint())
