"""Infill sessions under stress: a hypothesis state machine against a model of the user's text.

The machine drives a real ``CodeEditor`` and ``EditSession``: it types, pastes, deletes, selects,
starts rewrites, infills and gap fills, hands the session synthetic drafts (as the worker would),
accepts, rejects, cancels, fails, cycles alternatives, undoes and redoes. Next to it runs a model:
the text the user wrote (``user``) and the regions being rewritten, in the user's coordinates.
After every step it checks the rules of docs/architecture.md:

- the document shows exactly the user's text with each region replaced by its draft, so nothing
  outside the regions moves or changes;
- the text that saving and the recovery copy see is the user's text (never a draft);
- reject, cancel and failure leave the user's text; undo right after accept brings back the
  document as it was before the session;
- walking the whole undo history (and back with redo) only ever visits texts the user had: no
  draft is ever an undo step.

Draft texts carry markers the user never types (``¤`` in passing drafts, ``«»`` in results), so
a leak cannot hide. ``SFUMATO_STRESS_EXAMPLES`` raises the number of examples for nightly runs.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test
from PySide6.QtCore import QEvent, QMimeData, Qt
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QApplication

from test_app_support import FakeBackend, make_engine, qasync_loop  # noqa: F401 - fixture

from sfumato.app import pacing, recovery
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text, position_of
from sfumato.app.document import Document
from sfumato.app.infill import InfillOptions, EditStarter
from sfumato.app.commandkeys import DEFAULT_SESSION_KEYS
from sfumato.app.noise import with_noise
from sfumato.app.session import EditSession
from sfumato.model.api import Candidate, Draft, InfillRequest, TemplateRequest, TokenState
from sfumato.model.template import find_gaps, segments_of

EXAMPLES = int(os.environ.get("SFUMATO_STRESS_EXAMPLES", "1000"))
STEPS = int(os.environ.get("SFUMATO_STRESS_STEPS", "30"))

TYPED = "ab xé中"  # one key press each; Tab and Enter are session / indentation keys
PIECES = st.sampled_from(["a", "b ", "\n", "\t", "é", "中", "[MASK]", "[MASK:2]", "[MASK", "]"])
TEXT = st.lists(PIECES, max_size=12).map("".join)
PASTED = st.lists(PIECES, min_size=1, max_size=4).map("".join)
FRACTION = st.floats(min_value=0.0, max_value=1.0)
CONTROL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier
ALT = Qt.KeyboardModifier.AltModifier


def drafts_of(texts: list[list[str]], step: int, final: bool) -> tuple[Draft, ...]:
    """One Draft per region; ``texts[region][alternative]``; one token per character."""
    return tuple(
        Draft(
            step,
            tuple(Candidate(text, tuple(TokenState(ch, 0.5, final) for ch in text)) for text in alternatives),
            final,
            forward_passes=step,
            generated_tokens=step,
        )
        for alternatives in texts
    )


def as_qt_stores_it(text: str) -> str:
    """A document keeps CR LF, CR and U+2029 as one line break."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2029", "\n")


def send_key(widget, key: Qt.Key, modifiers=Qt.KeyboardModifier.NoModifier, text: str = "") -> None:
    """A key press and release as the window system would deliver them (any text, unlike QTest)."""
    for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
        QApplication.sendEvent(widget, QKeyEvent(kind, key, modifiers, text))


class _Region:
    """The model's view of one region: where it starts in the user's text, what it held, what is shown."""

    def __init__(self, start: int, original: str):
        self.start = start
        self.original = original
        self.shown: str | None = None  # None: the original is shown (no draft yet)

    @property
    def end(self) -> int:
        return self.start + len(self.original)

    @property
    def display(self) -> str:
        return self.original if self.shown is None else self.shown


