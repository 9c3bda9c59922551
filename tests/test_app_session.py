"""Infill sessions against a scripted backend: the rules of docs/architecture.md, "The rules that protect the user's text"."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from test_app_support import FakeBackend, make_engine, qasync_loop, select  # noqa: F401 - fixture

from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text
from sfumato.app.infill import InfillOptions, EditStarter
from sfumato.app.commandkeys import DEFAULT_SESSION_KEYS
from sfumato.app.session import EditSession
from sfumato.model.api import Candidate, Draft, TokenState

TEXT = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"


@pytest.fixture
def setup(qtbot, qasync_loop):  # noqa: F811
    def build(text=TEXT, **backend_options):
        backend = FakeBackend(**backend_options)
        engine = make_engine(qasync_loop, backend, qtbot)
        options = InfillOptions(alternatives=backend_options.get("alternatives") or 1)
        starter = EditStarter(engine, options, DEFAULT_SESSION_KEYS)
        editor = CodeEditor()
        qtbot.addWidget(editor)
        editor.setPlainText(text)
        editor.document().setModified(False)
        return editor, starter, backend, engine

    yield build


def wait_ready(qtbot, session):
    qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=10000)


def start_held_rewrite(qtbot, editor, starter, backend):
    """Rewrite characters 19-31 with the backend held after its first draft: the session stays running."""
    backend.hold.set()
    select(editor, 19, 31)
    session = starter.rewrite(editor)
    qtbot.waitUntil(lambda: session.has_draft, timeout=10000)
    return session


def test_reject_restores_the_document_byte_for_byte(qtbot, setup):
    editor, starter, _, _ = setup()
    select(editor, 19, 31)
    session = starter.rewrite(editor, strength=0.7)
    wait_ready(qtbot, session)
    assert session.state == "ready"
    assert FakeBackend.result(0) in document_text(editor.document())
    undo_steps = editor.document().availableUndoSteps()
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isModified()
    assert editor.document().availableUndoSteps() < undo_steps
    assert not editor.document().isUndoAvailable()
    assert not editor.document().isRedoAvailable()
    assert editor.session is None


def test_accept_is_one_undo_step_and_ctrl_z_restores(qtbot, setup):
    editor, starter, _, _ = setup()
    select(editor, 19, 31)
    session = starter.rewrite(editor, strength=0.7)
    wait_ready(qtbot, session)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    expected = TEXT[:19] + FakeBackend.result(0) + TEXT[31:]
    assert document_text(editor.document()) == expected
    assert editor.is_modified()
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert document_text(editor.document()) == expected


def rewrite_to(qtbot, setup, monkeypatch, result: str, end: int):
    """Rewrite characters 19-``end`` with a backend that writes ``result``; the editor and the finished session."""
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: result))
    editor, starter, _, _ = setup()
    select(editor, 19, end)
    session = starter.rewrite(editor, strength=0.7)
    wait_ready(qtbot, session)
    return editor, session


def test_a_result_with_cr_line_breaks_is_reported_as_it_lands(qtbot, setup, monkeypatch):
    """A model may write CR LF or CR; the document keeps \\n, and the session says what it kept."""
    editor, session = rewrite_to(qtbot, setup, monkeypatch, "one\r\ntwo\rthree", 31)
    assert session.texts() == ["one\ntwo\nthree"]
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == TEXT[:19] + "one\ntwo\nthree" + TEXT[31:]


def test_a_result_equal_to_the_original_but_for_its_line_breaks_changes_nothing(qtbot, setup, monkeypatch):
    """Nothing to review: the session ends at once and says so (a fix that found nothing to fix)."""
    editor, session = rewrite_to(qtbot, setup, monkeypatch, "return a + b\r\n", 32)
    assert session.state == "ended" and session.outcome == "unchanged" and editor.session is None
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isModified()
    _, changed = rewrite_to(qtbot, setup, monkeypatch, "return b + a\n", 32)
    assert changed.state == "ready"  # one that changes something is reviewed


def test_typing_before_the_region_while_it_denoises_lands_the_result_in_place(qtbot, setup):
    editor, starter, backend, _ = setup()
    session = start_held_rewrite(qtbot, editor, starter, backend)
    cursor = editor.textCursor()
    cursor.setPosition(0)
    editor.setTextCursor(cursor)
    qtbot.keyClicks(editor, "# hi")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    backend.hold.clear()
    for _ in range(backend.passes):
        backend.advance()
    wait_ready(qtbot, session)
    assert session.state == "ready"
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    edited = "# hi\n" + TEXT
    assert document_text(editor.document()) == edited[:24] + FakeBackend.result(0) + edited[36:]
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert document_text(editor.document()) == edited


def test_brackets_closed_and_typed_over_before_a_denoising_region_leave_the_draft_in_place(qtbot, setup):
    editor, starter, backend, _ = setup()
    session = start_held_rewrite(qtbot, editor, starter, backend)
    cursor = editor.textCursor()
    cursor.setPosition(16)  # in the indentation, just before the region
    editor.setTextCursor(cursor)
    qtbot.keyClicks(editor, "[")
    assert editor.textCursor().position() == 17
    qtbot.keyClicks(editor, "]")
    edited = TEXT[:16] + "[]" + TEXT[16:]
    assert session.text_without_draft() == edited and session.state == "running"
    qtbot.keyClicks(editor, "(")
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)  # the empty pair goes in one key
    assert session.text_without_draft() == edited
    backend.hold.clear()
    for _ in range(backend.passes):
        backend.advance()
    wait_ready(qtbot, session)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == edited[:21] + FakeBackend.result(0) + edited[33:]


def test_typing_after_the_region_keeps_the_draft_out_of_the_undo_history(qtbot, setup):
    editor, starter, _, _ = setup()
    select(editor, 0, 3)
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    cursor = editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    editor.setTextCursor(cursor)
    qtbot.keyClicks(editor, "x = 1")
    assert session.state == "ready"
    assert session.text_without_draft() == TEXT + "x = 1"
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == TEXT + "x = 1"
    history = []
    while editor.document().isUndoAvailable():
        editor.undo()
        history.append(document_text(editor.document()))
    assert history[-1] == TEXT
    assert all(state.startswith(TEXT) and FakeBackend.result(0) not in state for state in history)


def test_typing_inside_the_region_cancels_cleanly(qtbot, setup):
    editor, starter, backend, _ = setup()
    session = start_held_rewrite(qtbot, editor, starter, backend)
    outcomes = []
    session.ended.connect(lambda outcome, message: outcomes.append(outcome))
    start, end = session.spans()[0]
    cursor = editor.textCursor()
    cursor.setPosition(start + 2)
    editor.setTextCursor(cursor)
    qtbot.keyClicks(editor, "Z")
    assert outcomes == ["cancelled"]
    assert editor.session is None
    text = document_text(editor.document())
    assert text.replace("Z", "", 1) == TEXT
    assert backend.passes > 1 and session.job.cancelled
    editor.undo()
    assert document_text(editor.document()) == TEXT


def test_fifty_rapid_rewrites_and_rejects_leave_the_document_intact(qtbot, setup):
    editor, starter, backend, _ = setup()
    for i in range(50):
        select(editor, i % 20, 25)
        session = starter.rewrite(editor)
        if i % 3:
            qtbot.wait(1)
        qtbot.keyClick(editor, Qt.Key.Key_Escape)
        assert session.state == "ended"
    qtbot.wait(50)
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()
    assert not editor.document().isModified()


def test_gap_fill_replaces_every_gap_in_one_undo_step(qtbot, setup):
    template = "name = [MASK]\nvalue = [MASK:5] + [MASK]\n"
    editor, starter, backend, _ = setup(text=template)
    session = starter.fill_gaps(editor)
    assert len(backend_requests(qtbot, backend)[0].max_new_tokens) == 3
    wait_ready(qtbot, session)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    filled = document_text(editor.document())
    assert "[MASK" not in filled
    assert filled == f"name = {FakeBackend.result(0)}\nvalue = {FakeBackend.result(1)} + {FakeBackend.result(2)}\n"
    editor.undo()
    assert document_text(editor.document()) == template


def test_trying_a_gap_fill_again_refills_the_template_from_its_gaps(qtbot, setup):
    template = "name = [MASK]\nvalue = [MASK:5]\n"
    editor, starter, backend, _ = setup(text=template)
    first = starter.fill_gaps(editor)
    wait_ready(qtbot, first)
    second = starter.again(first)
    assert first.state == "ended" and editor.session is second
    wait_ready(qtbot, second)
    assert backend.requests[1] == replace(backend.requests[0], first_alternative=1)  # the next fill, not the same again
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == f"name = {FakeBackend.result(0)}\nvalue = {FakeBackend.result(1)}\n"
    editor.undo()
    assert document_text(editor.document()) == template


def test_trying_a_gap_fill_again_sends_the_template_as_it_is_now(qtbot, setup):
    template = "name = [MASK]\nvalue = [MASK:5]\n"
    editor, starter, backend, _ = setup(text=template)
    first = starter.fill_gaps(editor)
    wait_ready(qtbot, first)
    editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClicks(editor, "done = True")  # typed outside the gaps while the fill is reviewed
    second = starter.again(first)
    wait_ready(qtbot, second)
    assert backend.requests[1].segments == ("name = ", "\nvalue = ", "\ndone = True")
    assert backend.requests[1].max_new_tokens == backend.requests[0].max_new_tokens == (32, 5)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == template + "done = True"


def backend_requests(qtbot, backend):
    qtbot.waitUntil(lambda: bool(backend.requests), timeout=10000)
    return backend.requests


def test_a_failing_model_leaves_the_document_as_it_was(qtbot, setup):
    editor, starter, _, _ = setup(fail=True)
    select(editor, 19, 31)
    session = starter.rewrite(editor)
    messages = []
    session.ended.connect(lambda outcome, message: messages.append((outcome, message)))
    qtbot.waitUntil(lambda: session.state == "ended", timeout=10000)
    assert messages[0][0] == "failed" and "fake model broke" in messages[0][1]
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()


def test_alternatives_cycle_and_the_chosen_one_is_accepted(qtbot, setup):
    editor, starter, _, _ = setup(alternatives=3)
    select(editor, 0, 3)
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    assert session.alternatives == 3
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(editor, Qt.Key.Key_BracketLeft, Qt.KeyboardModifier.AltModifier)
    assert document_text(editor.document()).startswith(FakeBackend.result(0, 1))
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == FakeBackend.result(0, 1) + TEXT[3:]
    assert editor.document().availableUndoSteps() > 0
    editor.undo()
    assert document_text(editor.document()) == TEXT


def test_after_the_last_alternative_the_cycle_shows_the_original_to_compare(qtbot, setup):
    editor, starter, _, _ = setup()
    select(editor, 19, 31)
    session = starter.rewrite(editor, strength=0.7)
    wait_ready(qtbot, session)
    with_result = TEXT[:19] + FakeBackend.result(0) + TEXT[31:]
    assert document_text(editor.document()) == with_result and not session.showing_original
    qtbot.keyClick(editor, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.AltModifier)
    assert document_text(editor.document()) == TEXT and session.showing_original
    assert session.spans() == [(19, 31)] and session.state == "ready"
    qtbot.keyClick(editor, Qt.Key.Key_BracketLeft, Qt.KeyboardModifier.AltModifier)
    assert document_text(editor.document()) == with_result
    qtbot.keyClick(editor, Qt.Key.Key_BracketLeft, Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)  # keeping the original changes nothing
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isModified() and not editor.document().isUndoAvailable()


def test_a_result_that_breaks_a_python_file_is_said_so_before_it_is_accepted(qtbot, setup):
    from sfumato.app.reviewhint import ReviewHint
    from sfumato.app.syntax_check import python_error

    editor, starter, _, _ = setup(alternatives=2)
    editor.syntax_check = python_error  # as a .py file's highlighter sets it
    said = []
    select(editor, 19, 31)  # `return a + b`: the fake model's text is no Python
    session = starter.rewrite(editor, strength=0.7)
    session.progress.connect(said.append)
    wait_ready(qtbot, session)
    assert "Careful: with this the file no longer parses (line 2: " in said[-1]
    [hint] = editor.viewport().findChildren(ReviewHint)
    assert hint.text().startswith("<b>No longer parses: line 2: ")  # beside the result, where the eyes are
    session.cycle(1)
    assert said[-1].startswith("Careful: with this the file no longer parses") and "Alternative 2 of 2" in said[-1]
    assert "No longer parses" in hint.text()
    session.cycle(1)
    assert "parses" not in said[-1] and "parses" not in hint.text()  # the original, to compare
    session.dismiss()
    editor.syntax_check = None  # plain text: nothing to check
    session = starter.rewrite(editor, strength=0.7)
    session.progress.connect(said.append)
    wait_ready(qtbot, session)
    assert "parses" not in said[-1]


def test_infill_at_the_cursor_inserts_at_the_cursor(qtbot, setup):
    editor, starter, backend, _ = setup()
    cursor = editor.textCursor()
    cursor.setPosition(15)
    editor.setTextCursor(cursor)
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    request = backend.requests[0][0]
    assert request.prefix == TEXT[:15] and request.suffix == TEXT[15:] and request.init_text is None
    session.accept()
    assert document_text(editor.document()) == TEXT[:15] + FakeBackend.result(0) + TEXT[15:]


def test_infill_at_a_blank_line_that_ends_its_block_asks_for_the_rest_of_the_block(qtbot, setup):
    text = "def mean(values):\n    total = sum(values)\n    \n    return total\n\n\ndef area(w, h):\n    \n\nprint(1)\n"
    editor, starter, backend, _ = setup(text)
    for position, one_line in ((text.index("    \n") + 4, True), (text.rindex("    \n") + 4, False)):
        backend.requests.clear()
        cursor = editor.textCursor()
        cursor.setPosition(position)
        editor.setTextCursor(cursor)
        session = starter.rewrite(editor)
        wait_ready(qtbot, session)
        assert backend.requests[0][0].one_line is one_line  # the body of mean goes on below; area's is empty
        session.reject()


def test_a_definition_written_at_the_end_of_a_python_file_is_unfinished_not_broken(qtbot, setup, monkeypatch):
    from sfumato.app.syntax_check import python_error

    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: "def perimeter(r):"))
    text = "def area(r):\n    return r * r\n\n\n"
    editor, starter, _, _ = setup(text)
    editor.syntax_check = python_error
    said = []
    cursor = editor.textCursor()
    cursor.setPosition(len(text))
    editor.setTextCursor(cursor)
    session = starter.rewrite(editor)  # Ctrl+K on the last line: the body comes next
    session.progress.connect(said.append)
    wait_ready(qtbot, session)
    assert "parses" not in said[-1]
    session.dismiss()
    select(editor, text.index("return"), text.index("\n\n"))  # a rewrite that drops the body
    session = starter.rewrite(editor, strength=0.7)
    session.progress.connect(said.append)
    wait_ready(qtbot, session)
    assert "Careful: with this the file no longer parses" in said[-1]


def test_saved_text_never_holds_a_draft(qtbot, setup):
    editor, starter, backend, _ = setup()
    session = start_held_rewrite(qtbot, editor, starter, backend)
    assert document_text(editor.document()) != TEXT
    assert editor.saved_text() == TEXT
    assert not editor.is_modified()
    session.reject()


def test_the_settings_reach_the_request(qtbot, setup):
    editor, starter, backend, _ = setup()
    starter.options.sampler_bound = 0.8
    starter.options.steps = 5
    starter.options.max_new_tokens = 20
    select(editor, 19, 31)
    session = starter.rewrite(editor, strength=0.4, instruction="shorter")
    wait_ready(qtbot, session)
    request = backend.requests[0][0]
    assert (request.sampler_bound, request.steps, request.strength, request.instruction) == (0.8, 5, 0.4, "shorter")
    assert request.init_text == TEXT[19:31] and request.max_new_tokens >= 12 // 3
    session.reject()


def test_tab_while_denoising_neither_accepts_nor_indents(qtbot, setup):
    editor, starter, backend, _ = setup()
    session = start_held_rewrite(qtbot, editor, starter, backend)
    shown = document_text(editor.document())
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert session.state == "running" and document_text(editor.document()) == shown
    session.reject()
    assert document_text(editor.document()) == TEXT


def test_a_long_selection_gets_a_canvas_that_fits_it_whatever_the_infill_cap(qtbot, setup):
    long_text = "x = 1\n" * 200
    editor, starter, backend, _ = setup(text=long_text)
    starter.options.max_new_tokens = 16
    select(editor, 0, len(long_text))
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    assert backend.requests[0][0].max_new_tokens >= len(long_text) // 3
    session.reject()


def test_a_short_selection_may_grow_to_a_whole_line(qtbot, setup):
    editor, starter, backend, _ = setup(text="def half(a, b):\n    pass\n")
    select(editor, 20, 24)  # pass: a heavy rewrite writes the line again, and a body is longer
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    assert backend.requests[0][0].max_new_tokens == starter.options.max_new_tokens
    session.reject()


def test_a_finished_result_shows_its_keys_after_its_last_line_and_the_links_work(qtbot, setup):
    from sfumato.app.reviewhint import ReviewHint

    editor, starter, _, _ = setup()
    editor.resize(800, 300)
    editor.show()
    select(editor, 19, 31)
    session = starter.rewrite(editor, strength=0.7)
    wait_ready(qtbot, session)
    [hint] = editor.viewport().findChildren(ReviewHint)
    assert hint.isVisible() and "Accept" in hint.text() and "Tab" in hint.text() and "Original" in hint.text()
    end = QTextCursor(editor.document())
    end.setPosition(session.spans()[0][1])
    end.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    line = editor.cursorRect(end)
    assert hint.x() > line.right() and hint.geometry().contains(hint.x() + 1, line.center().y())  # after the line's text
    hint.linkActivated.emit("next")
    assert session.showing_original and "Result" in hint.text() and "Original" not in hint.text()
    hint.linkActivated.emit("reject")
    assert session.state == "ended" and document_text(editor.document()) == TEXT
    qtbot.waitUntil(lambda: not editor.viewport().findChildren(ReviewHint))


def test_line_commands_that_move_a_denoising_region_cancel_it_and_keep_the_users_text(qtbot, setup):
    editor, starter, backend, _ = setup()
    session = start_held_rewrite(qtbot, editor, starter, backend)  # "return a + b" on line 2
    cursor = editor.textCursor()
    cursor.setPosition(0)  # line 1: moving it down swaps it with the region's line
    editor.setTextCursor(cursor)
    editor.move_lines(down=True)
    assert session.state == "ended"
    lines = TEXT.split("\n")
    assert document_text(editor.document()) == "\n".join([lines[1], lines[0], *lines[2:]])
    editor.undo()
    assert document_text(editor.document()) == TEXT and not editor.document().isUndoAvailable()


def test_commenting_lines_above_a_denoising_region_leaves_it_running(qtbot, setup):
    editor, starter, backend, _ = setup()
    editor.comment_marker = ("#", "")
    session = start_held_rewrite(qtbot, editor, starter, backend)
    cursor = editor.textCursor()
    cursor.setPosition(0)
    editor.setTextCursor(cursor)
    editor.toggle_comment()
    assert session.state == "running" and session.text_without_draft() == "# " + TEXT
    editor.duplicate_lines()
    assert session.state == "running" and session.text_without_draft().startswith("# def add(a, b):\n# def add(a, b):\n")


def test_a_results_line_gives_its_speed_last_and_no_tokens_per_pass_when_its_passes_wrote_nothing(qtbot):
    """The choices first: a narrow window cuts the status line's end, and the speed matters least."""
    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.setPlainText(TEXT)
    lines = []
    written = Candidate("return b + a", (TokenState("return b + a", 1.0, True),))
    for passes, generated, expected in ((3, 6, " · 2.0 tokens/pass · "), (3, 0, " · 0 tokens/s")):
        session = EditSession(editor, [(19, 31)])
        session.progress.connect(lines.append)
        session.finish((Draft(passes, (written,), True, passes, generated),))
        qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
        assert expected in lines[-1] and lines[-1].endswith("tokens/s")
        assert lines[-1].index("Alt+]") < lines[-1].index("tokens/s")
        session.reject()
    assert "0.0 tokens/pass" not in " ".join(lines) and document_text(editor.document()) == TEXT


