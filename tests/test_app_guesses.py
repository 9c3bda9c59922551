"""After "No confident suggestion": the guesses are offered, shown on Alt+] and reviewed as any result."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt

from test_app_support import FakeBackend, qasync_loop, select, window, with_fake_model  # noqa: F401 - fixtures

from app.guesses import usable_guesses
from app.textpositions import document_text
from model.api import Candidate, Draft

TEXT = "def add(a, b):\n    return a + b  # é 😀\n\nprint(add(1, 2))\n"
REGION = (19, 31)
ALT, CTRL = Qt.KeyboardModifier.AltModifier, Qt.KeyboardModifier.ControlModifier
OFFER = "No confident suggestion. Your text is unchanged · Alt+] shows the guesses"


class UnsureBackend(FakeBackend):
    """A FakeBackend whose final drafts trust none of their alternatives; ``blank``: all whitespace."""

    def __init__(self, blank: bool = False, **options):
        super().__init__(**options)
        self.blank = blank

    def result(self, index: int, alternative: int = 0) -> str:
        return " \n\t" if self.blank else FakeBackend.result(index, alternative)

    def _drafts(self, count, alternatives, step, final):
        return tuple(replace(draft, confident=not final) for draft in super()._drafts(count, alternatives, step, final))


@pytest.fixture
def unconfident(window, qtbot):
    """TEXT's REGION rewritten by an UnsureBackend with 3 alternatives; the session has ended."""
    def start(backend=None):
        backend = backend or UnsureBackend()
        with_fake_model(window, qtbot, backend)
        window.ai.starter.options.alternatives = 3
        editor = window.tabs.new_document().editor
        editor.setPlainText(TEXT)
        editor.document().setModified(False)
        window.activateWindow()
        select(editor, *REGION)
        window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 0.7))
        session = editor.session
        qtbot.waitUntil(lambda: session.state == "ended", timeout=10000)
        return editor, backend

    return start


def with_guess(alternative: int) -> str:
    return TEXT[: REGION[0]] + FakeBackend.result(0, alternative) + TEXT[REGION[1] :]


def untouched(editor) -> bool:
    document = editor.document()
    return document_text(document) == TEXT and not document.isModified() and not document.isUndoAvailable()


def test_an_unconfident_result_offers_its_guesses_and_writes_nothing(window, qtbot, unconfident):
    editor, _ = unconfident()
    assert window.statusBar().currentMessage() == OFFER
    assert untouched(editor) and editor.session is None
    assert "*" not in window.tabs.tabText(window.tabs.currentIndex())


def test_the_key_shows_the_best_guess_marked_as_one_and_esc_restores_the_original(window, qtbot, unconfident):
    editor, _ = unconfident()
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    session = editor.session
    assert session is not None and session.state == "ready" and session.alternatives == 3
    assert document_text(editor.document()) == with_guess(0)
    assert window.statusBar().currentMessage().startswith("Guess (not confident) · ")
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert document_text(editor.document()) == with_guess(1)
    assert window.statusBar().currentMessage().startswith("Guess 2 of 3")
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert untouched(editor) and editor.session is None


def test_tab_accepts_a_guess_as_one_undo_step(window, qtbot, unconfident):
    editor, _ = unconfident()
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == with_guess(1)
    assert editor.document().isModified() and editor.session is None
    qtbot.keyClick(editor, Qt.Key.Key_Z, CTRL)  # one step back: the original, and nothing before it
    assert untouched(editor)


def test_try_again_from_the_guesses_runs_the_request_again(window, qtbot, unconfident):
    editor, backend = unconfident()
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    qtbot.keyClick(editor, Qt.Key.Key_R, ALT)
    again = editor.session
    qtbot.waitUntil(lambda: again.state == "ended", timeout=10000)
    [(first,), (second,)] = backend.requests
    assert (second.init_text, second.strength, second.prefix) == (first.init_text, 0.7, first.prefix)
    assert untouched(editor)


def test_try_again_right_after_no_confident_suggestion_runs_the_request_again(window, qtbot, unconfident):
    editor, backend = unconfident()
    qtbot.keyClick(editor, Qt.Key.Key_R, ALT)
    again = editor.session
    assert again is not None
    qtbot.waitUntil(lambda: again.state == "ended", timeout=10000)
    [(first,), (second,)] = backend.requests
    assert (second.init_text, second.strength) == (first.init_text, 0.7)
    assert untouched(editor)


def test_typing_after_the_offer_forgets_it(window, qtbot, unconfident):
    editor, _ = unconfident()
    assert window.statusBar().currentMessage() == OFFER
    qtbot.keyClicks(editor, "x")
    typed = document_text(editor.document())
    assert window.statusBar().currentMessage() != OFFER
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert editor.session is None and document_text(editor.document()) == typed


def test_moving_the_cursor_off_the_region_forgets_the_offer(window, qtbot, unconfident):
    editor, _ = unconfident()
    select(editor, REGION[1], REGION[0] + 2)  # inside the region: still offered
    assert window.statusBar().currentMessage() == OFFER
    qtbot.keyClick(editor, Qt.Key.Key_End, CTRL)
    assert window.statusBar().currentMessage() != OFFER
    qtbot.keyClick(editor, Qt.Key.Key_Home, CTRL)
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert editor.session is None and untouched(editor)


def test_blank_guesses_are_not_offered(window, qtbot, unconfident):
    editor, _ = unconfident(UnsureBackend(blank=True))
    assert window.statusBar().currentMessage() == "No confident suggestion. Your text is unchanged."
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert editor.session is None and untouched(editor)


def test_gap_fills_are_shown_as_before_however_unsure(window, qtbot):
    with_fake_model(window, qtbot, UnsureBackend())
    editor = window.tabs.new_document().editor
    editor.setPlainText("x = [MASK]\n")
    window.ai.start(editor, lambda: window.ai.starter.fill_gaps(editor))
    session = editor.session
    qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=10000)
    assert session.state == "ready" and not session.is_guess
    assert document_text(editor.document()) == f"x = {FakeBackend.result(0)}\n"


def test_guesses_leave_out_blank_alternatives_and_the_text_as_it_is():
    def draft(*texts: str) -> Draft:
        return Draft(1, tuple(Candidate(text, ()) for text in texts), True, confident=False)

    [kept] = usable_guesses((draft("same", "  ", "b", "a"),), ["same"])
    assert [candidate.text for candidate in kept.candidates] == ["b", "a"]
    assert usable_guesses((draft("b"), draft("same", "\n")), ["x", "same"]) is None