class SessionMachine(RuleBasedStateMachine):
    """Drafts come from the machine itself: ``draft_text`` says what the model "writes"."""

    def __init__(self):
        super().__init__()
        self.editor = CodeEditor()
        self.session: EditSession | None = None
        self.regions: list[_Region] = []
        self.alternatives = 1
        self.alternative = 0
        self.sessions = 0
        self.step = 0
        self.redo: list[str] = []  # texts that redo brings back, newest last
        self.before_accept: str | None = None  # the text before the last accept, until the next action
        self.ended: list[EditSession] = []

    # --- the model ----------------------------------------------------------------------------

    @initialize(text=TEXT)
    def start_document(self, text):
        self.editor.setPlainText(text)
        self.editor.document().clearUndoRedoStacks()
        self.user = text
        self.seen = {text}

    def expected_display(self) -> str:
        text = self.user
        for region in reversed(self.regions):
            text = text[: region.start] + region.display + text[region.end :]
        return text

    def display_spans(self) -> list[tuple[int, int]]:
        spans, shift = [], 0
        for region in self.regions:
            start = region.start + shift
            spans.append((start, start + len(region.display)))
            shift += len(region.display) - len(region.original)
        return spans

    def to_user(self, position: int) -> int:
        """A position in the document as shown -> in the user's text (inside a region: clamped)."""
        shift = 0
        for region, (start, end) in zip(self.regions, self.display_spans()):
            if position < start:
                break
            if position < end:
                return region.start + min(position - start, len(region.original))
            shift = end - region.end
        return position - shift

    def inside(self, low: int, high: int) -> bool:
        return any(
            (start < high and low < end) if low < high else start < low < end for start, end in self.display_spans()
        )

    def set_user(self, text: str) -> None:
        self.user = text
        self.seen.add(text)

    def end_session(self) -> None:
        if self.session is not None:
            self.ended.append(self.session)
        self.session, self.regions = None, []

    def position(self, fraction: float) -> int:
        return round(fraction * len(self.expected_display()))

    def select(self, anchor: float, position: float) -> tuple[int, int]:
        """The model counts characters; Qt counts UTF-16 units (the real model writes emoji)."""
        a, p = self.position(anchor), self.position(position)
        shown = self.expected_display()
        cursor = self.editor.textCursor()
        cursor.setPosition(position_of(shown, a))
        cursor.setPosition(position_of(shown, p), QTextCursor.MoveMode.KeepAnchor)
        self.editor.setTextCursor(cursor)
        return min(a, p), max(a, p)

    # --- user edits ---------------------------------------------------------------------------

    def apply_edit(self, low: int, high: int, text: str, span_of=lambda a, b: (a, b)) -> None:
        """Model an edit made with the selection (low, high) as shown: ``span_of`` turns the
        selection in the user's text into the span that ``text`` replaces (None: no change)."""
        self.before_accept = None
        if self.session is not None and self.inside(low, high):
            user_low, user_high = self.to_user(low), self.to_user(high)
            self.end_session()
        else:
            user_low, user_high = self.to_user(low), self.to_user(high)
        span = span_of(user_low, user_high)
        if span is None:
            return
        a, b = span
        self.redo = []
        for region in self.regions:
            if region.original:
                touched = not (b <= region.start or a >= region.end)
            else:
                touched = a < region.start < b
            if touched:
                self.end_session()
                break
        for region in self.regions:
            if b <= region.start or (not region.original and a == region.start):
                region.start += len(text) - (min(b, region.start) - a)
        self.set_user(self.user[:a] + text + self.user[b:])
        if self.regions:
            self.redo = []  # the draft written back is the newest edit again

    @rule(anchor=FRACTION, position=FRACTION, kind=st.sampled_from(["type", "paste", "backspace", "delete"]), data=st.data())
    def edit(self, anchor, position, kind, data):
        """A key press or a paste with the selection (anchor, position) in the document as shown."""
        low, high = self.select(anchor, position)
        if kind == "type":
            char = data.draw(st.sampled_from(TYPED), label="char")
            send_key(self.editor, Qt.Key.Key_unknown, text=char)
            self.apply_edit(low, high, char)
        elif kind == "paste":
            text = data.draw(PASTED, label="pasted")
            mime = QMimeData()
            mime.setText(text)
            self.editor.insertFromMimeData(mime)
            self.apply_edit(low, high, text)
        else:
            forward = kind == "delete"
            send_key(self.editor, Qt.Key.Key_Delete if forward else Qt.Key.Key_Backspace)
            size = len(self.user)

            def span(a, b):
                if a < b:
                    return a, b
                if forward:
                    return (a, a + 1) if a < size else None
                return (a - 1, a) if a > 0 else None

            self.apply_edit(low, high, "", span)

    # --- starting sessions --------------------------------------------------------------------

    def begin(self, spans: list[tuple[int, int]], alternatives: int, gap_fill: bool = False) -> None:
        self.before_accept = None
        self.session = EditSession(self.editor, spans)
        self.sessions += 1
        self.step = 0
        self.alternatives, self.alternative = alternatives, 0
        self.regions = [_Region(start, self.user[start:end]) for start, end in spans]

    @precondition(lambda self: self.session is None)
    @rule(anchor=FRACTION, position=FRACTION, alternatives=st.integers(1, 3))
    def start_rewrite(self, anchor, position, alternatives):
        """Ctrl+K: rewrite the selection, or infill at the cursor (the window rejects a running session first)."""
        low, high = self.select(anchor, position)
        self.begin([(low, high)], alternatives)

    @precondition(lambda self: self.session is None and bool(self.gaps()))
    @rule()
    def start_gap_fill(self):
        self.begin([(gap.start, gap.end) for gap in self.gaps()], 1, gap_fill=True)

    def gaps(self):
        try:
            return find_gaps(self.user)
        except ValueError:
            return []

    # --- the worker's news --------------------------------------------------------------------

    def draft_text(self, region: int, alternative: int, final: bool, data) -> str:
        filler = data.draw(st.text(alphabet="xy \n\r", max_size=6), label="filler")
        if final:
            return data.draw(st.sampled_from([f"«{self.sessions}.{region}.{alternative}»{filler}", ""]), label="result")
        return f"¤{self.step}¤{filler}"

    def texts(self, final: bool, data) -> list[list[str]]:
        return [
            [self.draft_text(r, a, final, data) for a in range(self.alternatives)] for r in range(len(self.regions))
        ]

    @precondition(lambda self: self.session is not None and self.session.state == "running")
    @rule(data=st.data())
    def draft_arrives(self, data):
        self.step += 1
        texts = self.texts(False, data)
        drafts = drafts_of(texts, self.step, final=False)
        self.session.receive(drafts)
        for _ in range(3):  # the frame timer (0 ms in these tests) draws it
            QApplication.processEvents()
        self.show_passing(drafts)

    def show_passing(self, drafts: tuple[Draft, ...]) -> None:
        """A passing draft is shown with its undecided positions and missing lines as noise."""
        shown = with_noise(drafts, [region.original for region in self.regions])
        self.show([[candidate.text for candidate in draft.candidates] for draft in shown])

    def show(self, texts: list[list[str]]) -> None:
        for region, alternatives in zip(self.regions, texts):
            if self.alternative == self.alternatives:  # after the last alternative the cycle shows the original
                region.shown = region.original
            else:
                shown = as_qt_stores_it(alternatives[min(self.alternative, len(alternatives) - 1)])
                ends_a_line = region.original.endswith("\n") and shown and not shown.endswith("\n")
                region.shown = shown + "\n" if ends_a_line else shown  # whole lines stay whole lines
        self.redo = []
        self.before_accept = None

    @precondition(lambda self: self.session is not None and self.session.state == "running")
    @rule(data=st.data())
    def result_arrives(self, data):
        self.step += 1
        texts = self.texts(True, data)
        self.results = texts
        self.session.finish(drafts_of(texts, self.step, final=True))
        if all(not text.strip() for alternatives in texts for text in alternatives):  # nothing written: it ends
            assert self.session.state == "ended"
            self.end_session()
            return
        self.show(texts)

    @precondition(lambda self: self.session is not None and self.session.state == "running")
    @rule()
    def wrong_number_of_drafts(self):
        self.session.receive(drafts_of([["¤bad¤"]] * (len(self.regions) + 1), self.step + 1, final=False))
        for _ in range(3):
            QApplication.processEvents()
        assert self.session.state == "ended"
        self.end_session()

    @precondition(lambda self: self.session is not None and self.session.state == "running")
    @rule(failure=st.booleans())
    def worker_gives_up(self, failure):
        if failure:
            self.session.fail(RuntimeError("the worker raised"))
        else:
            self.session.cancelled()
        self.end_session()

    @precondition(lambda self: bool(self.ended))
    @rule(data=st.data())
    def late_news_from_an_ended_session(self, data):
        old = data.draw(st.sampled_from(self.ended), label="old session")
        old.receive(drafts_of([["¤late¤"]] * len(old.originals), 99, final=False))
        old.finish(drafts_of([["«late»"]] * len(old.originals), 100, final=True))
        old.fail(RuntimeError("late"))
        QApplication.processEvents()

    # --- the user's decisions -----------------------------------------------------------------

    @precondition(lambda self: self.session is not None and self.session.state == "ready")
    @rule(by_key=st.booleans(), then_undo=st.booleans())
    def accept(self, by_key, then_undo):
        before = self.user
        if by_key:
            send_key(self.editor, Qt.Key.Key_Tab)
        else:
            self.session.accept()
        accepted = self.expected_display()
        self.end_session()
        self.set_user(accepted)
        self.redo = []
        self.before_accept = before if accepted != before else None
        if then_undo:
            self.undo()

    @precondition(lambda self: self.session is not None)
    @rule(by_key=st.booleans())
    def reject(self, by_key):
        if by_key:
            send_key(self.editor, Qt.Key.Key_Escape)
        else:
            self.session.reject()
        self.end_session()
        self.before_accept = None

    @precondition(lambda self: self.session is not None and self.session.state == "ready")
    @rule(forward=st.booleans())
    def cycle(self, forward):
        send_key(self.editor, Qt.Key.Key_BracketRight if forward else Qt.Key.Key_BracketLeft, ALT)
        self.alternative = (self.alternative + (1 if forward else -1)) % (self.alternatives + 1)
        self.show(self.results)

    @rule(redo=st.booleans())
    def undo_or_redo(self, redo):
        """Ctrl+Z / Ctrl+Shift+Z; during a session they reject it and change nothing else."""
        if redo:
            self.redo_step()
        else:
            self.undo()

    def undo(self):
        before = document_text(self.editor.document())
        had_undo = self.editor.document().isUndoAvailable()
        send_key(self.editor, Qt.Key.Key_Z, CONTROL)
        if self.session is not None:  # Ctrl+Z during a session rejects it and undoes nothing
            self.end_session()
            self.before_accept = None
            return
        after = document_text(self.editor.document())
        assert after in self.seen, "undo brought back a text the user never had"
        if self.before_accept is not None:
            assert after == self.before_accept, "undo after accept did not restore the document"
        self.before_accept = None
        if had_undo:
            self.redo.append(before)
        self.set_user(after)

    def redo_step(self):
        had_redo = self.editor.document().isRedoAvailable()
        send_key(self.editor, Qt.Key.Key_Z, CONTROL | SHIFT)
        self.before_accept = None
        if self.session is not None:
            self.end_session()
            return
        after = document_text(self.editor.document())
        assert had_redo or not self.redo, "the redo history was lost without a draft or an edit"
        if self.redo:
            assert after == self.redo.pop()
        assert after in self.seen
        self.set_user(after)

    @precondition(lambda self: self.session is None)
    @rule()
    def walk_history(self):
        """Undo to the start and redo back: every state is one the user had."""
        document = self.editor.document()
        start, undos = document_text(document), 0
        while document.isUndoAvailable():
            document.undo()
            undos += 1
            assert document_text(document) in self.seen, "a draft reached the undo history"
        for _ in range(undos):
            document.redo()
            assert document_text(document) in self.seen, "a draft reached the redo history"
        assert document_text(document) == start

    @invariant()
    def recovery_copy_is_the_users_text(self):
        """The recovery copy (written as the timer would) holds the user's text, never a draft."""
        copy = recovery.decode_copy(recovery.encode_copy(Document(self.editor)))
        assert copy.text == self.user

    # --- after every step ---------------------------------------------------------------------

    @invariant()
    def document_is_the_users_text_with_drafts_in_the_regions(self):
        assert document_text(self.editor.document()) == self.expected_display()

    @invariant()
    def saving_sees_only_the_users_text(self):
        assert self.editor.saved_text() == self.user

    @invariant()
    def session_state_matches(self):
        if self.session is None:
            assert self.editor.session is None
        else:
            assert self.editor.session is self.session and self.session.state in ("running", "ready")
            shown = self.expected_display()
            assert self.session.spans() == [(position_of(shown, a), position_of(shown, b)) for a, b in self.display_spans()]
            assert self.session.originals == [region.original for region in self.regions]

    def teardown(self):
        if self.editor.session is not None:
            self.editor.session.reject()
        self.editor.deleteLater()
        QApplication.processEvents()


