"""Hot exit: unsaved documents are copied, never with a draft, and come back byte for byte after a crash."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QSettings

from test_app_support import qasync_loop  # noqa: F401 - fixture

from sfumato.app import fileio, recovery
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text
from sfumato.app.document import Document
from sfumato.app.mainwindow import MainWindow
from sfumato.app.session import EditSession
from sfumato.model.api import Candidate, Draft, TokenState

REPO = Path(__file__).resolve().parent.parent
# Tabs, a no-break space, a line separator, trailing blanks, CJK, an emoji, no final newline.
TRICKY = "def f():\n\treturn 'café 中文 😀'  \n\n\u00a0x = 1\u2028y\n   "


def untitled(qtbot, text: str) -> Document:
    editor = CodeEditor()
    qtbot.addWidget(editor)
    mime = QMimeData()
    mime.setText(text)
    editor.insertFromMimeData(mime)  # typed: the document is modified
    return Document(editor)


def copies(folder: Path) -> list[recovery.RecoveredDocument]:
    return [recovery.decode_copy(path.read_bytes()) for path in sorted(folder.glob("*.recovery"))]


def test_unsaved_documents_are_copied_and_saved_ones_are_not(qtbot, tmp_path):
    edited = untitled(qtbot, TRICKY)
    saved_path = tmp_path / "saved.txt"
    saved_path.write_text("on disk\n")
    saved = Document.open(str(saved_path), CodeEditor())
    qtbot.addWidget(saved.editor)
    store = recovery.Recovery(lambda: [edited, saved], tmp_path / "recovery")
    store.snapshot()
    [copy] = copies(store.folder)
    assert copy.text == TRICKY and copy.path is None
    store.close()


def test_a_copy_follows_edits_and_goes_once_the_document_is_saved_or_closed(qtbot, tmp_path):
    document = untitled(qtbot, "first")
    open_documents = [document]
    store = recovery.Recovery(lambda: open_documents, tmp_path / "recovery")
    store.snapshot()
    document.editor.insertPlainText(" second")
    store.snapshot()
    assert [copy.text for copy in copies(store.folder)] == ["first second"]
    document.save(str(tmp_path / "now-saved.txt"))
    store.snapshot()
    assert copies(store.folder) == []
    document.editor.insertPlainText(" third")
    store.snapshot()
    assert copies(store.folder)[0].path == str(tmp_path / "now-saved.txt")
    open_documents.clear()  # the tab was closed (its changes discarded)
    store.snapshot()
    assert copies(store.folder) == []
    store.close()
    assert not store.folder.exists()


def test_a_copy_goes_the_moment_its_document_is_saved(qtbot, tmp_path):
    """A crash (kill) right after Ctrl+S, before the next tick, offered back the text just saved."""
    document = untitled(qtbot, "draft of a letter")
    store = recovery.Recovery(lambda: [document], tmp_path / "recovery", interval_ms=3_600_000)
    store.snapshot()
    assert len(copies(store.folder)) == 1
    document.save(str(tmp_path / "letter.txt"))
    assert copies(store.folder) == []  # no tick came in between
    document.editor.insertPlainText(" more")
    store.snapshot()
    assert len(copies(store.folder)) == 1
    document.editor.undo()  # back to the saved text
    assert copies(store.folder) == []
    store.close()


def test_a_copy_never_holds_a_draft(qtbot, tmp_path):
    document = untitled(qtbot, "keep this text\n")
    store = recovery.Recovery(lambda: [document], tmp_path / "recovery")
    session = EditSession(document.editor, [(5, 9)])
    draft = "DRAFT\r\nTEXT"
    session.finish((Draft(1, (Candidate(draft, tuple(TokenState(ch, 0.5, True) for ch in draft)),), True),))
    assert "DRAFT" in document_text(document.editor.document())
    store.snapshot()
    assert [copy.text for copy in copies(store.folder)] == ["keep this text\n"]
    session.reject()
    store.close()


def test_a_running_editors_folder_is_not_offered_and_a_clean_quit_leaves_nothing(qtbot, tmp_path):
    root = tmp_path / "recovery"
    document = untitled(qtbot, "unsaved")
    store = recovery.Recovery(lambda: [document], root)
    store.snapshot()
    assert recovery.find_orphans(root) == []
    document.editor.document().setModified(False)  # saved (or discarded) before quitting
    store.close()
    assert list(root.iterdir()) == []


def test_a_quit_with_unsaved_documents_keeps_them_for_the_next_start(qtbot, tmp_path):
    root = tmp_path / "recovery"
    document = untitled(qtbot, TRICKY)
    recovery.Recovery(lambda: [document], root).close()
    [orphan] = recovery.find_orphans(root)
    assert [copy.text for copy in orphan.documents] == [TRICKY]
    orphan.keep()


def test_unreadable_copies_are_left_alone(tmp_path):
    folder = tmp_path / "recovery" / "1-dead"
    folder.mkdir(parents=True)
    (folder / "1.recovery").write_bytes(b"\x00garbage without a header")
    assert recovery.find_orphans(tmp_path / "recovery") == []
    assert (folder / "1.recovery").exists()


CRASHING_EDITOR = """
import sys
from PySide6.QtCore import QMimeData, QTimer
from sfumato.app import application, mainwindow

