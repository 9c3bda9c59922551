"""The main window: tabs of documents, menus, the find bar, the status bar, and the AI actions.

Importing this module does not import torch: the model is loaded by the engine's worker thread
after the window is up.
"""

from __future__ import annotations

import asyncio
import os

from PySide6.QtCore import QEvent, QFileSystemWatcher, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app import fileio
from app.codeeditor import CodeEditor
from app.textpositions import position_of
from app.document import Document, palette_is_dark
from app.worker_adapter import WorkerAdapter, load_from_spec
from app.findbar import FindBar, replace_every
from app.folder import folder_files
from app.folderpanels import FolderPanels
from app.infill import InfillOptions, InfillStarter
from app.inlinebox import InlineBox
from app.palette import Picker, menu_commands
from app.reopen import OpenFile, recall, remember
from app.session import InfillSession, SessionKeys
from app.symbols import symbols
from app.settings import Settings
from app.settings_dialog import SettingsDialog

MAX_CLOSED_REMEMBERED = 20
MAX_FILES_REPLACED = 200  # Replace All in Folder opens at most this many tabs at once
LONG_LINE = 100_000  # characters; Qt lays out a whole line at once, so longer ones get a warning
FILE_FILTER = "All files (*);;Python (*.py);;Text (*.txt *.md)"


