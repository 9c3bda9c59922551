"""The editor with an engine that trusts nothing it wrote: the result is shown, marked, and Esc undoes it."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt

from test_app_support import FakeBackend, qasync_loop, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.app.textpositions import document_text

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"
OTHER = "def volume(width, height, depth):\n    return area(width, height) * depth\n"


class Unsure(FakeBackend):
    """Its final drafts are not ``confident``, as the embedded engine's are when its tokens' mean
    probability is under its bar."""

    def _drafts(self, count, alternatives, step, final):
        drafts = super()._drafts(count, alternatives, step, final)
        return tuple(dataclasses.replace(draft, confident=not final) for draft in drafts)


def test_a_low_confidence_result_is_shown_marked_and_esc_leaves_the_text(qtbot, window):  # noqa: F811
    with_fake_model(window, qtbot, Unsure())
    window.ai.worker.slow_motion_ms = 0
    other = window.tabs.new_document()
    other.editor.setPlainText(OTHER)
    document = window.tabs.new_document()
    editor = document.editor
    editor.setPlainText(TEXT)
    editor.document().setModified(False)
    cursor = editor.textCursor()
    cursor.setPosition(len(TEXT))
    editor.setTextCursor(cursor)

    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    session = editor.session
    assert any("def volume" in snippet for snippet in session.request[0].context)  # the other open file
    qtbot.waitUntil(lambda: session.state != "running", timeout=10000)
    assert session.state == "ready" and session.low_confidence  # there to review, marked
    assert "Low confidence" in window.statusBar().currentMessage()
    assert document_text(editor.document()) != TEXT  # the result is in the document, under review
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert session.state == "ended"
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable() and not editor.document().isModified()
