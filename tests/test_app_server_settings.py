"""Settings > Server, the privacy questions and the server status line (no server needed)."""

from __future__ import annotations

import threading

import keyring
import pytest
from keyring.backend import KeyringBackend
from PySide6.QtCore import QSettings, QTimer

from test_app_support import FakeBackend, qasync_loop, select, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.app.server_consent import ServerConsent
from sfumato.app.server_status import server_status_line
from sfumato.app.settings import Settings
from sfumato.model.remote.addresses import LOOPBACK, PRIVATE, PUBLIC, address_kind, literal_kind
from sfumato.model.remote.backend import RoundTrip
from remote_servers import Asker


class MemoryKeyring(KeyringBackend):
    """A keyring that keeps passwords in a dict: the OS keyring is not there in CI."""

    priority = 1

    def __init__(self):
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.passwords.get((service, username))

    def set_password(self, service, username, password):
        self.passwords[(service, username)] = password

    def delete_password(self, service, username):
        self.passwords.pop((service, username), None)


@pytest.fixture
def memory_keyring(monkeypatch):
    monkeypatch.delenv("SFUMATO_API_KEY", raising=False)
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


def test_addresses_are_sorted_into_loopback_private_and_public():
    assert address_kind("http://127.0.0.1:8000/v1") == LOOPBACK
    assert address_kind("http://localhost:8000/v1") == LOOPBACK
    assert address_kind("http://[::1]:8000/v1") == LOOPBACK
    assert address_kind("http://192.168.1.20:8000/v1") == PRIVATE
    assert address_kind("http://10.0.0.5/v1") == PRIVATE
    assert address_kind("https://8.8.8.8/v1") == PUBLIC
    assert address_kind("https://sfumato-test.invalid/v1") == PUBLIC  # unresolvable: the careful answer
    assert literal_kind("http://[::1]:8000/v1") == LOOPBACK and literal_kind("http://gpu-box.lan:8000/v1") is None


def test_a_loopback_server_needs_no_question():
    asker = Asker()
    assert ServerConsent(Settings(), asker).allows("http://127.0.0.1:8000/v1")
    assert asker.asked == []


def test_a_private_server_is_asked_about_once_and_remembered():
    settings, asker = Settings(), Asker(True)
    consent = ServerConsent(settings, asker)
    assert consent.allows("http://192.168.1.20:8000/v1") and consent.allows("http://192.168.1.20:8000/v1")
    assert asker.asked == ["Send text to a server?"]
    assert settings.servers_allowed == ["http://192.168.1.20:8000"]


def test_servers_allowed_when_less_was_sent_are_asked_about_again(tmp_path):
    old = QSettings(str(tmp_path / "old.ini"), QSettings.Format.IniFormat)
    old.setValue("servers_allowed", ["http://192.168.1.20:8000"])  # answered before the folder went too
    old.sync()
    assert Settings.load(old).servers_allowed == []
    current = QSettings(str(tmp_path / "current.ini"), QSettings.Format.IniFormat)
    Settings(servers_allowed=["http://192.168.1.20:8000"]).save(current)
    assert Settings.load(current).servers_allowed == ["http://192.168.1.20:8000"]


def test_plain_http_to_a_public_server_is_asked_about_once_more():
    settings, asker = Settings(), Asker(True, True)
    consent = ServerConsent(settings, asker)
    assert consent.allows("http://8.8.8.8:8000/v1") and consent.allows("http://8.8.8.8:8000/v1")
    assert asker.asked == ["Send text to a server?", "Unencrypted connection"]
    https = Asker(True)
    assert ServerConsent(Settings(), https).allows("https://8.8.8.8/v1") and https.asked == ["Send text to a server?"]


def test_a_no_sends_nothing_and_is_asked_again_next_time():
    settings = Settings()
    consent = ServerConsent(settings, Asker(False, True, False))
    assert not consent.allows("http://8.8.8.8/v1")
    assert settings.servers_allowed == []
    assert not consent.allows("http://8.8.8.8/v1")  # yes to sending, no to plain http
    assert settings.plain_http_allowed == []


def test_a_dot_localhost_name_is_looked_up_not_trusted():
    """Only an address (or ``localhost`` itself) is known without a lookup; ``evil.localhost``
    may resolve anywhere (an /etc/hosts line, a DNS search domain)."""
    assert literal_kind("http://evil.localhost:8000/v1") is None and literal_kind("http://localhost:8000/v1") == LOOPBACK
    asker = Asker(False)
    consent = ServerConsent(Settings(), asker, kind_of=lambda url: PUBLIC)
    assert not consent.located("http://evil.localhost:8000/v1")
    assert not consent.allows("http://evil.localhost:8000/v1") and asker.asked == ["Send text to a server?"]


def test_the_connection_may_reach_only_addresses_of_the_kinds_the_user_allowed():
    """What a name resolved to when the question was asked is no promise for the connection (DNS
    rebinding): the kind of the address connected to is checked against the user's answers, and
    one outside them replaces the kind found before, so the next request asks about it."""
    settings, url = Settings(), "http://gpu-box.lan:8000/v1"
    asker = Asker(True)
    consent = ServerConsent(settings, asker, kind_of=lambda url: LOOPBACK)  # it resolved to this machine
    assert consent.allows(url) and asker.asked == []
    admits = consent.admits(url)
    assert admits(LOOPBACK) and not admits(PRIVATE)  # resolved again, elsewhere: not sent
    assert consent.allows(url) and asker.asked == ["Send text to a server?"]  # the next request asks
    assert admits(PRIVATE) and not admits(PUBLIC)  # plain http to the internet was never allowed
    asker.answers = [False]
    assert not consent.allows(url) and asker.asked[-1] == "Unencrypted connection"
    assert ServerConsent(Settings(servers_allowed=["https://gpu-box.lan:443"]), Asker()).admits("https://gpu-box.lan/v1")(PUBLIC)