shown = mainwindow.first_show

def first_show(window):
    shown(window)
    def type_and_wait():
        document = window.tabs.open_path(sys.argv[1])
        mime = QMimeData()
        mime.setText(sys.argv[2])
        document.editor.selectAll()
        document.editor.insertFromMimeData(mime)
        print("typed", flush=True)
    QTimer.singleShot(200, type_and_wait)

mainwindow.first_show = first_show
application.run([], str(sys.argv[3]))
"""


def wait_for(condition, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_after_kill_9_the_next_start_restores_the_text_byte_for_byte(qtbot, qasync_loop, tmp_path):  # noqa: F811
    root = tmp_path / "recovery"
    path = tmp_path / "notes.txt"
    path.write_bytes(b"old line\r\nsecond\r\n")  # CRLF: the format must come back too
    environment = dict(os.environ, SFUMATO_RECOVERY_DIR=str(root), QT_QPA_PLATFORM="offscreen",
                       HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_EDITOR, str(path), TRICKY, str(tmp_path / "no-model")],
        cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout.readline().strip() == "typed"

        def copied() -> bool:
            found = list(root.glob("*/*.recovery"))
            return bool(found) and recovery.decode_copy(found[0].read_bytes()).text == TRICKY

        assert wait_for(copied), "no recovery copy appeared"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert path.read_bytes() == b"old line\r\nsecond\r\n"  # nothing was saved: the copy is all there is

    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.tabs.new_document()
    [orphan] = recovery.find_orphans(root)
    [restored] = recovery.restore(window, orphan)
    orphan.discard()
    assert document_text(restored.editor.document()) == TRICKY
    assert restored.path == str(path) and restored.format == fileio.TextFormat("utf-8", False, "\r\n")
    assert restored.is_modified() and window.tabs.documents() == [restored]
    assert window.tabs.save(restored)  # the file is as the crashed editor last saw it: no question
    assert path.read_bytes() == fileio.encode(TRICKY, restored.format)
    assert list(root.iterdir()) == []


def crashed_with_unsaved_text(qtbot, path):
    """The recovery folder an editor left when it died with "unsaved " typed at the start of ``path``."""
    root = path.parent / "recovery"
    crashed = Document.open(str(path), CodeEditor())
    qtbot.addWidget(crashed.editor)
    crashed.editor.insertPlainText("unsaved ")
    recovery.Recovery(lambda: [crashed], root).close()
    return root


def restored_in_a_new_window(qtbot, qasync_loop, root):  # noqa: F811
    """A new window (its settings beside ``root``) and the one document restored into it."""
    window = MainWindow(qasync_loop, QSettings(str(root.parent / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    [orphan] = recovery.find_orphans(root)
    [restored] = recovery.restore(window, orphan)
    orphan.discard()
    return window, restored


def test_a_file_changed_after_the_crash_is_not_overwritten_without_asking(qtbot, qasync_loop, tmp_path, monkeypatch):  # noqa: F811
    from PySide6.QtWidgets import QMessageBox

    path = tmp_path / "shared.txt"
    path.write_text("before the crash\n")
    root = crashed_with_unsaved_text(qtbot, path)
    path.write_text("written by another program after the crash\n")
    window, restored = restored_in_a_new_window(qtbot, qasync_loop, root)
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: QMessageBox.StandardButton.Cancel)
    assert not window.tabs.save(restored)
    assert path.read_text() == "written by another program after the crash\n"
    assert document_text(restored.editor.document()) == "unsaved before the crash\n"
    restored.editor.document().setModified(False)
    window.ai.worker.stop()


@pytest.mark.parametrize("button, restored, kept", [("Restore", True, False), ("Discard", False, False), ("Not Now", False, True)])
def test_the_offer_to_restore(qtbot, qasync_loop, tmp_path, button, restored, kept):  # noqa: F811
    """What two editors left (both killed, as by a logout) is offered in one question."""
    root = tmp_path / "recovery"
    crashed = [untitled(qtbot, TRICKY), untitled(qtbot, "second window\n")]
    for document in crashed:
        recovery.Recovery(lambda d=document: [d], root).close()  # left behind, as by a crash
    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.tabs.new_document()
    store = recovery.Recovery(window.tabs.documents, root, parent=window)
    recovery.offer_restore(window, store)
    box = store.box
    assert box is not None and "2 unsaved documents" in box.text()
    choice = next(b for b in box.buttons() if b.text() == button)
    choice.click()
    assert store.box is box  # no second question
    texts = [document_text(d.editor.document()) for d in window.tabs.documents()]
    assert sorted(texts) == (sorted([TRICKY, "second window\n"]) if restored else [""])
    others = [folder for folder in root.iterdir() if folder != store.folder]
    assert len(others) == (2 if kept else 0)
    if restored:  # copied again in this session's folder before the old copies went
        assert sorted(copy.text for copy in copies(store.folder)) == sorted([TRICKY, "second window\n"])
    for document in window.tabs.documents():
        document.editor.document().setModified(False)
    store.close()
    window.ai.worker.stop()


def test_without_a_usable_recovery_folder_the_editor_still_starts(qtbot, qasync_loop, tmp_path, monkeypatch):  # noqa: F811
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the recovery folder should be")
    monkeypatch.setenv(recovery.ROOT_VARIABLE, str(blocker / "recovery"))
    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    assert recovery.attach(window) is None
    assert "No crash recovery" in window.statusBar().currentMessage()
    assert recovery.find_orphans(blocker / "recovery") == []
    window.ai.worker.stop()


def test_a_copy_that_cannot_be_written_is_retried_on_the_next_tick(qtbot, tmp_path, monkeypatch):
    document = untitled(qtbot, "precious")
    store = recovery.Recovery(lambda: [document], tmp_path / "recovery")
    real_write = fileio.write_atomic

    def disk_full(path, data, mode=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio, "write_atomic", disk_full)
    store.snapshot()
    assert copies(store.folder) == []
    monkeypatch.setattr(fileio, "write_atomic", real_write)
    store.snapshot()
    assert [copy.text for copy in copies(store.folder)] == ["precious"]
    store.close()


def test_the_recovery_folder_is_private_and_its_copies_are_the_owners_alone(qtbot, tmp_path):
    """A copy holds what the user typed (perhaps of a 0600 file): no other user may read it,
    whatever the umask, and a root left readable by an older version is closed too."""
    source = tmp_path / "secret.txt"
    source.write_text("token = 1\n")
    os.chmod(source, 0o600)
    document = Document.open(str(source), CodeEditor())
    qtbot.addWidget(document.editor)
    document.editor.insertPlainText("more ")
    root = tmp_path / "recovery"
    root.mkdir(mode=0o755)
    old = os.umask(0o022)
    try:
        store = recovery.Recovery(lambda: [document], root)
        store.snapshot()
    finally:
        os.umask(old)
    [copy] = store.folder.glob("*.recovery")
    assert [stat.S_IMODE(os.stat(path).st_mode) for path in (root, store.folder, copy)] == [0o700, 0o700, 0o600]
    store.close()


def test_a_restored_file_takes_its_names_language_prose_review_changed_lines_and_watch(qtbot, qasync_loop, tmp_path):  # noqa: F811
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n")
    for args in (("init", "-q"), ("add", "notes.md"), ("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "notes")):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    window, restored = restored_in_a_new_window(qtbot, qasync_loop, crashed_with_unsaved_text(qtbot, path))
    restored.editor.document().setModified(False)  # closing the window asks nothing, whatever fails below
    window.ai.worker.stop()
    assert window.tabs.current_document() is restored
    assert window.language_label.text() == "Markdown" and restored.editor.prose
    assert restored.editor.line_marks == {0: "modified"}  # "unsaved " typed before the crash
    assert str(path) in window.tabs.watcher.files()  # another program's write is noticed


def test_a_document_whose_copy_is_slow_is_copied_less_often_and_on_quit_whatever_its_size(qtbot, tmp_path, monkeypatch):
    """A copy is made on the UI thread: a 40 MB document's took a second, every 2 s while typing."""
    document = untitled(qtbot, "first")
    store = recovery.Recovery(lambda: [document], tmp_path / "recovery")
    slow = recovery.encode_copy

    def slow_copy(copied):
        time.sleep(0.1)  # its next copy waits COPY_SHARE times as long: 5 s
        return slow(copied)

    monkeypatch.setattr(recovery, "encode_copy", slow_copy)
    store.snapshot()
    document.editor.insertPlainText(" second")
    store.snapshot()
    assert [copy.text for copy in copies(store.folder)] == ["first"]  # not yet due
    store.close()  # quitting copies every change
    assert [copy.text for copy in copies(store.folder)] == ["first second"]