def test_esc_after_cycling_a_multi_line_rewrite_scrolled_away_warns_nothing(qtbot, setup, monkeypatch, qtlog):
    """Esc selects the original, which scrolls the view back to it; the ended review's hint must
    not place itself on the regions' detached anchors (QTextCursor::setPosition(-1))."""
    monkeypatch.setattr(FakeBackend, "result", staticmethod(
        lambda index, alternative=0: "\n".join(f"line {alternative}.{i}" for i in range(3 + 5 * alternative))))
    text = "".join(f"row {i:02}\n" for i in range(60))
    editor, starter, _, _ = setup(text, alternatives=3)
    editor.resize(300, 200)
    editor.show()
    select(editor, 7 * 30, 7 * 33 - 1)
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    for _ in range(3):
        qtbot.keyClick(editor, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.AltModifier)
    editor.verticalScrollBar().setValue(0)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == text
    assert editor.verticalScrollBar().value() > 0, "the original was scrolled back into view"
    assert [record.message for record in qtlog.records] == []


def test_a_rewrite_of_one_long_line_stays_one_line_while_it_settles(qtbot, setup, monkeypatch):
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: "short\nlines\nof\nnoise\n" * 3))
    line = "A long line of prose. " * 10
    text = f"# Title\n{line}\nnext line\n"
    editor, starter, backend, _ = setup(text)
    backend.hold.set()
    select(editor, 8, 8 + len(line))
    session = starter.rewrite(editor)
    for _ in range(backend.passes - 1):
        qtbot.waitUntil(lambda: session.has_draft, timeout=10000)
        assert editor.blockCount() == text.count("\n") + 1, "the region grew and pushed the text below down"
        backend.advance()
    wait_ready(qtbot, session)
    assert session.texts() == [FakeBackend.result(0)], "the result itself is never changed"


