"""An editor session on a served model: a real ``transformers serve``, then every bad server.

What is asserted is the user's document: byte-identical after every failure and every cancel,
with one line in the status bar; the result in place after an accept.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from test_app_support import qasync_loop, select, window_with_model  # noqa: F401 - fixture

from sfumato.app.codeeditor import document_text
from sfumato.app.inlinebox import InlineBox
from sfumato.model.remote.addresses import PRIVATE, PUBLIC
from sfumato.model.remote.credentials import origin
from sfumato.model.remote.backend import RemoteOptions, connect
from remote_servers import BAD_SERVERS, CHAT, Asker, ReplayServer, chat_chunk, stream_reply

TEXT = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"
REGION = (29, 50)  # "return width * height"'s "width * height" and the line end


def ctrl_k(qtbot, editor):
    """Ctrl+K as the user presses it; a served chat model asks for an instruction: Enter runs it."""
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    box = editor.viewport().findChild(InlineBox)
    if box is not None and box.isVisible():
        qtbot.keyClick(box, Qt.Key.Key_Return)
    return editor.session


@contextmanager
def fresh_editor(window):
    """A new tab holding TEXT with REGION selected; closed afterwards, as a user would."""
    document = window.tabs.new_document()
    document.editor.setPlainText(TEXT)
    document.editor.document().setModified(False)
    select(document.editor, *REGION)
    window.activateWindow()  # Ctrl+K is the window's shortcut: it needs the window active
    document.editor.setFocus()
    QApplication.processEvents()
    try:
        yield document.editor
    finally:
        document.editor.end_session()
        document.editor.document().setModified(False)
        window.tabs.close_tab(document.editor)


def assert_untouched(editor):
    assert document_text(editor.document()) == TEXT
    assert not editor.document().isModified()
    assert not editor.document().isUndoAvailable()


def close_window(window):
    for document in window.tabs.documents():
        document.editor.end_session()
        document.editor.document().setModified(False)
    window.close()
    window.deleteLater()


# ---- a real server -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_window(qapp, qasync_loop, transformers_server, tmp_path_factory):  # noqa: F811
    window = window_with_model(qapp, qasync_loop, transformers_server.url, tmp_path_factory.mktemp("settings"), max_new_tokens=8)
    yield window
    close_window(window)


def test_a_rewrite_on_the_server_lands_in_place_and_is_one_undo_step(qtbot, served_window):
    with fresh_editor(served_window) as editor:
        session = ctrl_k(qtbot, editor)
        qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=120000)
        assert session.state == "ready"
        result = session.texts()[0]
        qtbot.keyClick(editor, Qt.Key.Key_Tab)
        assert document_text(editor.document()) == TEXT[: REGION[0]] + result + TEXT[REGION[1] :]
        qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        assert document_text(editor.document()) == TEXT


def test_esc_mid_stream_restores_the_text_and_the_server_sees_the_disconnect(qtbot, served_window, transformers_server):
    served_window.settings.max_new_tokens = 3000
    served_window.apply_settings()
    try:
        before = transformers_server.cancels_seen()
        with fresh_editor(served_window) as editor:
            cursor = editor.textCursor()  # an infill at the cursor asks for max_new_tokens (a rewrite
            cursor.setPosition(REGION[1])  # asks for about its selection's length, done before Esc)
            editor.setTextCursor(cursor)
            session = ctrl_k(qtbot, editor)
            qtbot.waitUntil(lambda: session.has_draft, timeout=120000)
            qtbot.keyClick(editor, Qt.Key.Key_Escape)
            assert_untouched(editor)
        qtbot.waitUntil(lambda: transformers_server.cancels_seen() == before + 1, timeout=60000)
    finally:
        served_window.settings.max_new_tokens = 8
        served_window.apply_settings()


# ---- bad servers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replay_window(qapp, qasync_loop, tmp_path_factory):  # noqa: F811
    server = ReplayServer()
    window = window_with_model(qapp, qasync_loop, server.url, tmp_path_factory.mktemp("settings"), max_new_tokens=16)
    yield window, server
    close_window(window)
    server.stop()


@pytest.mark.parametrize("case", sorted(BAD_SERVERS))
def test_a_bad_server_leaves_the_document_byte_identical_with_one_line(qtbot, replay_window, case):
    window, server = replay_window
    replies, expected = BAD_SERVERS[case]
    server.replies.update(replies)
    with fresh_editor(window) as editor:
        session = ctrl_k(qtbot, editor)
        qtbot.waitUntil(lambda: session.state == "ended", timeout=60000)
        assert_untouched(editor)
    message = window.statusBar().currentMessage()
    assert expected in message and "\n" not in message


def test_a_good_answer_after_bad_ones_still_lands(qtbot, replay_window):
    window, server = replay_window
    server.replies[CHAT] = stream_reply([chat_chunk("w * h"), chat_chunk("\n", "stop")])
    with fresh_editor(window) as editor:
        session = ctrl_k(qtbot, editor)
        qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=60000)
        assert session.texts() == ["w * h\n"]
        qtbot.keyClick(editor, Qt.Key.Key_Tab)
        assert document_text(editor.document()) == TEXT[: REGION[0]] + "w * h\n" + TEXT[REGION[1] :]


# ---- privacy, waiting, the server's status line, the Server settings -----------------------------


def test_nothing_is_sent_until_the_user_allows_a_non_loopback_server(qtbot, replay_window):
    window, server = replay_window
    server.replies[CHAT] = stream_reply([chat_chunk("w * h", "stop")])
    consent = window.ai.consent
    consent._kinds = {origin(server.url): PRIVATE}  # as if the server were on the LAN
    try:
        consent.ask = Asker(False)
        sent = len(server.posts("/v1/chat/completions"))
        with fresh_editor(window) as editor:
            assert ctrl_k(qtbot, editor) is None
            assert_untouched(editor)
        assert len(server.posts("/v1/chat/completions")) == sent
        assert "Nothing was sent" in window.statusBar().currentMessage()
        consent.ask = Asker(True)
        with fresh_editor(window) as editor:
            session = ctrl_k(qtbot, editor)
            qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=60000)
            assert session.texts() == ["w * h"]
        assert consent.ask.asked == ["Send text to a server?"]
        assert window.store.value("servers_allowed") in ([server.url[: -len("/v1")]], server.url[: -len("/v1")])
        consent.ask = Asker()  # remembered: never asked again
        with fresh_editor(window) as editor:
            session = ctrl_k(qtbot, editor)
            qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=60000)
    finally:
        consent._kinds = {}
        window.settings.servers_allowed.clear()


def test_a_server_whose_name_now_resolves_elsewhere_gets_nothing_and_the_next_edit_asks(qtbot, replay_window, monkeypatch):
    """DNS rebinding: where the server was found when the user was (not) asked is no promise; the
    address each connection reaches is held to the user's answers."""
    import sfumato.model.remote.connection as connection

    window, server = replay_window
    server.replies[CHAT] = stream_reply([chat_chunk("w * h", "stop")])
    consent = window.ai.consent
    sent = len(server.requests)
    monkeypatch.setattr(connection, "peer_kind", lambda address: PUBLIC)  # the name points to the internet now
    try:
        consent.ask = Asker()  # where the server was found (this machine) asks nothing
        with fresh_editor(window) as editor:
            session = ctrl_k(qtbot, editor)
            qtbot.waitUntil(lambda: session.state == "ended", timeout=60000)
            assert_untouched(editor)
        assert "on the internet, where you have not allowed text to go" in window.statusBar().currentMessage()
        assert len(server.requests) == sent  # not one byte
        consent.ask = Asker(False)
        with fresh_editor(window) as editor:
            assert ctrl_k(qtbot, editor) is None
            assert_untouched(editor)
        assert consent.ask.asked == ["Send text to a server?"] and len(server.requests) == sent
    finally:
        consent._kinds = {}


