"""A state machine over infill sessions: typing, deleting, drafts, accept, reject, undo, redo.

Drafts are fed to the session directly (no worker), written with '§' so that they can be
recognised anywhere; final results use 'Ω'. After every step: a shown draft is never in the text
as the user wrote it; reject restores what was there; undo after accept restores the document
before it; and at the end no state in the whole undo history holds a draft.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text
from sfumato.app.session import EditSession
from sfumato.model.api import Candidate, Draft, TokenState


def drafts(count: int, text: str, final: bool) -> tuple[Draft, ...]:
    tokens = tuple(TokenState(ch, 0.5, final) for ch in text)
    return tuple(Draft(1, (Candidate(text, tokens),), final) for _ in range(count))


class SessionMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.editor = CodeEditor()
        self.editor.setPlainText("alpha beta\ngamma delta\n")
        self.session: EditSession | None = None

    def teardown(self):
        if self.editor.session is not None:
            self.editor.session.reject()
        self.editor.deleteLater()

    def text(self) -> str:
        return document_text(self.editor.document())

    def active(self) -> bool:
        return self.editor.session is not None

    def place(self, position: int, length: int = 0) -> None:
        size = len(self.text())
        cursor = self.editor.textCursor()
        cursor.setPosition(min(position, size))
        cursor.setPosition(min(position + length, size), QTextCursor.MoveMode.KeepAnchor)
        self.editor.setTextCursor(cursor)

    @precondition(lambda self: not self.active())
    @rule(position=st.integers(0, 60), length=st.integers(0, 8), gaps=st.booleans())
    def start(self, position, length, gaps):
        size = len(self.text())
        start = min(position, size)
        spans = [(start, min(start + length, size))]
        if gaps and start + length + 2 < size:
            spans.append((start + length + 1, min(start + length + 3, size)))
        self.session = EditSession(self.editor, spans)

    @precondition(lambda self: self.active() and self.session.state == "running")
    @rule(text=st.text("§ab\n", max_size=12))
    def draft_arrives(self, text):
        self.session._show(drafts(len(self.session.spans()), text, final=False))

    @precondition(lambda self: self.active() and self.session.state == "running")
    @rule(text=st.text("Ωxy\n", max_size=12))
    def run_finishes(self, text):
        self.session.finish(drafts(len(self.session.spans()), text, final=True))

    @precondition(lambda self: self.active() and self.session.state == "ready")
    @rule()
    def accept(self):
        before = self.session.text_without_draft()
        self.session.accept()
        after = self.text()
        if after == before:
            return  # the result was the original text: no undo step
        self.editor.undo()
        assert self.text() == before
        self.editor.redo()
        assert self.text() == after

    @precondition(lambda self: self.active())
    @rule()
    def reject(self):
        before = self.session.text_without_draft()
        self.session.reject()
        assert self.text() == before

    @precondition(lambda self: self.active())
    @rule()
    def worker_fails(self):
        before = self.session.text_without_draft()
        self.session.fail(RuntimeError("boom"))
        assert self.text() == before

    @rule(position=st.integers(0, 60), text=st.text("qz ", min_size=1, max_size=4))
    def type_text(self, position, text):
        self.place(position)
        QTest.keyClicks(self.editor, text)

    @rule(position=st.integers(0, 60), length=st.integers(0, 4))
    def delete(self, position, length):
        self.place(position, length)
        QTest.keyClick(self.editor, Qt.Key.Key_Backspace)

    @rule(redo=st.booleans())
    def undo_or_redo(self, redo):
        """Ctrl+Z / Ctrl+Shift+Z: during a session they reject it first."""
        modifiers = Qt.KeyboardModifier.ControlModifier
        if redo:
            modifiers |= Qt.KeyboardModifier.ShiftModifier
        QTest.keyClick(self.editor, Qt.Key.Key_Z, modifiers)

    @invariant()
    def the_users_text_never_holds_a_draft(self):
        assert "§" not in self.editor.saved_text()
        if not self.active():
            assert "§" not in self.text()

    @invariant()
    def the_undo_history_never_holds_a_draft(self):
        if self.active():
            return
        document = self.editor.document()
        undone = 0
        while document.isUndoAvailable():
            document.undo()
            undone += 1
            assert "§" not in self.text()
        for _ in range(undone):
            document.redo()
        assert "§" not in self.text()


@pytest.mark.usefixtures("qapp")
def test_infill_sessions_keep_every_rule():
    runner = SessionMachine.TestCase
    runner.settings = settings(
        max_examples=200, stateful_step_count=30, deadline=None,
        suppress_health_check=[HealthCheck.too_slow], derandomize=True,
    )
    runner().runTest()
