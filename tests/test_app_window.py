"""The main window: start-up without torch or httpx, opening and saving files, find/replace, no-model mode."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDropEvent, QTextCursor

from test_app_support import FakeBackend, qasync_loop, window, with_fake_model  # noqa: F401 - fixtures

from sfumato.app.textpositions import document_text
from sfumato.app.mainwindow import MainWindow

REPO = Path(__file__).resolve().parent.parent


def test_importing_the_window_does_not_import_torch():
    code = (  # nor httpx, which loads its command-line tool (rich, click) when they are installed: 0.2 s
        "import sys, sfumato.app.mainwindow, sfumato.app.application; "
        "heavy = [m for m in ('torch', 'transformers', 'httpx') if m in sys.modules]; "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


CLOSING_EDITOR = """
import atexit, time
from PySide6.QtCore import QTimer
from sfumato.app import application, mainwindow

atexit.register(time.sleep, 120)  # stands for the teardown of torch and the rest at interpreter exit
shown = mainwindow.first_show

def first_show(window):
    shown(window)
    QTimer.singleShot(300, window.close)

mainwindow.first_show = first_show
application.run([], "no-such-model")
"""


def test_the_process_ends_once_its_window_has_closed_and_saved_its_settings(tmp_path):
    environment = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"),
                       XDG_DATA_HOME=str(tmp_path / "data"), SFUMATO_RECOVERY_DIR=str(tmp_path / "recovery"))
    child = subprocess.Popen([sys.executable, "-c", CLOSING_EDITOR], cwd=REPO, env=environment,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert child.wait(timeout=60) == 0, child.stderr.read()
    finally:
        child.kill()
    assert list((tmp_path / "config").rglob("Sfumato.conf")), "the settings were written before the end"


def test_opening_a_binary_file_shows_a_message_and_opens_nothing(window, tmp_path):
    window.tabs.new_document()
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    assert window.tabs.open_path(str(binary)) is None
    assert window.tabs.count() == 1
    assert window.tabs.current_document().path is None
    assert "binary" in window.notices.box.text() and "Nothing was opened" in window.notices.box.text()


def test_a_file_keeps_its_bom_and_line_endings_through_edit_and_save(window, qtbot, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\n")
    document = window.tabs.open_path(str(path))
    cursor = document.editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    document.editor.setTextCursor(cursor)
    qtbot.keyClicks(document.editor, "three")
    assert document.is_modified()
    assert window.tabs.save()
    assert path.read_bytes() == codecs.BOM_UTF8 + b"one\r\ntwo\r\nthree"
    assert not document.is_modified()


def test_saving_while_a_draft_is_shown_writes_the_users_text(window, qtbot, tmp_path):
    backend = FakeBackend()
    backend.hold.set()
    with_fake_model(window, qtbot, backend)
    path = tmp_path / "code.py"
    path.write_text("x = 1\ny = 2\n")
    document = window.tabs.open_path(str(path))
    cursor = document.editor.textCursor()
    cursor.setPosition(0)
    document.editor.setTextCursor(cursor)
    qtbot.keyClicks(document.editor, "# top")
    qtbot.keyClick(document.editor, Qt.Key.Key_Return)
    window.ai.rewrite()  # no selection: infill at the cursor
    session = document.editor.session
    qtbot.waitUntil(lambda: session.has_draft, timeout=10000)
    assert window.tabs.save()
    assert path.read_text() == "# top\nx = 1\ny = 2\n"
    assert session.has_draft and not document.is_modified()
    session.reject()
    assert document_text(document.editor.document()) == "# top\nx = 1\ny = 2\n"
    assert not document.is_modified()


def drop_file(target, path):
    """Drop the file ``path`` on ``target`` as a file manager does (the event does not own its mime data,
    so both live here until the drop is handled)."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    target.dropEvent(QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))


def test_dropping_a_file_opens_it(window, tmp_path):
    path = tmp_path / "dropped.md"
    path.write_text("# Title\n")
    drop_file(window, path)
    assert window.tabs.current_document().path == str(path)
    assert window.tabs.current_document().language == "Markdown"


def test_find_and_replace_all_with_a_regular_expression_is_one_undo_step(window, qtbot):
    document = window.tabs.new_document()
    document.editor.setPlainText("foo1 bar foo22 Foo3\n")
    bar = window.find_bar
    bar.open(replace=True)
    bar.find_text.setText(r"foo(\d+)")
    bar.regex.setChecked(True)
    bar.case.setChecked(True)
    bar.replace_text.setText(r"n\1")
    bar.replace_all()
    assert document.editor.toPlainText() == "n1 bar n22 Foo3\n"
    document.editor.undo()
    assert document.editor.toPlainText() == "foo1 bar foo22 Foo3\n"


