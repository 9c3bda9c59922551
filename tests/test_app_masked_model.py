"""The editor animates a masked-diffusion model (a tiny random BERT) exactly as a DiffusionGemma one."""

from __future__ import annotations


import pytest

from test_app_support import qasync_loop, window_with_model  # noqa: F401 - fixture
from test_app_tiny_model import press_ctrl_k, select, wait_ready
from test_masked_diffusion import build_bert

from sfumato.app.textpositions import document_text
from sfumato.app.session import EditSession

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"


@pytest.fixture(scope="module")
def window(qapp, qasync_loop, tmp_path_factory, project_tokenizer):  # noqa: F811
    folder = build_bert(tmp_path_factory.mktemp("bert-app"), project_tokenizer)
    window = window_with_model(qapp, qasync_loop, str(folder), tmp_path_factory.mktemp("settings"), steps=4)
    assert window.ai.worker.info.backend == "masked-diffusion"
    yield window
    for document in window.tabs.documents():
        document.editor.document().setModified(False)
    window.close()


def test_a_masked_model_rewrite_is_animated_and_rejected_byte_for_byte(qtbot, window, monkeypatch):
    drawn = []
    original_receive = EditSession.receive

    def receive(session, drafts):
        drawn.append([token.accepted for token in drafts[0].tokens])
        original_receive(session, drafts)

    monkeypatch.setattr(EditSession, "receive", receive)
    document = window.tabs.new_document()
    editor = document.editor
    editor.setPlainText(TEXT)
    start = TEXT.index("width * height")
    select(editor, start, start + len("width * height"))
    session = press_ctrl_k(qtbot, window, editor)
    wait_ready(qtbot, session)
    assert len(drawn) >= 2  # passes were drawn in place, not only the result
    assert any(not all(flags) for flags in drawn)  # with unsettled (still masked) tokens
    session.reject()
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isUndoAvailable()


def test_a_masked_model_accept_is_one_undo_step(qtbot, window):
    document = window.tabs.new_document()
    editor = document.editor
    editor.setPlainText(TEXT)
    start = TEXT.index("2, 3")
    select(editor, start, start + 4)
    session = press_ctrl_k(qtbot, window, editor)
    wait_ready(qtbot, session)
    session.accept()
    editor.undo()
    assert document_text(editor.document()) == TEXT