@pytest.fixture
def immediate_frames(monkeypatch):
    """Draw every draft on the next event-loop pass: no frame wait, no animation pacing."""
    monkeypatch.setattr(pacing, "FRAME_MS", 0)
    monkeypatch.setattr(pacing, "MIN_PASS_MS", 0)


def test_sessions_never_lose_or_leak_text(qapp, immediate_frames):
    run_state_machine_as_test(
        SessionMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )


class RealModelMachine(SessionMachine):
    """The same machine, with drafts from the tiny real DiffusionGemma instead of synthetic ones."""

    backend = None  # set by the test
    GAP_TOKENS = 3

    def begin(self, spans, alternatives, gap_fill=False):
        super().begin(spans, alternatives, gap_fill)
        seed = self.sessions
        if not gap_fill:
            (start, end), = spans
            original = self.user[start:end]
            request = InfillRequest(
                prefix=self.user[:start], suffix=self.user[end:], max_new_tokens=4, init_text=original or None,
                strength=0.8 if original else 1.0, steps=3, seed=seed, n_alternatives=alternatives,
            )
            self.stream = iter(self.backend.stream([request]))
        else:
            gaps = self.gaps()
            template = TemplateRequest(segments_of(self.user, gaps), (self.GAP_TOKENS,) * len(gaps), steps=3, seed=seed)
            self.stream = iter(self.backend.stream_template(template))

    def next_drafts(self) -> tuple[Draft, ...]:
        return next(self.stream)

    @precondition(lambda self: self.session is not None and self.session.state == "running")
    @rule()
    def draft_arrives(self):
        drafts = self.next_drafts()
        if all(draft.final for draft in drafts):
            self.deliver_result(drafts)
            return
        self.session.receive(drafts)
        for _ in range(3):
            QApplication.processEvents()
        self.show_passing(drafts)

    @precondition(lambda self: self.session is not None and self.session.state == "running")
    @rule()
    def result_arrives(self):
        last = None
        for last in self.stream:
            pass
        self.deliver_result(last)

    def deliver_result(self, drafts) -> None:
        self.results = [[candidate.text for candidate in draft.candidates] for draft in drafts]
        self.session.finish(drafts)
        self.show(self.results)