def test_a_server_not_yet_allowed_is_not_contacted_at_all_until_the_user_says_yes(qtbot, qapp, qasync_loop, tmp_path):  # noqa: F811
    from PySide6.QtCore import QSettings

    from sfumato.app.mainwindow import MainWindow

    server = ReplayServer()
    server.replies[CHAT] = stream_reply([chat_chunk("w * h", "stop")])
    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), model_spec=server.url)
    try:
        window.ai.consent._kinds = {origin(server.url): PRIVATE}  # as if the server were on the LAN
        window.show()
        window.ai.start_engine()
        assert not window.ai.worker.loading and "not connected until you allow it" in window.statusBar().currentMessage()
        window.ai.consent.ask = Asker(False)
        with fresh_editor(window) as editor:
            assert ctrl_k(qtbot, editor) is None
            assert_untouched(editor)
        assert server.requests == []  # not even GET /v1/models
        window.ai.consent.ask = Asker(True)
        with fresh_editor(window) as editor:
            session = ctrl_k(qtbot, editor)
            qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=60000)
            assert session.texts() == ["w * h"]
        sent = [(method, path) for method, path, _, _ in server.requests]
        assert sent[0] == ("GET", "/v1/models") and sent[-1] == CHAT  # discovery, then the request
    finally:
        close_window(window)
        server.stop()