def test_a_servers_name_is_resolved_off_the_ui_thread_and_asked_about_on_it(window, qtbot):
    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    events, asked_on, release = [], [], threading.Event()

    def dead_dns(url):  # a DNS that answers only when the test lets it
        release.wait(5)
        events.append("resolved")
        return PRIVATE

    consent = window.ai.consent
    consent.kind_of = dead_dns
    consent.ask = lambda title, question: asked_on.append(threading.current_thread()) or True
    window.ai._spec = "http://gpu-box.lan:8000/v1"  # as if the model were served from there
    editor = window.tabs.new_document().editor
    editor.setPlainText("alpha beta gamma\n")
    select(editor, 6, 10)
    try:
        QTimer.singleShot(0, lambda: events.append("tick"))
        window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 0.7))
        qtbot.waitUntil(lambda: "tick" in events, timeout=10000)
        assert events == ["tick"], "the UI thread must run while the name is resolved"
        assert editor.session is None and backend.requests == [] and asked_on == []  # nothing sent yet
    finally:
        release.set()
    qtbot.waitUntil(lambda: editor.session is not None, timeout=10000)
    assert asked_on == [threading.main_thread()] and events == ["tick", "resolved"]
    assert window.settings.servers_allowed == ["http://gpu-box.lan:8000"]
    editor.session.reject()
    window.ai.start(editor, lambda: window.ai.starter.rewrite(editor, 0.7))  # once per server
    assert editor.session is not None and events == ["tick", "resolved"] and len(asked_on) == 1
    editor.session.reject()


def test_the_status_line_names_the_server_speed_and_what_the_user_should_know():
    trip = RoundTrip(first_chunk_seconds=0.2, seconds=0.5, tokens=100, tokens_exact=True)
    line = server_status_line("gpu:8000", trip, encrypted=False, streams_drafts=False)
    assert line == "Server gpu:8000 · 0.50 s round trip · 200 tokens/s · unencrypted · drafts are not streamed by this server"
    assert server_status_line("api:443", None, encrypted=True, streams_drafts=True) == "Server api:443"


def test_server_settings_are_saved_but_the_api_key_only_in_the_keyring(qtbot, tmp_path, memory_keyring):
    from sfumato.app.settings_dialog import SettingsDialog

    dialog = SettingsDialog(Settings())
    qtbot.addWidget(dialog)
    page = dialog.server_page
    page.use_server.setChecked(True)
    page.url.setText("https://gpu-box:8443/v1")
    page.model.setText("dg")
    page.api_key.setText("sk-secret-42")
    dialog.accept()
    settings = dialog.result_settings()
    assert (settings.use_server, settings.server_url, settings.server_model) == (True, "https://gpu-box:8443/v1", "dg")
    assert settings.active_model_spec == "https://gpu-box:8443/v1"
    assert memory_keyring.passwords == {("sfumato", "https://gpu-box:8443"): "sk-secret-42"}
    path = tmp_path / "s.ini"
    settings.save(QSettings(str(path), QSettings.Format.IniFormat))
    assert "sk-secret-42" not in path.read_text()
    loaded = Settings.load(QSettings(str(path), QSettings.Format.IniFormat))
    assert (loaded.use_server, loaded.server_url, loaded.server_model) == (True, "https://gpu-box:8443/v1", "dg")


def test_a_server_url_without_v1_is_refused_by_the_dialog(qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from sfumato.app.settings_dialog import SettingsDialog

    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: warnings.append(args[2]))
    dialog = SettingsDialog(Settings())
    qtbot.addWidget(dialog)
    dialog.server_page.use_server.setChecked(True)
    dialog.server_page.url.setText("http://gpu-box:8000")
    dialog.accept()
    assert dialog.result() != dialog.DialogCode.Accepted.value and "end in /v1" in warnings[0]


def test_a_password_in_the_server_url_is_refused_and_never_kept(window, tmp_path):  # noqa: F811
    from sfumato.app.settings_dialog import SettingsDialog

    store = QSettings(str(tmp_path / "old.ini"), QSettings.Format.IniFormat)
    store.setValue("server_url", "http://bob:pa55word@gpu-box:8000/v1")  # written before this was refused
    store.sync()
    assert Settings.load(store).server_url == "http://gpu-box:8000/v1"
    dialog = SettingsDialog(Settings(), window)
    dialog.server_page.url.setText("http://bob:pa55word@gpu-box:8000/v1")
    assert "password out of the server URL" in dialog.server_page.problem()
    dialog.deleteLater()


def test_a_loading_line_never_shows_the_urls_password(window, qtbot):  # noqa: F811
    window.ai.model_override = "http://bob:pa55word@127.0.0.1:9/v1"  # nothing listens on port 9
    window.ai.start_engine()
    assert "Loading model http://127.0.0.1:9/v1" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=30000)
    assert "pa55word" not in window.ai.worker.error and "pa55word" not in window.ai.model_label.toolTip()