def test_sessions_with_the_real_tiny_model(qapp, immediate_frames, tiny_backend):
    RealModelMachine.backend = tiny_backend
    run_state_machine_as_test(
        RealModelMachine,
        settings=settings(
            max_examples=int(os.environ.get("SFUMATO_STRESS_REAL_EXAMPLES", "15")),
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )


class Flaky:
    """Wraps a backend; the first ``failures`` runs raise on their second pass (a crash in the worker)."""

    def __init__(self, backend, failures: int = 1):
        self.backend = backend
        self.info = backend.info
        self.failures = failures

    def _maybe_fail(self, stream):
        for passes, drafts in enumerate(stream):
            if passes == 1 and self.failures:
                self.failures -= 1
                raise RuntimeError("the worker exploded")
            yield drafts

    def stream(self, requests, cancel=None):
        return self._maybe_fail(self.backend.stream(requests, cancel))

    def stream_template(self, template, cancel=None):
        return self._maybe_fail(self.backend.stream_template(template, cancel))


TEXT = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"


def editor_with(qtbot, text: str) -> CodeEditor:
    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.setPlainText(text)
    editor.document().setModified(False)
    return editor


def select_return_line(editor: CodeEditor) -> None:
    cursor = editor.textCursor()
    cursor.setPosition(19)
    cursor.setPosition(31, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)


def outcome_of(qtbot, session) -> str:
    outcomes = []
    session.ended.connect(lambda outcome, message: outcomes.append((outcome, message)))
    qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=30000)
    return outcomes[0][0] if outcomes else session.state