def test_whole_word_find_skips_partial_matches(window):
    document = window.tabs.new_document()
    document.editor.setPlainText("cat concat cat\n")
    bar = window.find_bar
    bar.find_text.setText("cat")  # as typed: the first match is selected and all are counted
    assert document.editor.textCursor().selectionStart() == 0 and bar.status.text() == "1 of 3"
    bar.word.setChecked(True)
    assert bar.status.text() == "1 of 2"
    assert bar.find()
    assert document.editor.textCursor().selectionStart() == 11 and bar.status.text() == "2 of 2"
    assert bar.find()
    assert document.editor.textCursor().selectionStart() == 0


def test_every_match_is_marked_while_the_bar_is_open(window):
    document = window.tabs.new_document()
    document.editor.setPlainText("a b a b a\n")
    bar = window.find_bar
    bar.open(replace=False)
    bar.find_text.setText("a")
    marked = [s for s in document.editor.extraSelections() if s.cursor.selectedText() == "a"]
    assert len(marked) == 3
    bar.find_text.setText("zzz")
    assert bar.status.text() == "Not found"
    assert not [s for s in document.editor.extraSelections() if s.cursor.selectedText() == "a"]
    bar.find_text.setText("b")
    bar._close()
    assert not [s for s in document.editor.extraSelections() if s.cursor.selectedText() == "b"]


def test_without_a_model_editing_works_and_ai_actions_explain_why(window, qtbot, tmp_path):
    window.settings.model_spec = str(tmp_path / "no-such-model")
    window.ai.start_engine()
    qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=30000)
    assert "No model" in window.ai.model_label.text()
    document = window.tabs.new_document()
    qtbot.keyClicks(document.editor, "still typing")
    window.ai.rewrite()
    assert document.editor.session is None
    assert document_text(document.editor.document()) == "still typing"
    assert "AI edits are off" in window.notices.box.text()


def press_ctrl_k_on_beta(window, qtbot):
    """A new document "alpha beta gamma", "beta" selected, Ctrl+K pressed: the editor and its box."""
    from sfumato.app.inlinebox import InlineBox

    editor = window.tabs.new_document().editor
    editor.setPlainText("alpha beta gamma\n")
    cursor = editor.textCursor()
    cursor.setPosition(6)
    cursor.setPosition(10, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)
    window.activateWindow()
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    return editor, editor.viewport().findChild(InlineBox)


def test_ctrl_k_with_a_selection_opens_the_strength_box_and_enter_runs_it(window, qtbot):
    with_fake_model(window, qtbot)
    editor, box = press_ctrl_k_on_beta(window, qtbot)
    assert box is not None and box.isVisible()
    qtbot.keyClick(box, Qt.Key.Key_Return)
    session = editor.session
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "alpha " + FakeBackend.result(0) + " gamma\n"


def test_the_strength_box_says_what_the_rewrite_will_do_to_the_selection(window, qtbot):
    from dataclasses import replace

    backend = FakeBackend()
    backend.info = replace(FakeBackend.info, backend="lm-denoiser")
    with_fake_model(window, qtbot, backend)
    window.settings.rewrite_strength = 0.6
    editor, box = press_ctrl_k_on_beta(window, qtbot)
    assert box.value.text() == "60% · writes the line anew"
    box.strength.setValue(30)
    assert box.value.text() == "30% · fixes slips, keeps the rest"