class MainWindow(QMainWindow):
    def __init__(self, loop: asyncio.AbstractEventLoop, store: QSettings, model_spec: str | None = None):
        super().__init__()
        self.store = store
        self.settings = Settings.load(store)
        self.model_override = model_spec  # `sfumato --model SPEC`: this run only, never saved
        self.worker = WorkerAdapter(loop, self)
        self.worker.status.connect(self._show_model_status)
        self.starter = InfillStarter(self.worker, InfillOptions(), self._session_keys())
        self._documents: dict[CodeEditor, Document] = {}
        self.message_box: QMessageBox | None = None
        self.picker: Picker | None = None  # the command palette or Go to File, while open
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(lambda path: QTimer.singleShot(200, lambda: self._check_disk(path)))
        self._untitled = 0
        self.setWindowTitle("Sfumato")
        self.resize(1100, 760)
        self.setAcceptDrops(True)
        self.tabs = QTabWidget()
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabCloseRequested.connect(lambda index: self.close_tab(self.tabs.widget(index)))
        self.tabs.tabBar().installEventFilter(self)
        self.tabs.tabBar().setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tabs.tabBar().customContextMenuRequested.connect(self._tab_menu)
        self._closed_paths: list[str] = []  # for Reopen Closed Tab, newest last
        self.tabs.currentChanged.connect(self._current_changed)
        self.find_bar = FindBar()
        self.find_bar.hide()
        self.find_bar.message.connect(lambda text: self.statusBar().showMessage(text, 4000))
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.tabs)
        layout.addWidget(self.find_bar)
        self.setCentralWidget(central)
        self.folder = FolderPanels(self, loop)
        self.folder.tree.file_chosen.connect(self.open_path)
        self.folder.search.match_chosen.connect(self.open_at)
        self.folder.search.replace_requested.connect(self.replace_in_files)
        self._build_status_bar()
        self._build_menus()
        self._apply_settings()

    # --- building -----------------------------------------------------------------------------

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.position_label = QLabel()
        self.format_label = QLabel()
        self.language_label = QLabel()
        self.indent_label = QLabel()
        self.model_label = QLabel("No model")
        self.load_progress = QProgressBar()
        self.load_progress.setRange(0, 0)
        self.load_progress.setMaximumWidth(90)
        self.load_progress.setMaximumHeight(14)
        self.load_progress.hide()
        for widget in (self.position_label, self.indent_label, self.format_label, self.language_label, self.load_progress, self.model_label):
            bar.addPermanentWidget(widget)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda checked=False: slot())
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        menus = self.menuBar()
        file = menus.addMenu("&File")
        self._action(file, "&New", self.new_document, QKeySequence.StandardKey.New)
        self._action(file, "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self._action(file, "Open &Folder…", self.open_folder_dialog)
        self._action(file, "Go to &File…", self.go_to_file, "Ctrl+P")
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._action(file, "&Save", self.save, QKeySequence.StandardKey.Save)
        self._action(file, "Save &As…", self.save_as, QKeySequence.StandardKey.SaveAs)
        self._action(file, "Save A&ll", self.save_all, "Ctrl+Alt+S")
        self._action(file, "&Close", lambda: self.close_tab(self.current_editor()), QKeySequence.StandardKey.Close)
        file.addSeparator()
        self._action(file, "Settings…", self.open_settings, QKeySequence.StandardKey.Preferences)
        self._action(file, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        edit = menus.addMenu("&Edit")
        self._action(edit, "&Undo", lambda: self._on_editor(CodeEditor.safe_undo), QKeySequence.StandardKey.Undo)
        self._action(edit, "&Redo", lambda: self._on_editor(CodeEditor.safe_redo), QKeySequence.StandardKey.Redo)
        edit.addSeparator()
        self._action(edit, "Cu&t", lambda: self._on_editor(CodeEditor.cut))
        self._action(edit, "&Copy", lambda: self._on_editor(CodeEditor.copy))
        self._action(edit, "&Paste", lambda: self._on_editor(CodeEditor.paste))
        edit.addSeparator()
        self._action(edit, "Toggle &Comment", self.toggle_comment, "Ctrl+/")
        self._action(edit, "&Duplicate Lines", lambda: self._on_editor(CodeEditor.duplicate_lines), "Ctrl+Shift+D")
        self._action(edit, "Add Next &Occurrence", lambda: self._on_editor(CodeEditor.add_next_occurrence), "Ctrl+D")
        self._action(edit, "Move Lines &Up", lambda: self._on_editor(lambda e: e.move_lines(down=False)), "Alt+Up")
        self._action(edit, "Move Lines Do&wn", lambda: self._on_editor(lambda e: e.move_lines(down=True)), "Alt+Down")
        edit.addSeparator()
        self._action(edit, "&Find…", lambda: self.find_bar.open(replace=False), QKeySequence.StandardKey.Find)
        self._action(edit, "&Replace…", lambda: self.find_bar.open(replace=True), QKeySequence.StandardKey.Replace)
        self._action(edit, "Find &Next", lambda: self.find_bar.find(False), QKeySequence.StandardKey.FindNext)
        self._action(edit, "Find Pre&vious", lambda: self.find_bar.find(True), QKeySequence.StandardKey.FindPrevious)
        self._action(edit, "&Go to Line…", self.go_to_line, "Ctrl+G")
        self._action(edit, "Go to &Symbol…", self.go_to_symbol, "Ctrl+Shift+O")
        self._action(edit, "Find in F&older…", self.find_in_folder, "Ctrl+Shift+F")
        view = menus.addMenu("&View")
        self._action(view, "&Command Palette…", self.show_palette, "Ctrl+Shift+P")
        self.sidebar_action = self.folder.tree_dock.toggleViewAction()
        self.sidebar_action.setText("&Sidebar")
        self.sidebar_action.setShortcut(QKeySequence("Ctrl+B"))
        view.addAction(self.sidebar_action)
        view.addSeparator()
        self._action(view, "Zoom &In", lambda: self._on_editor(lambda e: e.zoom(1)), QKeySequence.StandardKey.ZoomIn)
        self._action(view, "Zoom &Out", lambda: self._on_editor(lambda e: e.zoom(-1)), QKeySequence.StandardKey.ZoomOut)
        self._action(view, "&Reset Zoom", lambda: self._on_editor(lambda e: e.zoom(0)), "Ctrl+0")
        view.addSeparator()
        self._action(view, "Next &Tab", lambda: self._step_tab(1), "Ctrl+PgDown").setShortcuts([QKeySequence("Ctrl+PgDown"), QKeySequence("Ctrl+Tab")])
        self._action(view, "Pre&vious Tab", lambda: self._step_tab(-1), "Ctrl+PgUp").setShortcuts([QKeySequence("Ctrl+PgUp"), QKeySequence("Ctrl+Shift+Tab")])
        self._action(view, "Reopen C&losed Tab", self.reopen_closed_tab, "Ctrl+Shift+T")
        view.addSeparator()
        self.wrap_action = self._action(view, "&Word Wrap", lambda: self._toggle("word_wrap", self.wrap_action), "Alt+Z")
        self.wrap_action.setCheckable(True)
        self.whitespace_action = self._action(view, "Show W&hitespace", lambda: self._toggle("show_whitespace", self.whitespace_action))
        self.whitespace_action.setCheckable(True)
        self.underline_action = self._action(view, "&Underline Low-Confidence Tokens", self._toggle_underline)
        self.underline_action.setCheckable(True)
        self.slow_action = self._action(view, "&Slow Motion", self._toggle_slow_motion)
        self.slow_action.setCheckable(True)
        ai = menus.addMenu("&AI")
        self.rewrite_action = self._action(ai, "&Rewrite Selection / Infill at Cursor", self.rewrite)
        self.fill_action = self._action(ai, "&Fill Every [MASK] Gap", self.fill_gaps)
        ai.addSeparator()
        self.accept_action = self._action(ai, "&Accept", lambda: self._on_session(InfillSession.accept))
        self.reject_action = self._action(ai, "Re&ject", lambda: self._on_session(InfillSession.reject))
        self._action(ai, "&Next Alternative", lambda: self._on_session(lambda s: s.cycle(1)))
        self._action(ai, "&Previous Alternative", lambda: self._on_session(lambda s: s.cycle(-1)))
        self.try_again_action = self._action(ai, "&Try Again", self.try_again)
        ai.addSeparator()
        self._action(ai, "Reload &Model", self.start_engine)
        help_menu = menus.addMenu("&Help")
        self._action(help_menu, "&About Sfumato", self.show_about)

    def _session_keys(self) -> SessionKeys:
        keys = self.settings.keys
        return SessionKeys(*(QKeySequence(keys[name]) for name in ("accept", "reject", "next_alternative", "previous_alternative", "try_again")))

    def _apply_settings(self) -> None:
        s = self.settings
        self.starter.options = InfillOptions(
            max_new_tokens=s.max_new_tokens,
            steps=s.steps or None,
            sampler_bound=s.sampler_bound or None,
            alternatives=s.alternatives,
            underline_low_confidence=s.underline_low_confidence,
        )
        self.starter.keys = self._session_keys()
        self.worker.slow_motion_ms = s.slow_motion_ms
        self.rewrite_action.setShortcut(QKeySequence(s.keys["rewrite"]))
        self.fill_action.setShortcut(QKeySequence(s.keys["fill_gaps"]))
        self.try_again_action.setShortcut(QKeySequence(s.keys["try_again"]))
        self.accept_action.setText(f"&Accept\t{s.keys['accept']}")
        self.reject_action.setText(f"Re&ject\t{s.keys['reject']}")
        self.underline_action.setChecked(s.underline_low_confidence)
        self.slow_action.setChecked(s.slow_motion_ms > 0)
        self.wrap_action.setChecked(s.word_wrap)
        self.whitespace_action.setChecked(s.show_whitespace)
        for document in self._documents.values():
            self._indent(document)
            document.editor.set_word_wrap(s.word_wrap)
            document.editor.set_show_whitespace(s.show_whitespace)
            document.editor.auto_close = s.auto_close
        self._show_indentation()

    def _indent(self, document: Document) -> None:
        """The file's own indentation where it showed one, else the settings'."""
        spaces, width = document.indentation or (self.settings.indent_with_spaces, None)
        document.editor.set_indentation(spaces, width or self.settings.indent_width)

    def _show_indentation(self) -> None:
        editor = self.current_editor()
        if editor is not None:
            self.indent_label.setText(f"Spaces: {editor.indent_width}" if editor.indent_with_spaces else f"Tabs: {editor.indent_width}")

    # --- the model ----------------------------------------------------------------------------

    def start_engine(self) -> None:
        s = self.settings
        for editor in self._documents:
            editor.end_session()
        device = None if s.device == "auto" else s.device
        self.load_progress.show()
        spec = self.model_override or s.model_spec
        self.worker.start(load_from_spec(spec, device, s.allow_downloads, s.trust_remote_code), spec)

    def _show_model_status(self, text: str) -> None:
        """A short label at the right (details in its tooltip); the whole line as a message."""
        worker = self.worker
        if worker.info is not None:
            self.model_label.setText(f"{worker.info.name} · {worker.info.device}")
        elif worker.error is not None:
            self.model_label.setText("No model")
        else:
            self.model_label.setText("Loading model…")
        self.model_label.setToolTip(text)
        self.load_progress.setVisible(worker.loading)
        self.statusBar().showMessage(text, 10000)

    # --- documents ----------------------------------------------------------------------------

    def current_editor(self) -> CodeEditor | None:
        widget = self.tabs.currentWidget()
        return widget if isinstance(widget, CodeEditor) else None

    def current_document(self) -> Document | None:
        editor = self.current_editor()
        return self._documents.get(editor) if editor is not None else None

    def documents(self) -> list[Document]:
        return [self._documents[self.tabs.widget(i)] for i in range(self.tabs.count())]

    def _new_editor(self) -> CodeEditor:
        editor = CodeEditor()
        editor.auto_close = self.settings.auto_close
        editor.set_word_wrap(self.settings.word_wrap)
        editor.set_show_whitespace(self.settings.show_whitespace)
        editor.document().modificationChanged.connect(lambda _=None, e=editor: self._update_title(e))
        editor.cursorPositionChanged.connect(self._update_position)
        editor.files_dropped.connect(lambda paths: [self.open_path(path) for path in paths])
        return editor

    def _add(self, document: Document) -> None:
        self._documents[document.editor] = document
        self._indent(document)
        self._watch(document)
        index = self.tabs.addTab(document.editor, document.name)
        self.tabs.setCurrentIndex(index)
        self._update_title(document.editor)
        document.editor.setFocus()

    def new_document(self) -> Document:
        self._untitled += 1
        document = Document(self._new_editor())
        document.untitled_number = self._untitled
        self._add(document)
        return document

    def open_path(self, path: str) -> Document | None:
        """Open ``path`` in a tab (or switch to it); a clear message and no tab when it is not text."""
        absolute = os.path.abspath(path)
        for document in self._documents.values():
            if document.path == absolute:
                self.tabs.setCurrentWidget(document.editor)
                return document
        editor = self._new_editor()
        try:
            document = Document.open(absolute, editor)
        except fileio.NotTextError as error:
            editor.deleteLater()
            self._error(f"Cannot open {os.path.basename(path)}: {error}. Nothing was opened.")
            return None
        except OSError as error:
            editor.deleteLater()
            self._error(f"Cannot open {path}: {error.strerror or error}.")
            return None
        current = self.current_document()
        if current is not None and current.path is None and not current.is_modified() and not current.editor.toPlainText():
            self._remove_tab(current.editor)
        self._add(document)
        self.settings.add_recent(absolute)
        self.settings.save(self.store)
        if document.longest_line > LONG_LINE:
            self.statusBar().showMessage(
                f"Opened {absolute}: it has a line of {document.longest_line:,} characters; "
                "editing near it may be slow.", 10000)
        else:
            self.statusBar().showMessage(f"Opened {absolute}", 3000)
        return document

    def open_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open", self._folder(), FILE_FILTER)
        for path in paths:
            self.open_path(path)

    def _folder(self) -> str:
        document = self.current_document()
        if document is not None and document.path:
            return os.path.dirname(document.path)
        return self.folder.root or os.getcwd()

    # --- the open folder ----------------------------------------------------------------------

    def open_folder(self, folder: str) -> None:
        """Show ``folder``'s files in the sidebar; Go to File searches them."""
        self.folder.open(folder)

    def find_in_folder(self) -> None:
        """Show the Find in Folder panel, its box holding the selection (if any) and focused."""
        editor = self.current_editor()
        self.folder.show_search(editor.textCursor().selectedText() if editor is not None else "")

    def replace_in_files(self, paths: list[str], query: str, replacement: str, case_sensitive: bool) -> None:
        """Replace ``query`` in each file's tab (opened if need be), one undo step per file; nothing
        is saved, so every change can be reviewed and undone."""
        flags = QTextDocument.FindFlag.FindCaseSensitively if case_sensitive else QTextDocument.FindFlag(0)
        replaced, files = 0, 0
        for path in paths[:MAX_FILES_REPLACED]:
            document = self.open_path(path)
            if document is None:
                continue
            document.editor.end_session()
            count = replace_every(document.editor.document(), query, flags, lambda _match: replacement)
            replaced += count
            files += bool(count)
        more = f" (the first {MAX_FILES_REPLACED} files; search again for the rest)" if len(paths) > MAX_FILES_REPLACED else ""
        self.folder.search.summary.setText(f"Replaced {replaced} in {files} files{more}: review, then Save All.")

    def open_at(self, path: str, line: int, column: int) -> None:
        """Open ``path`` with the cursor at ``line`` (1-based) and ``column`` (0-based, characters)."""
        document = self.open_path(path)
        if document is None:
            return
        editor = document.editor
        editor.go_to_line(line)
        block = editor.textCursor().block()
        cursor = editor.textCursor()
        cursor.setPosition(block.position() + position_of(block.text(), min(column, len(block.text()))))
        editor.setTextCursor(cursor)
        editor.setFocus()

    def open_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open Folder", self._folder())
        if folder:
            self.open_folder(folder)

    def go_to_symbol(self) -> None:
        """A picker over the functions and classes the current file defines."""
        document = self.current_document()
        if document is None:
            return
        found = symbols(document.highlighter.lexer, document.editor.toPlainText()) if document.highlighter is not None else []
        if not found:
            self.statusBar().showMessage(f"No functions or classes found in {document.name}.", 4000)
            return
        editor = document.editor
        entries = [(name, f"line {line + 1}", lambda n=line + 1: editor.go_to_line(n)) for name, line in found]
        self.picker = Picker("Go to Symbol", entries, self)
        self.picker.open()

    def go_to_file(self) -> None:
        """A picker over the open folder's files (or, with no folder, the current file's folder)."""
        root = self.folder.root or self._folder()
        entries = [(path, "", lambda p=path: self.open_path(os.path.join(root, p))) for path in folder_files(root)]
        self.picker = Picker("Go to File", entries, self)
        self.picker.open()

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for path in self.settings.recent_files:
            self.recent_menu.addAction(path).triggered.connect(lambda checked=False, p=path: self.open_path(p))
        if not self.settings.recent_files:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def save(self, document: Document | None = None) -> bool:
        document = document or self.current_document()
        if document is None:
            return False
        if document.path is None:
            return self.save_as(document)
        return self._write(document, None)

    def save_all(self) -> bool:
        """Save every document with unsaved changes (an untitled one asks for a name); False if one was not."""
        return all([self.save(document) for document in self.documents() if document.is_modified()])

    def save_as(self, document: Document | None = None) -> bool:
        document = document or self.current_document()
        if document is None:
            return False
        path, _ = QFileDialog.getSaveFileName(self, "Save As", document.path or self._folder(), FILE_FILTER)
        return bool(path) and self._write(document, path)

    def _write(self, document: Document, path: str | None) -> bool:
        if path is None and document.disk_state() == "changed" and not self._overwrite_changed(document):
            return False
        try:
            document.save(path)
        except UnicodeEncodeError as error:
            answer = QMessageBox.question(
                self,
                "Encoding",
                f"{document.name} is stored in {document.format.encoding.upper()}, which cannot hold "
                f"{error.object[error.start:error.end]!r}. Save it as UTF-8 instead?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                self.statusBar().showMessage("Not saved; the text is still here.", 6000)
                return False
            document.format = fileio.TextFormat("utf-8", False, document.format.newline)
            self.format_label.setText(document.format.label)
            return self._write(document, path)
        except OSError as error:
            self._error(f"Cannot save {path or document.path}: {error.strerror or error}. The text is still here.")
            return False
        self.tabs.setTabText(self.tabs.indexOf(document.editor), document.name)
        if path is not None:
            document.refresh_committed()  # a new name: another file as far as git is concerned
        self._watch(document)
        self.settings.add_recent(document.path)
        self.settings.save(self.store)
        self._update_title(document.editor)
        self.statusBar().showMessage(f"Saved {document.path}", 3000)
        return True

    def _overwrite_changed(self, document: Document) -> bool:
        """Save found the file changed by another program (the watcher has not told us yet): ask."""
        answer = QMessageBox.question(
            self,
            "File changed on disk",
            f"{document.name} was changed by another program since it was opened or saved. "
            "Replace it with your text?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer != QMessageBox.StandardButton.Save:
            self.statusBar().showMessage("Not saved; the file on disk and your text are both as they were.", 6000)
            return False
        return True

    def close_tab(self, editor: CodeEditor | None) -> bool:
        """Close a tab, asking first when it has unsaved changes; False when the user cancels."""
        if editor is None:
            return False
        document = self._documents[editor]
        if document.is_modified():
            self.tabs.setCurrentWidget(editor)
            answer = QMessageBox.question(
                self,
                "Unsaved changes",
                f"Save the changes to {document.name}?",
                QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
                QMessageBox.StandardButton.Save,
            )
            if answer == QMessageBox.StandardButton.Cancel or (answer == QMessageBox.StandardButton.Save and not self.save(document)):
                return False
        self._remove_tab(editor)
        if document.path is not None:
            self._closed_paths = [p for p in self._closed_paths if p != document.path][-MAX_CLOSED_REMEMBERED + 1 :] + [document.path]
        return True

    def _tab_menu(self, point) -> None:
        index = self.tabs.tabBar().tabAt(point)
        if index >= 0:
            self.tab_menu(index).popup(self.tabs.tabBar().mapToGlobal(point))

    def tab_menu(self, index: int) -> QMenu:
        """A tab's right-click menu: close it, the others or those to its right; copy its path."""
        editor = self.tabs.widget(index)
        document = self._documents[editor]
        menu = QMenu(self)
        menu.addAction("Close", lambda: self.close_tab(editor))
        menu.addAction("Close Others", lambda: self._close_all([d.editor for d in self.documents() if d.editor is not editor]))
        menu.addAction("Close to the Right", lambda: self._close_all([self.tabs.widget(i) for i in range(index + 1, self.tabs.count())]))
        copy = menu.addAction("Copy Path", lambda: QApplication.clipboard().setText(document.path))
        copy.setEnabled(document.path is not None)
        return menu

    def _close_all(self, editors: list[CodeEditor]) -> None:
        """Close these tabs in turn; a Cancel at an unsaved one stops there."""
        for editor in editors:
            if not self.close_tab(editor):
                return

    def reopen_closed_tab(self) -> None:
        """Open again the most recently closed file that is not open now."""
        open_now = {document.path for document in self.documents()}
        while self._closed_paths:
            path = self._closed_paths.pop()
            if path not in open_now and os.path.isfile(path):
                self.open_path(path)
                return
        self.statusBar().showMessage("No closed tab to reopen.", 3000)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        """A middle click on a tab closes it."""
        if watched is self.tabs.tabBar() and event.type() == QEvent.Type.MouseButtonRelease and event.button() == Qt.MouseButton.MiddleButton:
            index = self.tabs.tabBar().tabAt(event.position().toPoint())
            if index >= 0:
                self.close_tab(self.tabs.widget(index))
                return True
        return super().eventFilter(watched, event)

    def _remove_tab(self, editor: CodeEditor) -> None:
        editor.end_session()
        path = self._documents[editor].path
        if path and path in self.watcher.files():
            self.watcher.removePath(path)
        self.tabs.removeTab(self.tabs.indexOf(editor))
        del self._documents[editor]
        editor.deleteLater()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        open_now = self.open_files_now()
        for document in self.documents():
            if not self.close_tab(document.editor):
                event.ignore()
                return
        remember(self.store, open_now if self.settings.reopen_files else [])
        self.settings.folder = self.folder.root if self.settings.reopen_files and self.folder.tree_dock.isVisible() else ""
        self.settings.save(self.store)
        self.worker.stop()
        event.accept()

    # --- the files of the last session --------------------------------------------------------

    def open_files_now(self) -> list[OpenFile]:
        """The tabs that have a file, in tab order, with their selections and scroll positions."""
        files = []
        for index in range(self.tabs.count()):
            editor = self.tabs.widget(index)
            document = self._documents[editor]
            if document.path is not None:
                cursor = editor.textCursor()
                files.append(OpenFile(document.path, cursor.anchor(), cursor.position(),
                                      editor.firstVisibleBlock().blockNumber(), editor is self.current_editor()))
        return files

    def reopen_last_files(self) -> None:
        """Open the files remembered at the last close (those still there), cursors where they were."""
        current = None
        for item in recall(self.store):
            if not os.path.isfile(item.path):
                continue
            document = self.open_path(item.path)
            if document is None:
                continue
            editor = document.editor
            end = editor.document().characterCount() - 1
            cursor = editor.textCursor()
            cursor.setPosition(min(item.anchor, end))
            cursor.setPosition(min(item.position, end), QTextCursor.MoveMode.KeepAnchor)
            editor.setTextCursor(cursor)
            QTimer.singleShot(0, lambda e=editor, line=item.first_line: e.verticalScrollBar().setValue(line))
            if item.current:
                current = editor
        if current is not None:
            self.tabs.setCurrentWidget(current)

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Follow the system's light/dark switch; coming back to the window, ask git again (a commit
        made meanwhile clears the current file's changed-line marks)."""
        if event.type() == QEvent.Type.PaletteChange:
            for document in self._documents.values():
                if document.highlighter is not None:
                    document.highlighter.set_dark(palette_is_dark())
        elif event.type() == QEvent.Type.ActivationChange and self.isActiveWindow() and self.current_document() is not None:
            self.current_document().refresh_committed()
        super().changeEvent(event)

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt override
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_path(url.toLocalFile())
        event.acceptProposedAction()

    # --- files changed by other programs ------------------------------------------------------

    def _watch(self, document: Document) -> None:
        if document.path and document.path not in self.watcher.files() and os.path.exists(document.path):
            self.watcher.addPath(document.path)

    def _check_disk(self, path: str) -> None:
        """Another program wrote or removed ``path``: reload it, or let the user choose."""
        document = next((d for d in self._documents.values() if d.path == path), None)
        if document is None:
            return
        self._watch(document)  # an atomic replace drops the watch; take it up again
        state = document.disk_state()
        if state == "same":
            return
        if state == "deleted":
            document.disk_stamp = None
            document.editor.document().setModified(True)  # closing now would lose the text
            self.statusBar().showMessage(f"{document.name} was deleted on disk; your text is kept, Save writes it back.", 10000)
            self._update_title(document.editor)
            return
        if not document.is_modified():
            self._reload(document)
            return
        box = QMessageBox(QMessageBox.Icon.Question, "File changed on disk",
                          f"{document.name} was changed by another program, and you have unsaved changes here.",
                          QMessageBox.StandardButton.NoButton, self)
        reload = box.addButton("Reload from disk (undo brings your text back)", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Keep my text", QMessageBox.ButtonRole.RejectRole)
        box.finished.connect(lambda _: self._reload(document) if box.clickedButton() is reload else self._keep(document))
        self.message_box = box
        box.open()

    def _reload(self, document: Document) -> None:
        try:
            document.reload()
        except (fileio.NotTextError, OSError) as error:
            self._error(f"Cannot reload {document.name}: {error}. Your text is kept.")
            return
        self._update_title(document.editor)
        self.statusBar().showMessage(f"Reloaded {document.name}: it was changed on disk.", 6000)

    def _keep(self, document: Document) -> None:
        document.disk_stamp = None  # differs from the file: the next save overwrites it knowingly
        self.statusBar().showMessage(f"Kept your text of {document.name}; saving will replace the file on disk.", 6000)

    # --- small actions ------------------------------------------------------------------------

    def _on_editor(self, action) -> None:
        editor = self.current_editor()
        if editor is not None:
            action(editor)

    def _on_session(self, action) -> None:
        editor = self.current_editor()
        if editor is not None and editor.session is not None:
            action(editor.session)

    def show_palette(self) -> None:
        self.picker = Picker("Commands", menu_commands(self.menuBar()), self)
        self.picker.open()

    def toggle_comment(self) -> None:
        document = self.current_document()
        if document is not None and not document.editor.toggle_comment():
            self.statusBar().showMessage(f"{document.language} has no line comments.", 4000)

    def _step_tab(self, step: int) -> None:
        if self.tabs.count():
            self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    def show_about(self) -> None:
        from app.about import show_about

        show_about(self, self.worker.info)

    def go_to_line(self) -> None:
        editor = self.current_editor()
        if editor is None:
            return
        line, ok = QInputDialog.getInt(self, "Go to Line", f"Line (1–{editor.blockCount()}):",
                                       editor.textCursor().blockNumber() + 1, 1, editor.blockCount())
        if ok:
            editor.go_to_line(line)

    def _toggle_underline(self) -> None:
        self.settings.underline_low_confidence = self.underline_action.isChecked()
        self.settings.save(self.store)
        self._apply_settings()
        for editor in self._documents:
            if editor.session is not None:
                editor.session.set_underline(self.settings.underline_low_confidence)

    def _toggle(self, setting: str, action: QAction) -> None:
        """A checkable View entry: the setting follows the check mark, saved and applied at once."""
        setattr(self.settings, setting, action.isChecked())
        self.settings.save(self.store)
        self._apply_settings()

    def _toggle_slow_motion(self) -> None:
        self.settings.slow_motion_ms = 250 if self.slow_action.isChecked() else 0
        self.settings.save(self.store)
        self._apply_settings()

    def open_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self)
        if dialog.exec() != SettingsDialog.DialogCode.Accepted:
            return
        before = self.settings
        self.settings = dialog.result_settings()
        self.settings.save(self.store)
        self._apply_settings()
        model_fields = ("model_spec", "device", "allow_downloads", "trust_remote_code")
        if any(getattr(before, name) != getattr(self.settings, name) for name in model_fields):
            self.model_override = None  # the user chose a model: it wins over the command line
            self.start_engine()

    def _error(self, text: str) -> None:
        """Tell the user in the status bar and in a window-modal box that does not block the loop."""
        self.statusBar().showMessage(text, 10000)
        self.message_box = QMessageBox(QMessageBox.Icon.Warning, "Sfumato", text, QMessageBox.StandardButton.Ok, self)
        self.message_box.open()

    def _update_title(self, editor: CodeEditor) -> None:
        document = self._documents.get(editor)
        if document is None:
            return
        index = self.tabs.indexOf(editor)
        self.tabs.setTabText(index, document.name + (" •" if document.is_modified() else ""))
        self.tabs.setTabToolTip(index, document.path or document.name)
        if editor is self.current_editor():
            self.setWindowTitle(f"{document.name}{' •' if document.is_modified() else ''} — Sfumato")

    def _update_position(self) -> None:
        editor = self.current_editor()
        if editor is not None:
            cursor = editor.textCursor()
            self.position_label.setText(f"Ln {cursor.blockNumber() + 1}, Col {cursor.positionInBlock() + 1}")

    def _current_changed(self) -> None:
        editor = self.current_editor()
        self.find_bar.set_editor(editor)
        document = self.current_document()
        if document is None:
            self.setWindowTitle("Sfumato")
            return
        self._update_title(editor)
        self._update_position()
        self.format_label.setText(document.format.label)
        self.language_label.setText(document.language)
        self._show_indentation()

    # --- the AI actions -----------------------------------------------------------------------

    def rewrite(self) -> None:
        """Ctrl+K: with a selection, ask strength (and instruction); without, infill at once."""
        editor = self.current_editor()
        if editor is None or not self._model_ready():
            return
        editor.end_session()
        instruction_tuned = self.worker.info is not None and self.worker.info.instruction_tuned
        if editor.textCursor().hasSelection() or instruction_tuned:
            box = InlineBox(editor, self.settings.rewrite_strength, instruction_tuned)
            box.submitted.connect(lambda strength, text: self._rewrite_with(editor, strength, text))
            box.open()
        else:
            self._start(editor, lambda: self.starter.rewrite(editor))

    def _rewrite_with(self, editor: CodeEditor, strength: float, instruction: str) -> None:
        """Run the box's rewrite; its strength becomes the one the next box starts at."""
        if strength != self.settings.rewrite_strength:
            self.settings.rewrite_strength = strength
            self.settings.save(self.store)
        self._start(editor, lambda: self.starter.rewrite(editor, strength, instruction))

    def fill_gaps(self) -> None:
        editor = self.current_editor()
        if editor is not None and self._model_ready():
            self._start(editor, lambda: self.starter.fill_gaps(editor))

    def try_again(self) -> None:
        """Put the original back and run the same request again: a new draw, the same settings."""
        editor = self.current_editor()
        if editor is None or editor.session is None or editor.session.request is None:
            self.statusBar().showMessage("Nothing to try again: Ctrl+K starts a rewrite.", 4000)
        elif self._model_ready():
            self._start(editor, editor.session.again)

    def _model_ready(self) -> bool:
        if self.worker.error is not None:
            self._error(f"AI edits are off: {self.worker.error}. Choose a model in Settings.")
            return False
        if self.worker.loading:
            self.statusBar().showMessage("The model is still loading; the request will start when it is ready.", 4000)
        return True

    def _start(self, editor: CodeEditor, begin) -> None:
        editor.setFocus()  # Tab, Esc and Alt+] reach the session only from the editor
        try:
            session = begin()
        except ValueError as error:
            self.statusBar().showMessage(str(error), 6000)
            return
        if session is None:
            return
        session.progress.connect(lambda text: self.statusBar().showMessage(text))
        session.again_requested.connect(self.try_again)
        session.ended.connect(lambda outcome, text, e=editor: self._session_ended(e, text))
        if editor.document().isRedoAvailable():
            self.statusBar().showMessage("Denoising… (the redo history is replaced by this edit)")
        else:
            self.statusBar().showMessage("Denoising…")

    def _session_ended(self, editor: CodeEditor, text: str) -> None:
        self.statusBar().showMessage(text, 6000)
        self._update_title(editor)


def open_files(window: MainWindow, files: list[str]) -> None:
    """Open ``files`` in ``window``; with none, the last session's files (setting) or an untitled document."""
    for path in files:
        if os.path.isdir(path):
            window.open_folder(path)
        else:
            window.open_path(path)
    if not files and window.settings.reopen_files:
        if window.settings.folder and os.path.isdir(window.settings.folder):
            window.open_folder(window.settings.folder)
        window.reopen_last_files()
    if not window.documents():
        window.new_document()


ENGINE_START_DELAY_MS = 150  # let the window paint before the import of torch competes for the CPU


def first_show(window: MainWindow) -> None:
    """Show the window, then start loading the model once it has had time to paint."""
    window.show()
    QTimer.singleShot(ENGINE_START_DELAY_MS, window.start_engine)