def test_a_worker_that_raises_mid_run_leaves_the_document_and_the_next_request_works(qtbot, qasync_loop, tiny_backend):  # noqa: F811
    engine = make_engine(qasync_loop, Flaky(tiny_backend), qtbot)
    starter = EditStarter(engine, InfillOptions(max_new_tokens=6, steps=3), DEFAULT_SESSION_KEYS)
    editor = editor_with(qtbot, TEXT)
    select_return_line(editor)
    assert outcome_of(qtbot, starter.rewrite(editor)) == "failed"
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable() and not editor.document().isModified()
    select_return_line(editor)
    session = starter.rewrite(editor)
    assert outcome_of(qtbot, session) == "ready"
    session.accept()
    assert document_text(editor.document()) != TEXT
    editor.undo()
    assert document_text(editor.document()) == TEXT
    engine.stop()


def test_a_worker_stopped_mid_run_leaves_the_document_and_a_restarted_one_works(qtbot, qasync_loop):  # noqa: F811
    backend = FakeBackend()
    backend.hold.set()
    engine = make_engine(qasync_loop, backend, qtbot)
    starter = EditStarter(engine, InfillOptions(), DEFAULT_SESSION_KEYS)
    editor = editor_with(qtbot, TEXT)
    select_return_line(editor)
    session = starter.rewrite(editor)
    qtbot.waitUntil(lambda: session.has_draft, timeout=10000)
    engine.stop()  # as when the model is reloaded or the app quits mid-run
    qtbot.waitUntil(lambda: session.state == "ended", timeout=10000)
    assert document_text(editor.document()) == TEXT and not editor.document().isUndoAvailable()
    engine.start(lambda: FakeBackend(), "fake")
    qtbot.waitUntil(lambda: engine.info is not None, timeout=10000)
    select_return_line(editor)
    session = starter.rewrite(editor)
    assert outcome_of(qtbot, session) == "ready"
    session.accept()
    assert document_text(editor.document()) == TEXT[:19] + FakeBackend.result(0) + TEXT[31:]
    engine.stop()


