"""An infill session: one or more regions of a document being rewritten by the model.

How the draft is shown without ever becoming part of the user's history (docs/architecture.md,
"The rules that protect the user's text"): each pass's text is written into the regions as **one edit block that is always the
top of the undo stack** (``sfumato.app.regions.DraftRegions``). Before any edit of the user's runs (``user_edit``), that block is taken
out again with a single ``undo()`` and the redo entry it leaves is dropped; the user's edit then
lands on the original text and becomes an ordinary undo step of its own; the draft is written
back afterwards. So at every moment the document minus one undo step is exactly what the user
wrote, and:

- reject / cancel / failure = take the draft out (the undo history holds nothing new);
- accept = take the draft out, then write the result as one ordinary edit block (one undo step);
- accept a word (an infill at a cursor) = accept that much as above; the rest is a new session's
  result, shown at once (``rest_offered``), so each session still ends with one step or none;
- saving or autosaving while a draft is shown writes ``text_without_draft()``.

Regions are tracked by anchors (QTextCursors): text typed before a region moves it, text typed
at its edges stays outside it, and an edit that changes a region's original text cancels.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor, QKeyEvent, QKeySequence, QTextCursor

from sfumato.app.commandkeys import DEFAULT_SESSION_KEYS, SessionKeys, key_matches, key_names
from sfumato.app.draftpaint import diff_view, draft_selections
from sfumato.app.noise import with_noise
from sfumato.app.pacing import DraftPacer
from sfumato.app.partial_accept import next_word_end, rest_of
from sfumato.app.reviewdiff import review_diff
from sfumato.app.regions import DraftRegions
from sfumato.app.reviewhint import ReviewHint
from sfumato.app.run_status import broken_note, passing_line, result_line
from sfumato.app.syntax_check import LARGEST_CHECKED, broken_by_result
from sfumato.app.textpositions import as_stored, document_text
from sfumato.model.api import Candidate, Draft, InfillRequest, TemplateRequest, TokenState
from sfumato.model.untrusted_text import terminal_safe

if TYPE_CHECKING:
    from sfumato.app.codeeditor import CodeEditor
    from sfumato.app.worker_adapter import WorkerAdapter
    from sfumato.model.worker import Job


class State(StrEnum):
    """Where a session is: the only three, in this order."""

    RUNNING = "running"  # drafts arriving and animated (app/pacing.py)
    READY = "ready"  # the result is shown for review: accept, reject, the alternatives and the original
    ENDED = "ended"  # the document holds no draft; ``outcome`` says how it ended


class Outcome(StrEnum):
    """How a session ended (``EditSession.outcome``, the ``ended`` signal)."""

    ACCEPTED = "accepted"  # the chosen alternative is one undo step (or, the same as the original, none)
    REJECTED = "rejected"
    CANCELLED = "cancelled"  # by the worker, by typing inside a region, or by another session
    FAILED = "failed"
    EMPTY = "empty"  # the model wrote nothing: Try Again may run the request once more
    UNCHANGED = "unchanged"  # every alternative of a rewrite is the selection as it was (a fix found nothing)


class EditSession(QObject):
    """Shows the drafts of one model run in ``editor`` and applies or discards the result.

    ``state`` goes ``RUNNING`` -> ``READY`` -> ``ENDED`` (or straight to ``ENDED``): while running,
    drafts arrive and are animated; when ready, the result is shown (accepting a result that is
    in but not shown yet shows it first; ``review_diff``: as a diff against the original, else
    clean) and the alternatives and the original cycle; ``ended`` is emitted once with the
    ``Outcome`` and a status-bar message. A result the model is not confident of is shown all the
    same, marked so (``low_confidence``); its tokens' confidence is drawn on them. Try Again
    (app/infill.py) runs ``request`` once more over ``retry_spans``.
    """

    ended = Signal(object, str)  # (Outcome, message)
    progress = Signal(str)
    again_requested = Signal()  # the review hint's "Again" link; the window runs Try Again
    modification_changed = Signal(bool)  # the user's text, draft aside, differs from the saved one (or no longer)
    diff_toggled = Signal(bool)  # the user's key switched the review to a diff (True) or the clean result
    rest_offered = Signal(object, bool)  # Accept Word took a word: (the rest as a Candidate, whether the model was confident)

    def __init__(
        self,
        editor: CodeEditor,
        spans: Sequence[tuple[int, int]],
        total_steps: int | None = None,
        underline_low_confidence: bool = False,
        keys: SessionKeys = DEFAULT_SESSION_KEYS,
        review_diff: bool = True,
    ):
        super().__init__(editor)
        editor.end_session()
        self.editor = editor
        self.document = editor.document()
        self.state = State.RUNNING
        self.outcome: Outcome | None = None  # set when the session ends
        self.request: Sequence[InfillRequest] | TemplateRequest | None = None  # what ``run`` submitted
        self.job: Job | None = None  # the worker's, cancelled when the session ends early
        self._hint: ReviewHint | None = None  # under the result while it waits for the user
        self.low_confidence = False  # the result shown is one the model was not confident of
        self.keys = keys
        self.underline_low_confidence = underline_low_confidence
        self.review_diff = review_diff
        self._total_steps = total_steps
        self._regions = DraftRegions(self.document, spans)
        self._drafts: tuple[Draft, ...] | None = None  # what is shown (or will be)
        self._alternative = 0
        self._ended_at: tuple[int, list[tuple[int, int]]] | None = None
        self._inside_user_edit = False
        self._modified = self.document.isModified()
        self._started = time.monotonic()
        self._finished: float | None = None
        self._offered = False  # the result is what Accept Word left of an earlier one: no model run
        self._pacer = DraftPacer(self, self._draw)
        editor.extra_cursors.clear()  # a session edits with one cursor
        editor.session = self
        self._paint()

    # --- the model run ------------------------------------------------------------------------

    def run(self, worker: WorkerAdapter, request: Sequence[InfillRequest] | TemplateRequest) -> bool:
        """Submit ``request`` (one per region, or a template) to ``worker``; its drafts come back
        here. False, with the session ended as failed, when no model is loaded."""
        self.request = request
        self.job = worker.submit(request, self.receive, self.finish, self.fail, self.cancelled, owner=self.editor)
        if self.job is None:
            self.fail(RuntimeError("no model is loaded"))
            return False
        return True

    @property
    def can_try_again(self) -> bool:
        """Try Again may run this session's request once more: it runs or waits for review, or it
        ended with nothing written or changed (``Outcome.EMPTY``, ``UNCHANGED``: the next may differ)."""
        return self.request is not None and (self.state != State.ENDED or self.outcome in (Outcome.EMPTY, Outcome.UNCHANGED))

    def retry_spans(self) -> list[tuple[int, int]] | None:
        """Where the originals are once the draft is taken out, for Try Again (app/infill.py);
        None when the session has ended (an empty result) and the text has changed since."""
        if self.state != State.ENDED:
            return self._regions.original_spans()
        revision, spans = self._ended_at
        return spans if revision == self.document.revision() else None

    # --- what the rest of the editor asks -----------------------------------------------------

    @property
    def originals(self) -> list[str]:
        return self._regions.originals

    def spans(self) -> list[tuple[int, int]]:
        return self._regions.spans()

    @property
    def result_in(self) -> bool:
        """The final result has arrived (it can be accepted, even before the animation shows it)."""
        return self.state == State.READY or (self.state == State.RUNNING and self._pacer.has_result)

    @property
    def has_draft(self) -> bool:
        return self._regions.has_draft

    @property
    def alternatives(self) -> int:
        return min(len(draft.candidates) for draft in self._drafts) if self._drafts else 0

    def text_without_draft(self) -> str:
        return self._regions.text_without_draft()

    def modified_without_draft(self) -> bool:
        return self._modified

    # --- the worker's news, on the Qt thread --------------------------------------------------

    def receive(self, drafts: tuple[Draft, ...]) -> None:
        if self.state == State.RUNNING:
            self._pacer.add(drafts)  # it decides which passes are drawn, and when

    def finish(self, drafts: tuple[Draft, ...]) -> None:
        if self.state != State.RUNNING:
            return
        again = self.keys.try_again.toString(QKeySequence.SequenceFormat.NativeText)
        if all(not candidate.text.strip() for draft in drafts for candidate in draft.candidates):
            return self._end(Outcome.EMPTY, f"The model wrote nothing here; {again} tries again.")
        if all(as_stored(region.ending_as_original(candidate).text) == original
               for region, draft, original in zip(self._regions.regions, drafts, self.originals) for candidate in draft.candidates):
            return self._end(Outcome.UNCHANGED, f"The model would change nothing here; your text is as it was. {again} tries again.")
        self._finished = time.monotonic()  # the model's speed, without the animation after it
        self.low_confidence = not isinstance(self.request, TemplateRequest) and not any(d.confident for d in drafts)
        self._pacer.add(drafts, final=True)

    def _draw(self, drafts: tuple[Draft, ...], final: bool) -> None:
        """Show a pass the pacer chose (its undecided positions as noise), or the result."""
        seconds = (self._finished or time.monotonic()) - self._started
        if not final:
            self._show(with_noise(drafts, self.originals))
            self.progress.emit(passing_line(drafts, seconds, self._total_steps))
            return
        self.state = State.READY
        self._show(drafts)
        broken = self._broken()  # the file parsed before and fails with the result: why
        if self.state == State.READY:
            self.editor.show_start_of(self.spans()[0][0])  # a long line's result is read from its start
            self._hint = ReviewHint(self.editor, lambda: (self.spans()[0][0], self.spans()[-1][1]), {
                "accept": ("Accept", self.keys.accept, self.accept),
                **({"word": ("Word", self.keys.accept_word, self.accept_word)} if self._takes_words() else {}),
                "reject": ("Reject", self.keys.reject, self.dismiss),
                "next": (self._next_label(), self.keys.next_alternative, lambda: self.cycle(1)),
                "diff": (self._diff_label(), self.keys.toggle_diff, self.toggle_diff),
                "again": ("Again", self.keys.try_again, self.again_requested.emit),
            }, warning=broken)
        if self._offered:
            self.progress.emit(f"The rest of the result · {self._choices()}")
        else:
            self.progress.emit(result_line(drafts, seconds, self._choices(), self.low_confidence, broken))

    def offer(self, rest: Candidate, confident: bool) -> None:
        """Show ``rest`` (what Accept Word left of a result) for review at once, as a result."""
        self._offered = True
        self.finish((Draft(batch_passes=0, candidates=(rest,), final=True, confident=confident),))

    def fail(self, error: BaseException) -> None:
        self._end(Outcome.FAILED, f"The model failed: {terminal_safe(str(error))}. Your text is unchanged.")

    def cancelled(self) -> None:
        self._end(Outcome.CANCELLED, "The model run was cancelled. Your text is unchanged.")

    # --- the user's decisions -----------------------------------------------------------------

    def accept(self) -> None:
        self._pacer.finish_now()
        if self.state == State.READY:
            self._accept_texts(self.texts(), "Accepted. Ctrl+Z brings back the original.")

    def accept_word(self) -> bool:
        """Accept the shown result's next word (white space before it included) and offer the rest
        again at once (``rest_offered``): one undo step a word. Only for an infill at a cursor (one
        region, nothing selected); False where it does not apply."""
        if not self._at_cursor():
            return False
        self._pacer.finish_now()
        if not self._takes_words():
            return False
        candidate = self._candidates()[0]
        end = next_word_end(candidate.text)
        if not candidate.text[end:].strip():
            self.accept()
            return True
        confident = not self.low_confidence
        self._accept_texts([as_stored(candidate.text[:end])], "Accepted a word. Ctrl+Z brings back the text before it.")
        self.rest_offered.emit(rest_of(candidate, end), confident)
        return True

    def _at_cursor(self) -> bool:
        """An infill at a cursor: one region that held nothing, not a template's gap."""
        return self.originals == [""] and not isinstance(self.request, TemplateRequest)

    def _takes_words(self) -> bool:
        return self.state == State.READY and not self.showing_original and self._at_cursor()

    def _accept_texts(self, texts: list[str], message: str) -> None:
        self._regions.take_out()
        if texts == self.originals:
            self._end(Outcome.ACCEPTED, "The result is the same as the original; nothing changed.")
            return
        self._regions.write(texts, as_draft=False)
        end = self.spans()[-1][1]
        cursor = self.editor.textCursor()
        cursor.setPosition(end)
        self.editor.setTextCursor(cursor)
        self.editor.show_start_of(self.spans()[0][0])
        self.editor.selection_after_undo = (self.document.availableUndoSteps(), *self._regions.original_spans()[0])
        self._end(Outcome.ACCEPTED, message)

    def reject(self) -> None:
        if self._offered:
            self._end(Outcome.REJECTED, "The rest of the result was dropped; the words taken stay.")
        else:
            self._end(Outcome.REJECTED, "Rejected. Your text is unchanged.")

    def dismiss(self) -> None:
        """The user's reject (Esc): the original text is selected again, to retry or act on it
        (the first region's, of several)."""
        self.reject()
        self._move_cursor(*self._ended_at[1][0])
        self.editor.show_start_of(self._ended_at[1][0][0])

    @property
    def showing_original(self) -> bool:
        """The review shows the original text: the place after the last alternative in the cycle."""
        return self.state == State.READY and self._alternative == self.alternatives

    def cycle(self, step: int) -> None:
        """Show the next (or previous) alternative; after the last one comes the original, to compare."""
        self._pacer.finish_now()
        if self.state != State.READY:
            return
        self._alternative = (self._alternative + step) % (self.alternatives + 1)
        self._show(self._drafts)
        broken = None if self.showing_original else self._broken()
        if self._hint is not None:
            self._hint.relabel("next", self._next_label(), broken)
        if self.showing_original:
            self.progress.emit(f"The original text, to compare: {self._choices()}")
        else:
            self.progress.emit(f"{broken_note(broken)}Alternative {self._alternative + 1} of {self.alternatives}: {self._choices()}")

    def _broken(self) -> str | None:
        """Why the file with the result shown fails to parse where it parsed before, or None."""
        check, small = self.editor.syntax_check, self.document.characterCount() <= LARGEST_CHECKED  # else no texts built
        return broken_by_result(check, self.text_without_draft(), document_text(self.document), self._at_cursor()) if check and small else None

    def _next_label(self) -> str:
        """What the next-alternative key shows next: the original after the last alternative."""
        if self.showing_original:
            return "Result"
        return "Original" if self._alternative == self.alternatives - 1 else "Next"

    def _choices(self) -> str:
        """What else there is to see, in the user's key bindings (accept and reject are on the hint
        below the result; the status bar shares its width with permanent fields)."""
        name = key_names(self.keys)
        cycle = f"{name['next_alternative']} / {name['previous_alternative']}"
        if self.alternatives > 1:
            return f"{cycle}: {self.alternatives} alternatives and your original"
        return f"{cycle}: your original"

    def set_underline(self, on: bool) -> None:
        self.underline_low_confidence = on
        self._paint()

    @property
    def showing_diff(self) -> bool:
        """The result is shown as a diff against the original (the document holds the result only)."""
        return self.review_diff and self.state == State.READY and self.has_draft and not self.showing_original

    def set_diff(self, on: bool) -> None:
        """Review the result as a diff (``on``) or clean."""
        self.review_diff = on
        if self._hint is not None:
            self._hint.relabel("diff", self._diff_label())
        self._paint()

    def toggle_diff(self) -> None:
        """The user's key: a diff becomes the clean result, and back."""
        self.set_diff(not self.review_diff)
        self.diff_toggled.emit(self.review_diff)

    def _diff_label(self) -> str:
        return "Clean" if self.review_diff else "Diff"

    def handle_key(self, event: QKeyEvent) -> bool:
        """Session keys; True when the key was used. Undo/redo end the session first."""
        if key_matches(event, self.keys.reject):
            self.dismiss()
        elif key_matches(event, self.keys.accept):  # reserved while a session runs: no stray indent
            if self.result_in:
                self.accept()
            else:
                self.progress.emit("Still denoising: the result can be accepted when it is done.")
        elif key_matches(event, self.keys.accept_word):
            return self.accept_word()  # elsewhere (a rewrite) the key moves the cursor as ever
        elif key_matches(event, self.keys.next_alternative):
            self.cycle(1)
        elif key_matches(event, self.keys.previous_alternative):
            self.cycle(-1)
        elif key_matches(event, self.keys.toggle_diff):
            self.toggle_diff()
        elif event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo):
            self.reject()
        else:
            return False
        return True

    @contextmanager
    def user_edit(self) -> Iterator[None]:
        """Run one edit of the user's on the text without the draft; an edit inside a region cancels."""
        if self._inside_user_edit or self.state == State.ENDED:
            yield
            return
        cursor = self.editor.textCursor()
        if self._regions.touches(cursor.selectionStart(), cursor.selectionEnd()):
            anchor, position = self._regions.to_original(cursor.anchor()), self._regions.to_original(cursor.position())
            self._end(Outcome.CANCELLED, "Typing inside the region cancelled the rewrite.")
            self._move_cursor(anchor, position)
            yield
            return
        with self.draft_taken_out():
            yield
            if self._regions.changed():
                self._end(Outcome.CANCELLED, "Typing inside the region cancelled the rewrite.")

    @contextmanager
    def draft_taken_out(self) -> Iterator[None]:
        """The document as the user wrote it for the duration (to edit it, or to save it)."""
        if self._inside_user_edit or self.state == State.ENDED:
            yield
            return
        self._inside_user_edit = True
        had_draft = self.has_draft
        bars = self.editor.horizontalScrollBar(), self.editor.verticalScrollBar()
        scrolled = [bar.value() for bar in bars]
        cursor = self.editor.textCursor()
        anchor, position = self._regions.to_original(cursor.anchor()), self._regions.to_original(cursor.position())
        self._regions.take_out()
        if had_draft:  # Qt's undo carries a cursor at a region's start past the original text
            self._move_cursor(anchor, position)
        revision = self.document.revision()
        try:
            yield
        finally:
            edited = self.document.revision() != revision  # an edit, not a save
            self._inside_user_edit = False
            if self._modified != self.document.isModified():
                self._modified = self.document.isModified()
                self.modification_changed.emit(self._modified)
            if self.state != State.ENDED and had_draft:
                cursor = self.editor.textCursor()
                anchor, position, before = cursor.anchor(), cursor.position(), self.spans()
                self._regions.write(self.texts(), as_draft=True)
                self._move_cursor(self._regions.to_shown(before, anchor), self._regions.to_shown(before, position))
                self._paint()
            if not edited:  # a save: the view stays where the user had it (putting the draft back scrolls)
                for bar, value in zip(bars, scrolled):
                    bar.setValue(value)

    # --- drawing ------------------------------------------------------------------------------

    def _candidates(self) -> list[Candidate]:
        if self.showing_original:
            return [Candidate(original, (TokenState(original, 1.0, True),)) for original in self.originals]
        return [region.ending_as_original(draft.candidates[min(self._alternative, len(draft.candidates) - 1)])
                for region, draft in zip(self._regions.regions, self._drafts)]

    def texts(self) -> list[str]:
        """The chosen candidates as they land in the document (its line breaks are all \\n)."""
        return [as_stored(candidate.text) for candidate in self._candidates()]

    def _show(self, drafts: tuple[Draft, ...]) -> None:
        if len(drafts) != len(self._regions):
            self._end(Outcome.FAILED, f"The model returned {len(drafts)} drafts for {len(self._regions)} regions.")
            return
        self._drafts = drafts
        if self._inside_user_edit:
            return  # written back when the user's edit is done
        with self.editor.selections_held():
            self._regions.replace_draft(self.texts())
            self._paint()

    def _paint(self) -> None:
        if self.showing_diff:
            texts = self.texts()
            diffs = [review_diff(original, text, self.editor.prose) for original, text in zip(self.originals, texts)]
            selections, ghosts, band = diff_view(self.document, self.editor.palette(), self.spans(), texts, diffs)
            self.editor.set_layer("infill", selections)
            self.editor.set_ghosts(ghosts, band)
        else:
            candidates = self._candidates() if self.has_draft else [None] * len(self._regions)
            self.editor.set_layer("infill", draft_selections(
                self.document, self.editor.palette(), self.spans(), candidates, done=self.state == State.READY,
                showing_original=self.showing_original, underline_low_confidence=self.underline_low_confidence))
            self.editor.set_ghosts({}, QColor())
        if self._hint is not None:
            self._hint.place()

    # --- the document ------------------------------------------------------------------------

    def _move_cursor(self, anchor: int, position: int) -> None:
        cursor = self.editor.textCursor()
        cursor.setPosition(anchor)
        cursor.setPosition(position, QTextCursor.MoveMode.KeepAnchor)
        self.editor.setTextCursor(cursor)

    def _end(self, outcome: Outcome, message: str) -> None:
        if self.state == State.ENDED:
            return
        self._pacer.stop()
        self._regions.take_out()
        self.state, self.outcome = State.ENDED, outcome
        self._ended_at = (self.document.revision(), self.spans())  # where the originals are, for Try Again
        if self.job is not None:
            self.job.cancel()
        self.editor.session = None
        self.editor.set_layer("infill", [])
        self.editor.set_ghosts({}, QColor())
        if self._hint is not None:
            self._hint.remove()
            self._hint = None
        self._regions.detach()
        self.setParent(None)  # an ended session is freed once nothing refers to it
        self.ended.emit(outcome, message)

