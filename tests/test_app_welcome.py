"""The start state: a welcome in the empty editor that is no document."""

from __future__ import annotations

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QSettings, Qt

from test_app_support import FakeBackend, qasync_loop  # noqa: F401 - fixture

from sfumato.app.mainwindow import MainWindow, open_files


@pytest.fixture
def started(qtbot, qasync_loop, tmp_path):  # noqa: F811
    """A window started as ``sfumato`` with no file and a fresh configuration."""
    window = MainWindow(qasync_loop, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    open_files(window, [])
    yield window
    for document in window.tabs.documents():  # closing asks nothing
        document.editor.document().setModified(False)
    window.close()
    window.deleteLater()


def test_a_start_without_files_shows_a_welcome_that_is_no_document(started, tmp_path):
    editor = started.tabs.current_editor()
    welcome = editor.placeholderText()
    for needed in ("Open a file", "Open Folder", "Ctrl+K", "Ctrl+Shift+K", "Tab", "Esc", "embedded", "Settings > Model", "--model"):
        assert needed in welcome, needed
    assert editor.toPlainText() == "" and not editor.document().isModified()
    assert "•" not in started.tabs.tabText(0) and "•" not in started.windowTitle()
    assert started.tabs.save_all()  # nothing to save: no dialog asks for a name
    assert list(tmp_path.iterdir()) == [tmp_path / "s.ini"] or not any(p.suffix != ".ini" for p in tmp_path.iterdir())


def test_the_welcome_is_gone_at_the_first_key(started, qtbot):
    editor = started.tabs.current_editor()
    qtbot.keyClicks(editor, "x")
    assert editor.placeholderText() == ""
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert editor.toPlainText() == "" and editor.placeholderText() == "", "an emptied document is no welcome again"


def test_opening_a_file_closes_the_untouched_welcome(started, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    started.tabs.open_path(str(path))
    assert [document.path for document in started.tabs.documents()] == [str(path)]


def test_a_welcome_replaced_by_a_file_is_not_redrawn_in_its_deleted_editor(started, qtbot, tmp_path):
    """Seen under Xvfb: Alt+Z after opening a file raised 'Internal C++ object (CodeEditor) already deleted'."""
    welcome = started.tabs.current_editor()
    path = tmp_path / "a.md"
    path.write_text("x\n")
    started.tabs.open_path(str(path))
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not shiboken6.isValid(welcome)
    started.menu_actions.wrap.trigger()  # applies the settings, the welcome among them
    started.ai.worker.status.emit("Model fake on cpu")
    assert started.tabs.current_editor().placeholderText() == ""


def test_a_typed_in_welcome_document_stays_when_a_file_opens(started, qtbot, tmp_path):
    qtbot.keyClicks(started.tabs.current_editor(), "notes")
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    started.tabs.open_path(str(path))
    assert len(started.tabs.documents()) == 2


def test_the_welcome_says_which_model_is_in_use(started):
    worker = started.ai.worker
    assert "embedded (loading…)" in started.tabs.current_editor().placeholderText()
    worker.error = "no such folder"
    worker.status.emit("No model")
    assert "did not load: no such folder" in started.tabs.current_editor().placeholderText()


class PaintWatcher(QObject):
    """Keeps the widest area painted in the widget it filters (a caret's blink paints a sliver)."""

    def __init__(self):
        super().__init__()
        self.widest = 0

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Paint:
            self.widest = max(self.widest, event.rect().width())
        return False


def test_the_welcome_is_redrawn_when_the_model_has_loaded(started, qtbot):
    """Qt redraws a placeholder only when it appears or goes, so "loading…" stayed on screen."""
    started.show()
    qtbot.waitExposed(started)
    viewport = started.tabs.current_editor().viewport()
    qtbot.wait(50)
    watcher = PaintWatcher()
    viewport.installEventFilter(watcher)
    started.ai.worker.info = FakeBackend.info
    started.ai.worker.status.emit("Model fake on cpu")
    assert "Model: fake on cpu." in started.tabs.current_editor().placeholderText()
    qtbot.waitUntil(lambda: watcher.widest > viewport.width() // 2, timeout=2000)