def test_the_status_bar_says_waiting_then_shows_the_servers_round_trip(qtbot, replay_window):
    window, server = replay_window
    release = threading.Event()

    def slow(handler):
        release.wait(30)
        stream_reply([chat_chunk("w * h"), chat_chunk(None, "stop")])(handler)

    server.replies[CHAT] = slow
    with fresh_editor(window) as editor:
        session = ctrl_k(qtbot, editor)
        assert window.statusBar().currentMessage().startswith(f"Waiting for server 127.0.0.1:{server.port}")
        release.set()
        qtbot.waitUntil(lambda: session.state in ("ready", "ended"), timeout=60000)
        assert session.state == "ready"
    qtbot.waitUntil(lambda: "round trip" in window.ai.model_label.text(), timeout=10000)
    label = window.ai.model_label.text()
    assert label.startswith(f"Server 127.0.0.1:{server.port} · ") and "tokens/s" in label
    assert label.endswith("unencrypted · drafts are not streamed by this server")


def test_the_server_settings_choose_the_served_model(qtbot, replay_window):
    window, server = replay_window
    settings, override = window.settings, window.ai.model_override
    try:
        window.ai.model_override = None
        settings.use_server, settings.server_url, settings.server_model = True, server.url, "no-such-model"
        window.ai.start_engine()
        qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=60000)
        assert "does not serve 'no-such-model' (it serves: replay-model)" in window.ai.worker.error
        settings.server_model = "replay-model"
        window.ai.start_engine()
        qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=60000)
        assert window.ai.worker.info.backend == "remote" and window.ai.worker.info.name == "replay-model"
        assert window.ai.worker.info.served
    finally:
        settings.use_server, settings.server_url, settings.server_model = False, "", ""
        window.ai.model_override = override
        window.ai.start_engine()
        qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=60000)


def test_a_draft_stream_animates_in_the_region_each_chunk_replacing_the_last(qtbot, replay_window):
    """Mercury-style ``"diffusing": true``: the region shows each whole draft in turn, then the result."""
    window, server = replay_window
    drafts = ["q# x1 zz", "w * x1 z", "w * h"]
    steps = [threading.Event() for _ in drafts]

    def stepped(handler):
        handler.start_events()
        for text, step in zip(drafts, steps):
            step.wait(30)
            handler.event(chat_chunk(text))
        handler.event(chat_chunk(None, "stop"))

    server.replies[CHAT] = stepped
    override = window.ai.model_override
    window.ai.worker.start(lambda: connect(server.url, RemoteOptions(draft_stream=True)), "draft stream")
    qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=60000)
    try:
        with fresh_editor(window) as editor:
            session = ctrl_k(qtbot, editor)
            for text, step in zip(drafts, steps):
                step.set()
                qtbot.waitUntil(lambda t=text: document_text(editor.document()) == TEXT[: REGION[0]] + t + TEXT[REGION[1] :], timeout=30000)
                shown = window.statusBar().currentMessage()
                assert "pass" not in shown.lower()  # a server reports no passes: none are invented
                assert shown.startswith("Receiving · ") or text == drafts[-1]  # the last one may already be done
            qtbot.waitUntil(lambda: session.state == "ready", timeout=30000)
            assert server.posts("/v1/chat/completions")[-1]["diffusing"] is True
            qtbot.keyClick(editor, Qt.Key.Key_Escape)
            assert_untouched(editor)
    finally:
        window.ai.model_override = override
        window.ai.start_engine()
        qtbot.waitUntil(lambda: window.ai.worker.info is not None, timeout=60000)