def test_settings_survive_a_restart(tmp_path, qasync_loop, qtbot):  # noqa: F811
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    from sfumato.app.settings import Settings

    settings = Settings.load(store)
    settings.steps = 12
    settings.slow_motion_ms = 100
    settings.keys["rewrite"] = "Ctrl+J"
    settings.add_recent("/tmp/a.txt")
    settings.save(store)
    again = Settings.load(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert (again.steps, again.slow_motion_ms, again.keys["rewrite"], again.recent_files) == (12, 100, "Ctrl+J", ["/tmp/a.txt"])


def test_a_settings_file_edited_by_hand_keeps_numbers_within_what_the_dialog_offers(tmp_path, qasync_loop, qtbot):  # noqa: F811
    """100,000 alternatives made the engine batch that many rows; a NaN strength broke the Ctrl+K box."""
    (tmp_path / "s.ini").write_text("[General]\nalternatives=100000\nrewrite_strength=nan\nmax_new_tokens=0\n"
                                    "font_size=-3\nslow_motion_ms=99999999\nsteps=abc\nindent_width=2\nsampler_bound=0.5\n")
    from sfumato.app.settings import Settings

    loaded = Settings.load(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    default = Settings()
    assert (loaded.alternatives, loaded.rewrite_strength, loaded.max_new_tokens, loaded.font_size, loaded.slow_motion_ms,
            loaded.steps) == (default.alternatives, default.rewrite_strength, default.max_new_tokens, default.font_size,
                              default.slow_motion_ms, default.steps)
    assert (loaded.indent_width, loaded.sampler_bound) == (2, 0.5)  # values within the bounds are kept


def test_a_file_changed_on_disk_reloads_when_unmodified_and_asks_when_modified(window, qtbot, tmp_path):
    path = tmp_path / "shared.txt"
    path.write_text("first\n")
    document = window.tabs.open_path(str(path))
    window.tabs.save()  # our own save is not "changed by another program"
    qtbot.wait(400)
    assert document_text(document.editor.document()) == "first\n"
    path.write_text("second version\n")
    qtbot.waitUntil(lambda: document_text(document.editor.document()) == "second version\n", timeout=10000)
    document.editor.undo()
    assert document_text(document.editor.document()) == "first\n"
    path.write_text("third\n")
    qtbot.waitUntil(lambda: window.notices.box is not None and window.notices.box.isVisible(), timeout=10000)
    assert "changed by another program" in window.notices.box.text()
    assert document_text(document.editor.document()) == "first\n"


def test_a_file_deleted_on_disk_keeps_the_text_and_counts_as_unsaved(window, qtbot, tmp_path):
    path = tmp_path / "doomed.txt"
    path.write_text("keep me\n")
    document = window.tabs.open_path(str(path))
    path.unlink()
    qtbot.waitUntil(document.is_modified, timeout=10000)
    assert document_text(document.editor.document()) == "keep me\n"
    assert window.tabs.save()
    assert path.read_text() == "keep me\n"


def test_the_settings_dialog_round_trips_every_field(window, qtbot):
    from sfumato.app.settings_dialog import SettingsDialog

    window.settings.sampler_bound = 0.7
    window.settings.steps = 9
    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    result = dialog.result_settings()
    assert result == window.settings
    dialog.slow_motion_ms.setValue(300)
    dialog.key_edits["rewrite"].setKeySequence("Ctrl+J")
    changed = dialog.result_settings()
    assert (changed.slow_motion_ms, changed.keys["rewrite"]) == (300, "Ctrl+J")
    assert window.settings.slow_motion_ms == 0  # the window's settings change only on OK


def test_a_command_line_model_is_used_for_this_run_only(qtbot, qasync_loop, tmp_path):  # noqa: F811
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(qasync_loop, store, model_spec=str(tmp_path / "missing-model"))
    window.ai.start_engine()
    qtbot.waitUntil(lambda: window.ai.worker.error is not None, timeout=30000)
    assert "missing-model" in window.ai.worker.error
    window.settings.add_recent("/tmp/x")
    window.settings.save(store)
    assert QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat).value("model_spec") == "embedded"
    window.close()
    window.deleteLater()


def test_help_about_names_the_model(window, qtbot):
    with_fake_model(window, qtbot)
    window.show_about()
    from PySide6.QtWidgets import QMessageBox

    box = next(b for b in window.findChildren(QMessageBox) if b.windowTitle() == "About Sfumato")
    assert "fake" in box.text()
    box.close()


def test_instruction_tuned_models_get_an_instruction_field_even_without_a_selection(window, qtbot):
    from dataclasses import replace

    from sfumato.app.inlinebox import InlineBox

    backend = FakeBackend()
    backend.info = replace(FakeBackend.info, instruction_tuned=True)
    with_fake_model(window, qtbot, backend)
    editor = window.tabs.new_document().editor
    editor.setPlainText("x = 1\n")
    window.ai.rewrite()
    box = editor.viewport().findChild(InlineBox)
    assert box.instruction.isVisible()
    qtbot.keyClicks(box.instruction, "add a comment")
    qtbot.keyClick(box.instruction, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(backend.requests), timeout=10000)
    assert backend.requests[0][0].instruction == "add a comment"


def test_dropping_a_file_on_the_text_opens_it_in_a_tab(window, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("dropped\n")
    editor = window.tabs.new_document().editor
    editor.setPlainText("unchanged")
    drop_file(editor, path)
    assert window.tabs.current_document().path == str(path)
    assert editor.toPlainText() == "unchanged"


def test_a_file_whose_name_is_not_utf8_is_shown_by_name_and_saved_under_that_name(window, tmp_path):
    path = os.fsdecode(bytes(tmp_path) + b"/caf\xe9.txt")  # Latin-1 bytes in a file name
    Path(path).write_text("hello\n")
    document = window.tabs.open_path(path)
    index = window.tabs.indexOf(document.editor)
    assert window.tabs.tabText(index) == "caf\ufffd.txt" and "caf\ufffd.txt" in window.windowTitle()
    assert window.tabs.tabToolTip(index).endswith("/caf\ufffd.txt")  # Qt drew these as caf.txt
    document.editor.insertPlainText("x")
    assert window.tabs.save()
    assert b"caf\xe9.txt" in os.listdir(bytes(tmp_path)) and Path(path).read_text() == "xhello\n"


def test_text_the_files_encoding_cannot_hold_is_saved_as_utf8_when_the_user_agrees(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    path = tmp_path / "legacy.txt"
    path.write_bytes("caf\xe9\r\n".encode("cp1252"))
    document = window.tabs.open_path(str(path))
    document.editor.moveCursor(QTextCursor.MoveOperation.End)
    document.editor.insertPlainText("☃")
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: QMessageBox.StandardButton.Yes)
    assert window.tabs.save()
    assert path.read_bytes() == "café\r\n☃".encode()


def test_editing_works_while_the_model_loads_and_a_request_waits_for_it(window, qtbot):
    import threading

    release = threading.Event()
    backend = FakeBackend()

    def slow_load():
        release.wait(10)
        return backend

    window.ai.worker.start(slow_load, "slow")
    assert window.ai.model_label.text() == "Loading model…" and window.ai.load_progress.isVisible()
    editor = window.tabs.new_document().editor
    qtbot.keyClicks(editor, "typing while it loads")
    window.ai.rewrite()  # no selection: infill at the cursor, queued until the model is ready
    session = editor.session
    assert session is not None and session.state == "running"
    release.set()
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    assert window.ai.model_label.text() == "fake · cpu" and not window.ai.load_progress.isVisible()
    session.accept()
    assert editor.toPlainText() == "typing while it loads" + FakeBackend.result(0)


def test_ctrl_slash_comments_the_line_in_the_files_language(qtbot, window, tmp_path):
    python, sql, html, notes = (tmp_path / name for name in ("a.py", "b.sql", "c.html", "d.txt"))
    python.write_text("x = 1\n")
    sql.write_text("select 1;\n")
    html.write_text("<p>hi</p>\n")
    notes.write_text("words\n")
    for path, commented in ((python, "# x = 1\n"), (sql, "-- select 1;\n"), (html, "<!-- <p>hi</p> -->\n"), (notes, "words\n")):
        document = window.tabs.open_path(str(path))
        document.editor.setFocus()
        qtbot.waitUntil(document.editor.hasFocus)
        qtbot.keyClick(document.editor, Qt.Key.Key_Slash, Qt.KeyboardModifier.ControlModifier)
        assert document_text(document.editor.document()) == commented
    assert "no line comments" in window.statusBar().currentMessage()


def test_try_again_puts_the_original_back_and_asks_for_the_next_alternative(window, qtbot):
    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    editor, box = press_ctrl_k_on_beta(window, qtbot)
    box.strength.setValue(30)
    qtbot.keyClick(box, Qt.Key.Key_Return)
    first = editor.session
    qtbot.waitUntil(lambda: first.state == "ready", timeout=10000)
    qtbot.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
    second = editor.session
    assert second is not first and first.state == "ended"
    qtbot.waitUntil(lambda: second.state == "ready", timeout=10000)
    [(one,), (two,)] = backend.requests
    assert two == replace(one, first_alternative=1) and two.init_text == "beta" and two.strength == 0.3
    assert window.settings.rewrite_strength == 0.3  # the next box starts where this one was left
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "alpha " + FakeBackend.result(0) + " gamma\n"
    editor.undo()
    assert editor.toPlainText() == "alpha beta gamma\n" and not editor.document().isUndoAvailable()
    qtbot.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
    assert editor.session is None and "Nothing to try again" in window.statusBar().currentMessage()


def test_word_wrap_wraps_every_tab_and_is_remembered(qtbot, qasync_loop, tmp_path):  # noqa: F811
    from PySide6.QtWidgets import QPlainTextEdit

    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(qasync_loop, store)
    qtbot.addWidget(window)
    window.resize(600, 400)
    window.show()
    editor = window.tabs.new_document().editor
    editor.setPlainText("word " * 400)
    editor.document().setModified(False)  # no "save changes?" question when the test closes it
    line = editor.document().firstBlock().layout()
    assert line.lineCount() == 1
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.AltModifier)
    assert editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    qtbot.waitUntil(lambda: editor.document().firstBlock().layout().lineCount() > 1)
    assert editor.toPlainText() == "word " * 400  # wrapping shows the line on several rows, the text is one line
    again = MainWindow(qasync_loop, store)
    qtbot.addWidget(again)
    assert again.menu_actions.wrap.isChecked()
    assert again.tabs.new_document().editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    for each in (window, again):
        each.close()


def test_the_command_palette_finds_a_command_by_its_letters_and_runs_it(window, qtbot):
    editor = window.tabs.new_document().editor
    editor.setPlainText("one\ntwo\n")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(editor, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    palette = window.picker
    assert palette is not None and palette.isVisible()
    labels = [palette.results.item(i).text() for i in range(palette.results.count())]
    assert any(label.startswith("File: Save") for label in labels) and not any("Recent" in label for label in labels if label.endswith(": "))
    qtbot.keyClicks(palette.query, "dupl")
    assert palette.results.item(0).text().startswith("Edit: Duplicate Lines")
    qtbot.keyClick(palette.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: editor.toPlainText() == "one\none\ntwo\n")
    assert not palette.isVisible()


def test_palette_ranking_puts_a_word_start_first_then_one_piece_then_letters_in_order():
    from sfumato.app.palette import rank

    assert rank("wr", "View: Word Wrap") < rank("wr", "AI: Rewrite Selection")  # a word that starts with it first
    assert rank("dup", "Edit: Duplicate Lines") < rank("dl", "Edit: Duplicate Lines")
    assert rank("ewr", "AI: Rewrite Selection") < rank("ewr", "View: Word Wrap")
    assert rank("vww", "View: Word Wrap") is not None
    assert rank("zzz", "View: Word Wrap") is None
    assert rank("", "anything") == (0, 0)
    assert rank("ap", "snap/apply.py") == (0, 5)  # inside "snap" first, at the start of "apply" after
    assert rank("ap", "snap/map.py") == (1, 2)  # never at a word's start: the first place it occurs


def test_an_open_folder_shows_in_the_sidebar_and_go_to_file_opens_its_files(window, qtbot, tmp_path):
    project = tmp_path / "project"
    for relative in ("src/app.py", "README.md", ".gitignore", ".git/config", "src/__pycache__/app.pyc", "pkg.egg-info/PKG-INFO"):
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text("x = 1\n")
    window.open_folder(str(project))
    assert window.folder.tree_dock.isVisible() and window.folder.tree_dock.windowTitle() == "project"
    window.go_to_file()  # the files are listed off the UI thread, then shown
    picker = window.picker

    def listed() -> list[str]:
        return sorted(picker.results.item(i).text() for i in range(picker.results.count()))

    qtbot.waitUntil(lambda: listed() == [".gitignore", "README.md", "src/app.py"], timeout=10000)
    qtbot.keyClicks(picker.query, "sap")
    qtbot.keyClick(picker.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.tabs.current_document() is not None and window.tabs.current_document().path == str(project / "src" / "app.py"))


def test_go_to_file_opens_at_once_and_lists_the_files_once_a_worker_thread_has_read_them(window, qtbot, tmp_path, monkeypatch):
    """Walked on the UI thread, a home folder's 50,000 files froze the window for seconds at each Ctrl+P."""
    import threading

    import sfumato.app.mainwindow as mainwindow

    release, walked_on = threading.Event(), []

    def slow_listing(root):
        walked_on.append(threading.current_thread())
        release.wait(30)
        return ["notes.md", "src/app.py"]

    monkeypatch.setattr(mainwindow, "folder_files", slow_listing)
    window.open_folder(str(tmp_path))
    window.go_to_file()
    picker = window.picker
    assert picker.isVisible() and picker.results.item(0).text() == "Reading the folder…"
    release.set()
    qtbot.waitUntil(lambda: picker.results.count() == 2 and picker.results.item(0).text() == "notes.md", timeout=10000)
    assert walked_on and walked_on[0] is not threading.main_thread()


def test_the_folder_tree_opens_a_file_and_the_folder_comes_back_at_the_next_start(qtbot, qasync_loop, tmp_path):  # noqa: F811
    from sfumato.app.mainwindow import open_files

    project = tmp_path / "project"
    (project / "lib").mkdir(parents=True)
    (project / "lib" / "util.py").write_text("def f():\n    pass\n")
    store = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(qasync_loop, store)
    qtbot.addWidget(window)
    open_files(window, [str(project)])  # a folder named on the command line opens as the folder
    window.show()
    tree = window.folder.tree
    qtbot.waitUntil(lambda: tree.model().rowCount(tree.rootIndex()) == 1)

    def lib():  # asked afresh each time: the tree's indexes change while the folder loads
        return tree.model().index(0, 0, tree.rootIndex())

    tree.expand(lib())
    qtbot.waitUntil(lambda: tree.model().rowCount(lib()) == 1)
    tree.activated.emit(tree.model().index(0, 0, lib()))
    assert window.tabs.current_document().path == str(project / "lib" / "util.py")
    window.close()
    again = MainWindow(qasync_loop, store)
    qtbot.addWidget(again)
    open_files(again, [])
    assert again.folder.root == str(project) and not again.folder.tree_dock.isHidden()
    assert [d.path for d in again.tabs.documents()] == [str(project / "lib" / "util.py")]
    again.close()


def test_find_in_folder_lists_matching_lines_and_opens_one_at_its_column(window, qtbot, tmp_path):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "a.py").write_text("import os\n\ndef Total(x):\n    return total(x)\n")
    (project / "notes.txt").write_text("the total is 3\n")
    (project / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00total\x00")
    (project / "__pycache__").mkdir()
    (project / "__pycache__" / "a.txt").write_text("total\n")
    window.open_folder(str(project))
    window.find_in_folder()
    panel = window.folder.search
    assert window.folder.search_dock.isVisible()
    panel.query.setText("total")
    qtbot.keyClick(panel.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.results.count() == 3, timeout=10000)
    listed = [panel.results.item(i).text() for i in range(panel.results.count())]
    assert listed == ["notes.txt:1: the total is 3", "pkg/a.py:3: def Total(x):", "pkg/a.py:4: return total(x)"]
    assert panel.summary.text() == "3 matches in 2 files"
    panel.case_sensitive.setChecked(True)
    qtbot.keyClick(panel.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.results.count() == 2, timeout=10000)
    panel.results.itemActivated.emit(panel.results.item(1))
    document = window.tabs.current_document()
    assert document.path == str(project / "pkg" / "a.py")
    cursor = document.editor.textCursor()
    assert (cursor.blockNumber(), cursor.positionInBlock()) == (3, 11)


def test_tab_follows_the_indentation_the_file_uses(window, qtbot, tmp_path):
    tabbed, two, flat = tmp_path / "a.go", tmp_path / "b.yaml", tmp_path / "c.txt"
    tabbed.write_text("func f() {\n\treturn\n}\n")
    two.write_text("a:\n  b: 1\n")
    flat.write_text("words\n")
    for path, inserted, label in ((tabbed, "\t", "Tabs: 4"), (two, "  ", "Spaces: 2"), (flat, "    ", "Spaces: 4")):
        document = window.tabs.open_path(str(path))
        assert window.indent_label.text() == label
        qtbot.keyClick(document.editor, Qt.Key.Key_Tab)
        assert document_text(document.editor.document()) == inserted + path.read_text()
        document.editor.document().setModified(False)


def test_starting_a_rewrite_from_a_side_panel_gives_the_editor_the_keys(window, qtbot, tmp_path):
    with_fake_model(window, qtbot)
    editor = window.tabs.new_document().editor
    editor.setPlainText("alpha\n")
    window.activateWindow()
    window.find_in_folder()
    qtbot.waitUntil(window.folder.search.query.hasFocus)
    window.ai.rewrite()  # no selection: infill at the cursor, straight away
    session = editor.session
    qtbot.waitUntil(lambda: session.state == "ready", timeout=10000)
    assert editor.hasFocus()
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert editor.toPlainText() == "alpha\n" and editor.session is None


def test_closed_tabs_reopen_newest_first_and_a_middle_click_closes_a_tab(window, qtbot, tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("a\n")
    second.write_text("b\n")
    for path in (first, second):
        window.tabs.open_path(str(path))
    bar = window.tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.MiddleButton, pos=bar.tabRect(1).center())
    window.tabs.close_tab(window.tabs.documents()[0].editor)
    assert window.tabs.documents() == [] or [d.path for d in window.tabs.documents()] == [None]
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert window.tabs.current_document().path == str(first)
    window.tabs.reopen_closed_tab()
    assert window.tabs.current_document().path == str(second)
    window.tabs.reopen_closed_tab()
    assert "No closed tab" in window.statusBar().currentMessage()


def test_show_whitespace_draws_spaces_and_tabs_in_every_tab(window):
    from PySide6.QtGui import QTextOption

    editor = window.tabs.new_document().editor
    shows = lambda: bool(editor.document().defaultTextOption().flags() & QTextOption.Flag.ShowTabsAndSpaces)  # noqa: E731
    assert not shows()
    window.menu_actions.whitespace.trigger()
    assert shows() and window.settings.show_whitespace
    assert window.tabs.new_document().editor.document().defaultTextOption().flags() & QTextOption.Flag.ShowTabsAndSpaces
    window.menu_actions.whitespace.trigger()
    assert not shows()


def test_go_to_symbol_lists_the_files_definitions_and_jumps_to_one(window, qtbot, tmp_path):
    path = tmp_path / "shapes.py"
    path.write_text("class Shape:\n    def __init__(self):\n        super().__init__()\n\n\ndef area(shape):\n    return 0\n")
    document = window.tabs.open_path(str(path))
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(document.editor, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    picker = window.picker
    listed = [picker.results.item(i).text() for i in range(picker.results.count())]
    assert listed == ["Shape    line 1", "__init__    line 2", "area    line 6"]  # in file order, not the call on line 3
    qtbot.keyClicks(picker.query, "area")
    qtbot.keyClick(picker.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: document.editor.textCursor().blockNumber() == 5)


def test_go_to_symbol_in_plain_text_says_there_is_none(window):
    window.tabs.new_document().editor.setPlainText("just words\n")
    window.go_to_symbol()
    assert "No functions or classes" in window.statusBar().currentMessage()


def test_save_all_writes_every_changed_file_and_leaves_the_others(window, qtbot, tmp_path):
    changed, untouched = tmp_path / "a.txt", tmp_path / "b.txt"
    changed.write_text("a\n")
    untouched.write_text("b\n")
    first = window.tabs.open_path(str(changed))
    window.tabs.open_path(str(untouched))
    first.editor.moveCursor(QTextCursor.MoveOperation.End)
    first.editor.insertPlainText("more\n")
    stamp = untouched.stat().st_mtime_ns
    assert window.tabs.save_all()
    assert changed.read_text() == "a\nmore\n" and not first.is_modified()
    assert untouched.stat().st_mtime_ns == stamp


def test_replace_all_in_folder_edits_the_files_tabs_and_saves_nothing(window, qtbot, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("total = 1\nprint(total)\n")
    (project / "b.txt").write_text("Total is total\n")
    (project / "c.txt").write_text("nothing here\n")
    window.open_folder(str(project))
    window.find_in_folder()
    panel = window.folder.search
    panel.query.setText("total")
    panel.case_sensitive.setChecked(True)
    qtbot.keyClick(panel.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.replace_all.isEnabled(), timeout=10000)
    panel.replacement.setText("sum_")
    panel.replace_all.click()
    texts = {d.path: document_text(d.editor.document()) for d in window.tabs.documents() if d.path}
    assert texts == {str(project / "a.py"): "sum_ = 1\nprint(sum_)\n", str(project / "b.txt"): "Total is sum_\n"}
    assert (project / "a.py").read_text() == "total = 1\nprint(total)\n"  # nothing saved yet
    assert "Replaced 3 in 2 files" in panel.summary.text()
    a = next(d for d in window.tabs.documents() if d.path == str(project / "a.py"))
    a.editor.undo()  # one step per file
    assert document_text(a.editor.document()) == "total = 1\nprint(total)\n"
    for document in window.tabs.documents():
        document.editor.document().setModified(False)


def test_the_tab_menu_closes_the_others_or_those_to_the_right_and_copies_the_path(window, tmp_path):
    from PySide6.QtWidgets import QApplication

    paths = [tmp_path / f"{name}.txt" for name in "abcd"]
    for path in paths:
        path.write_text("x\n")
        window.tabs.open_path(str(path))
    actions = {action.text(): action for action in window.tabs.tab_menu(1).actions()}
    actions["Copy Path"].trigger()
    assert QApplication.clipboard().text() == str(paths[1])
    actions["Close to the Right"].trigger()
    assert [d.path for d in window.tabs.documents()] == [str(paths[0]), str(paths[1])]
    {action.text(): action for action in window.tabs.tab_menu(1).actions()}["Close Others"].trigger()
    assert [d.path for d in window.tabs.documents()] == [str(paths[1])]


def test_the_review_hints_again_link_runs_the_request_again(window, qtbot):
    from sfumato.app.reviewhint import ReviewHint

    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    editor, box = press_ctrl_k_on_beta(window, qtbot)
    qtbot.keyClick(box, Qt.Key.Key_Return)
    first = editor.session
    qtbot.waitUntil(lambda: first.state == "ready", timeout=10000)
    [hint] = editor.viewport().findChildren(ReviewHint)
    assert "Again" in hint.text() and "Alt+R" in hint.text()
    hint.linkActivated.emit("again")
    second = editor.session
    assert second is not first
    qtbot.waitUntil(lambda: second.state == "ready", timeout=10000)
    assert len(backend.requests) == 2  # the worker has taken the second request by now
    second.reject()
    assert editor.toPlainText() == "alpha beta gamma\n"


def test_the_command_palette_finds_the_theme_and_switches_it(window, qtbot):
    from sfumato.app import theme

    window.show_palette()
    qtbot.keyClicks(window.picker.query, "theme")
    labels = [window.picker.results.item(i).text() for i in range(window.picker.results.count())]
    assert labels[:3] == ["View: Theme: Follow the desktop", "View: Theme: Light", "View: Theme: Dark"]
    window.picker.results.setCurrentRow(2)
    qtbot.keyClick(window.picker.query, Qt.Key.Key_Return)
    try:
        qtbot.waitUntil(lambda: window.settings.theme == "dark")
        assert theme.palette_is_dark() and window.menu_actions.themes["dark"].isChecked()
    finally:
        window.toggle("theme", "light")  # the palette is the application's: leave it light for the next tests
    assert window.menu_actions.themes["light"].isChecked() and not window.menu_actions.themes["dark"].isChecked()


def test_the_font_size_box_names_the_default_size_in_points(window, qtbot):
    from PySide6.QtGui import QFontDatabase

    from sfumato.app.settings_dialog import SettingsDialog

    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    size = round(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).pointSizeF())
    assert dialog.font_size.value() == 0 and dialog.font_size.text() == f"default ({size} pt)"


def test_an_untitled_tab_typed_in_and_emptied_again_has_nothing_to_save(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: asked.append(args) or QMessageBox.StandardButton.Cancel)
    editor = window.tabs.new_document().editor
    qtbot.keyClicks(editor, "draft")
    assert window.tabs.documents()[-1].is_modified() and window.tabs.tabText(window.tabs.indexOf(editor)).endswith("•")
    for _ in "draft":
        qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert not window.tabs.documents()[-1].is_modified()
    assert not window.tabs.tabText(window.tabs.indexOf(editor)).endswith("•") and "•" not in window.windowTitle()
    assert window.tabs.close_tab(editor) and asked == []


def test_markdown_files_wrap_and_view_word_wrap_sets_wrapping_for_their_kind(window, qtbot, tmp_path):
    from PySide6.QtWidgets import QPlainTextEdit

    wrapped = QPlainTextEdit.LineWrapMode.WidgetWidth
    (tmp_path / "notes.md").write_text("word " * 200 + "\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    notes = window.tabs.open_path(str(tmp_path / "notes.md")).editor
    assert notes.lineWrapMode() == wrapped and window.menu_actions.wrap.isChecked()
    code = window.tabs.open_path(str(tmp_path / "code.py")).editor
    assert code.lineWrapMode() != wrapped and not window.menu_actions.wrap.isChecked()
    window.tabs.setCurrentWidget(notes)
    assert window.menu_actions.wrap.isChecked()
    window.menu_actions.wrap.trigger()  # off for prose, code as it was
    assert notes.lineWrapMode() != wrapped and code.lineWrapMode() != wrapped
    assert (window.settings.wrap_prose, window.settings.word_wrap) == (False, False)


def test_accept_word_takes_an_infill_word_by_word_and_offers_the_rest_at_once(window, qtbot):
    """Ctrl+Right during the review of an infill at a cursor writes the result's next word as one
    undo step and shows the rest at once as a new result (no model run); Tab then takes the rest,
    and a rewrite's review leaves Ctrl+Right to the cursor."""
    backend = FakeBackend()
    with_fake_model(window, qtbot, backend)
    editor = window.tabs.new_document().editor
    editor.setPlainText("alpha \n")
    cursor = editor.textCursor()
    cursor.setPosition(6)
    editor.setTextCursor(cursor)
    window.activateWindow()
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: editor.session is not None and editor.session.state == "ready", timeout=10000)
    result = FakeBackend.result(0)  # "<0.0 new text>"
    qtbot.keyClick(editor, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    rest = editor.session
    assert rest is not None and rest.state == "ready" and rest.texts() == [result[1:]]
    assert rest.text_without_draft() == "alpha <\n" and len(backend.requests) == 1
    assert window.statusBar().currentMessage().startswith("The rest of the result")
    for _ in range(3):  # "0", ".", "0"
        qtbot.keyClick(editor, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    assert editor.session.text_without_draft() == "alpha <0.0\n" and editor.session.texts() == [result[4:]]
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.session is None and editor.toPlainText() == f"alpha {result}\n"
    editor.undo()  # the rest, then each word: one step each
    assert editor.toPlainText() == "alpha <0.0\n"
    for _ in range(4):
        editor.undo()
    assert editor.toPlainText() == "alpha \n" and not editor.document().isUndoAvailable()
    assert len(backend.requests) == 1  # the rest came from the first run, not a new one
    editor.redo()  # the first word again; Esc on the rest leaves it
    qtbot.keyClick(editor, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: editor.session is not None and editor.session.state == "ready", timeout=10000)
    qtbot.keyClick(editor, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    assert editor.session is None and editor.toPlainText() == "alpha <<\n"
    assert window.statusBar().currentMessage() == "The rest of the result was dropped; the words taken stay."

    editor, box = press_ctrl_k_on_beta(window, qtbot)  # a rewrite: the key is not the session's
    qtbot.keyClick(box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: editor.session is not None and editor.session.state == "ready", timeout=10000)
    session = editor.session
    qtbot.keyClick(editor, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    assert editor.session is session and session.state == "ready"
