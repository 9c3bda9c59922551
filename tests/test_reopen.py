"""The files open at the last close come back at the next start, cursors and tab included."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from test_app_support import qasync_loop, select  # noqa: F401 - fixture

from sfumato.app import recovery
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.textpositions import document_text
from sfumato.app.document import Document
from sfumato.app.mainwindow import MainWindow, open_files
from sfumato.app.reopen import KEY


def start(qtbot, loop, store, files=()):
    window = MainWindow(loop, store)
    qtbot.addWidget(window)
    open_files(window, list(files))
    window.show()
    return window


def test_the_next_start_reopens_the_files_with_their_selections_and_the_current_tab(qtbot, qasync_loop, tmp_path):  # noqa: F811
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    first, second, gone = tmp_path / "a.py", tmp_path / "b.txt", tmp_path / "c.txt"
    first.write_text("".join(f"line {i}\n" for i in range(400)))
    second.write_text("hello world\n")
    gone.write_text("soon deleted\n")
    window = start(qtbot, qasync_loop, store, [str(first), str(second), str(gone)])
    select(window.tabs.documents()[0].editor, 3000, 3005)
    window.tabs.documents()[0].editor.verticalScrollBar().setValue(100)  # the cursor scrolled out of view
    select(window.tabs.documents()[1].editor, 6, 11)
    window.tabs.new_document()  # untitled: nothing to reopen
    window.tabs.setCurrentIndex(0)
    window.close()
    gone.unlink()

    again = start(qtbot, qasync_loop, store)
    assert [d.path for d in again.tabs.documents()] == [str(first), str(second)]
    assert again.tabs.current_document().path == str(first)
    reopened = again.tabs.documents()[0].editor
    assert (reopened.textCursor().anchor(), reopened.textCursor().position()) == (3000, 3005)
    assert again.tabs.documents()[1].editor.textCursor().selectedText() == "world"
    qtbot.waitUntil(lambda: reopened.firstVisibleBlock().blockNumber() == 100)
    again.close()


def test_files_named_at_start_or_the_setting_off_open_nothing_else(qtbot, qasync_loop, tmp_path):  # noqa: F811
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    remembered, named = tmp_path / "a.txt", tmp_path / "b.txt"
    remembered.write_text("a\n")
    named.write_text("b\n")
    start(qtbot, qasync_loop, store, [str(remembered)]).close()
    window = start(qtbot, qasync_loop, store, [str(named)])
    assert [d.path for d in window.tabs.documents()] == [str(named)]
    window.settings.reopen_files = False
    window.close()
    window = start(qtbot, qasync_loop, store)
    assert [d.path for d in window.tabs.documents()] == [None]
    window.close()


def test_a_damaged_record_starts_with_an_untitled_document(qtbot, qasync_loop, tmp_path):  # noqa: F811
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    for damaged in ("{not json", '[{"path": 3}]', "7", '[{"path": "x"}]'):
        store.setValue(KEY, damaged)
        window = start(qtbot, qasync_loop, store)
        assert [d.path for d in window.tabs.documents()] == [None]
        window.close()


def test_a_recovered_copy_replaces_the_reopened_unmodified_tab_of_its_file(qtbot, qasync_loop, tmp_path):  # noqa: F811
    path = tmp_path / "notes.txt"
    path.write_text("saved\n")
    crashed = Document.open(str(path), CodeEditor())
    qtbot.addWidget(crashed.editor)
    crashed.editor.insertPlainText("unsaved ")
    root = tmp_path / "recovery"
    recovery.Recovery(lambda: [crashed], root).close()
    window = start(qtbot, qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), [str(path)])
    [orphan] = recovery.find_orphans(root)
    [restored] = recovery.restore(window, orphan)
    orphan.discard()
    assert window.tabs.documents() == [restored]
    assert document_text(restored.editor.document()) == "unsaved saved\n" and restored.is_modified()
    restored.editor.document().setModified(False)
    window.close()
