"""The editor with an engine that trusts nothing it wrote: the result is shown, marked, and Esc undoes it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from test_app_support import qasync_loop, window_with_ranker  # noqa: F401 - fixture

from sfumato.app.textpositions import document_text
from sfumato.model.rerank import DEFAULT, Ranker

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"
OTHER = "def volume(width, height, depth):\n    return area(width, height) * depth\n"


@pytest.fixture(scope="module")
def window(qapp, qasync_loop, tiny_model_dir, tmp_path_factory):  # noqa: F811
    with window_with_ranker(qapp, qasync_loop, tiny_model_dir, tmp_path_factory,
                            Ranker(DEFAULT.weights, bias=-20.0, confidence_bar=0.5)) as window:
        yield window


def test_a_low_confidence_result_is_shown_marked_and_esc_leaves_the_text(qtbot, window):
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
    qtbot.waitUntil(lambda: session.state != "running", timeout=60000)
    assert session.state == "ready" and session.low_confidence  # there to review, marked
    assert "Low confidence" in window.statusBar().currentMessage()
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert session.state == "ended"
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable() and not editor.document().isModified()