def test_characters_beyond_u_ffff_before_the_region_keep_every_position_right(qtbot, qasync_loop):  # noqa: F811
    """Qt counts UTF-16 code units, Python code points: an emoji before the region must not shift it."""
    engine = make_engine(qasync_loop, FakeBackend(), qtbot)
    starter = EditStarter(engine, InfillOptions(), DEFAULT_SESSION_KEYS)
    text = "😀 𝔘 abc def\n[MASK] end 🎉\n"
    editor = editor_with(qtbot, text)
    start = text.index("abc") + 2  # two emoji: two more Qt positions than Python indices
    cursor = editor.textCursor()
    cursor.setPosition(start)
    cursor.setPosition(start + 3, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)
    session = starter.rewrite(editor)
    assert session.originals == ["abc"]
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    assert editor.saved_text() == text  # what Save and the recovery copy write while the draft is shown
    session.accept()
    assert document_text(editor.document()) == text.replace("abc", FakeBackend.result(0))
    editor.undo()
    assert document_text(editor.document()) == text
    session = starter.fill_gaps(editor)
    assert session.originals == ["[MASK]"]
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    assert editor.saved_text() == text
    session.accept()
    assert document_text(editor.document()) == text.replace("[MASK]", FakeBackend.result(0))
    engine.stop()
