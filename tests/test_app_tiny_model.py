"""The editor driving the real engine: a tiny random DiffusionGemma (``tiny_model_dir``).

Random weights write nonsense, so these tests assert what happens to the user's document
(restored, one undo step, result in the right place), never the text the model wrote.
"""

from __future__ import annotations


import pytest
from PySide6.QtCore import Qt

from test_app_support import qasync_loop, select, window_with_model  # noqa: F401 - fixture

from sfumato.app.textpositions import document_text
from sfumato.app.inlinebox import InlineBox
from sfumato.model.template import apply_fills, find_gaps

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"


@pytest.fixture(scope="module")
def window(qapp, qasync_loop, tiny_model_dir, tmp_path_factory):  # noqa: F811
    window = window_with_model(qapp, qasync_loop, str(tiny_model_dir), tmp_path_factory.mktemp("settings"), max_new_tokens=12)
    yield window
    for document in window.tabs.documents():
        if document.editor.session is not None:
            document.editor.session.reject()
        document.editor.document().setModified(False)
    window.close()
    window.deleteLater()


@pytest.fixture
def editor(window):
    window.ai.worker.slow_motion_ms = 0
    document = window.tabs.new_document()
    document.editor.setPlainText(TEXT)
    document.editor.document().setModified(False)
    yield document.editor
    if document.editor.session is not None:
        document.editor.session.reject()
    document.editor.document().setModified(False)
    window.tabs.close_tab(document.editor)


def press_ctrl_k(qtbot, window, editor):
    """Ctrl+K as the user presses it; with a selection, Enter in the strength box runs it."""
    had_selection = editor.textCursor().hasSelection()
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    if had_selection:
        box = editor.viewport().findChild(InlineBox)
        qtbot.keyClick(box, Qt.Key.Key_Return)
    return editor.session


def wait_ready(qtbot, session):
    qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=60000)
    assert session.state == "ready"


def test_reject_leaves_the_document_byte_identical(qtbot, window, editor):
    select(editor, 29, 50)
    session = press_ctrl_k(qtbot, window, editor)
    wait_ready(qtbot, session)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable() and not editor.document().isRedoAvailable()
    assert not editor.document().isModified()


def test_accept_is_one_undo_step_and_ctrl_z_restores_the_original(qtbot, window, editor):
    select(editor, 29, 50)
    session = press_ctrl_k(qtbot, window, editor)
    wait_ready(qtbot, session)
    result = session.texts()[0]
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == TEXT[:29] + result + TEXT[50:]
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()


def test_typing_before_the_region_while_it_denoises_lands_the_result_in_place(qtbot, window, editor):
    window.ai.worker.slow_motion_ms = 120
    select(editor, 29, 50)
    session = press_ctrl_k(qtbot, window, editor)
    qtbot.waitUntil(lambda: session.has_draft, timeout=60000)
    cursor = editor.textCursor()
    cursor.setPosition(0)
    editor.setTextCursor(cursor)
    qtbot.keyClicks(editor, "# note")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    wait_ready(qtbot, session)
    result = session.texts()[0]
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    edited = "# note\n" + TEXT
    assert document_text(editor.document()) == edited[:36] + result + edited[57:]
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert document_text(editor.document()) == edited


def test_typing_inside_the_region_cancels_cleanly(qtbot, window, editor):
    window.ai.worker.slow_motion_ms = 120
    select(editor, 29, 50)
    session = press_ctrl_k(qtbot, window, editor)
    qtbot.waitUntil(lambda: session.has_draft, timeout=60000)
    start, _ = session.spans()[0]
    cursor = editor.textCursor()
    cursor.setPosition(start + 1)
    editor.setTextCursor(cursor)
    qtbot.keyClick(editor, Qt.Key.Key_Q)
    assert session.state == "ended" and editor.session is None
    assert document_text(editor.document()) == TEXT[:30] + "q" + TEXT[30:]
    editor.undo()
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()


def test_fifty_rapid_ctrl_k_and_esc_leave_the_document_intact(qtbot, window, editor):
    for i in range(50):
        if i % 2:
            select(editor, i, i + 10)
        else:
            cursor = editor.textCursor()
            cursor.setPosition(i)
            editor.setTextCursor(cursor)
        session = press_ctrl_k(qtbot, window, editor)
        if i % 10 == 0:
            qtbot.waitUntil(lambda: session.has_draft or session.state != "running", timeout=60000)
        qtbot.keyClick(editor, Qt.Key.Key_Escape)
        assert session.state == "ended"
        assert document_text(editor.document()) == TEXT
    qtbot.wait(100)
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()
    assert not editor.document().isModified()


def test_gap_fill_replaces_every_gap(qtbot, window, editor):
    template = "name = [MASK:2]\nsize = [MASK:3] + [MASK:2]\n"
    editor.setPlainText(template)
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    session = editor.session
    wait_ready(qtbot, session)
    fills = session.texts()
    assert len(fills) == 3
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == apply_fills(template, find_gaps(template), fills)
    editor.undo()
    assert document_text(editor.document()) == template


def test_two_selections_are_rewritten_in_one_batch_and_land_in_their_places(qtbot, window, editor):
    editor.extra_cursors.select([(9, 14), (36, 41)])  # "width" in the signature and in the body
    session = window.ai.starter.rewrite(editor, strength=0.8)
    wait_ready(qtbot, session)
    first, second = session.texts()
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert document_text(editor.document()) == TEXT[:9] + first + TEXT[14:36] + second + TEXT[41:]
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert document_text(editor.document()) == TEXT