def test_lines_selected_down_to_the_start_of_the_next_line_keep_it_apart(qtbot, setup, monkeypatch):
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: "new one\nnew two"))
    editor, starter, backend, _ = setup("one\ntwo\nthree\n")
    select(editor, 0, 8)
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    assert document_text(editor.document()) == "new one\nnew two\nthree\n"
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == "new one\nnew two\nthree\n"


@pytest.mark.parametrize("key", [Qt.Key.Key_Tab, Qt.Key.Key_Escape], ids=["accept", "reject"])
def test_the_start_of_a_long_rewritten_line_is_in_view_during_and_after_the_review(qtbot, setup, monkeypatch, key):
    line = "A long line of Markdown prose that runs far past the right edge of a narrow window. " * 3
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: line.upper()))
    editor, starter, _, _ = setup(f"# Title\n{line}\nnext\n")
    editor.resize(300, 200)
    editor.show()
    select(editor, 8, 8 + len(line))  # the cursor at the end: the view scrolled sideways to it
    bar = editor.horizontalScrollBar()
    assert bar.value() > 0
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    assert bar.value() == 0
    qtbot.keyClick(editor, key)
    assert session.state == "ended" and bar.value() == 0


def test_a_save_during_the_review_of_a_long_line_leaves_the_view_at_its_start(qtbot, setup, monkeypatch):
    """Seen under Xvfb (packaging/review_check.py): Ctrl+S took the draft out and put it back, and
    the cursor put back at the end of the long result scrolled the view sideways to it."""
    line = "A long line of Markdown prose that runs far past the right edge of a narrow window. " * 3
    monkeypatch.setattr(FakeBackend, "result", staticmethod(lambda index, alternative=0: line.upper()))
    editor, starter, _, _ = setup(f"# Title\n{line}\nnext\n")
    editor.resize(300, 200)
    editor.show()
    select(editor, 8, 8 + len(line))
    session = starter.rewrite(editor)
    wait_ready(qtbot, session)
    bar = editor.horizontalScrollBar()
    assert bar.value() == 0
    with session.draft_taken_out():  # what a save does
        assert document_text(editor.document()) == f"# Title\n{line}\nnext\n"
    assert session.texts() == [line.upper()] and bar.value() == 0


def test_the_rest_after_an_accepted_word_keeps_each_tokens_confidence():
    from sfumato.app.partial_accept import next_word_end, rest_of

    candidate = Candidate(" total = 1", (TokenState(" total", 0.9, True), TokenState(" =", 0.5, True), TokenState(" 1", 0.2, True)))
    assert candidate.text[: next_word_end(candidate.text)] == " total"
    rest = rest_of(candidate, 3)  # a cut inside a token keeps that token's confidence for its part
    assert rest.text == "tal = 1"
    assert [(t.text, t.confidence) for t in rest.tokens] == [("tal", 0.9), (" =", 0.5), (" 1", 0.2)]
    assert next_word_end("(values)\n") == 1 and next_word_end("\n    return x") == len("\n    return")
    assert next_word_end("   ") == 0
    assert next_word_end(" don't stop") == len(" don't") and next_word_end(" well-known -x") == len(" well-known")
