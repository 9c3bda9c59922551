"""The main window: it puts together the document tabs (app/documenttabs.py), the AI actions
(app/aicontroller.py), the menus (app/menus.py), the find bar, the folder panels and the status
bar, applies the settings, and holds the small commands that move around the text and the folder.

Importing this module does not import torch: the model is loaded by the inference worker's thread
after the window is up.
"""

from __future__ import annotations

import asyncio
import os

from PySide6.QtCore import QEvent, QSettings, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence, QTextDocument
from PySide6.QtWidgets import QApplication, QFileDialog, QInputDialog, QLabel, QMainWindow, QVBoxLayout, QWidget

from sfumato.app.aicontroller import AiController
from sfumato.app.commandkeys import command_keys_of
from sfumato.app.document import Document
from sfumato.app.documenttabs import DocumentTabs
from sfumato.app.findbar import FindBar, replace_every
from sfumato.app.folder import folder_files
from sfumato.app.folderpanels import FolderPanels
from sfumato.app.menus import build_menus
from sfumato.app.notices import Notices
from sfumato.app.palette import Picker, menu_commands
from sfumato.app.reopen import recall, remember
from sfumato.app.settings import Settings
from sfumato.app.settings_dialog import SettingsDialog
from sfumato.app.symbols import symbols
from sfumato.app.textpositions import position_of
from sfumato.app.theme import apply_theme, current_style, editor_font, editor_palette
from sfumato.app.welcome import Welcome, welcome_text

MAX_FILES_REPLACED = 200  # Replace All in Folder opens at most this many tabs at once
MODEL_SETTINGS = {  # a change reloads
    "model_spec", "device", "quantize", "allow_downloads", "trust_remote_code", "use_server", "server_url",
    "server_model",
}


class MainWindow(QMainWindow):
    """``tabs`` (the documents), ``ai`` (model and AI actions), ``folder`` (sidebar panels),
    ``find_bar``, ``notices`` (status line, message boxes), ``menu_actions`` (entries the settings set)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, store: QSettings, model_spec: str | None = None,
                 device: str | None = None, quantize: str | None = None):
        super().__init__()
        self._loop = loop
        self.store = store
        self.settings = Settings.load(store)
        self.notices = Notices(self)
        self.picker: Picker | None = None  # the command palette or Go to File, while open
        self.welcome: Welcome | None = None  # in the untitled document of a start without files
        self.setWindowTitle("Sfumato")
        self.resize(1100, 760)
        self.setAcceptDrops(True)
        self.folder = FolderPanels(self, loop)
        self.tabs = DocumentTabs(self.notices, lambda: self.folder.root or os.getcwd())
        self.tabs.document_added.connect(self._document_added)
        self.tabs.file_used.connect(self._remember_recent)
        self.tabs.title_changed.connect(self.setWindowTitle)
        self.tabs.format_changed.connect(lambda document: self.format_label.setText(document.format.label))
        self.tabs.renamed.connect(self._renamed)
        self.tabs.currentChanged.connect(self._current_changed)
        self.tabs.file_used.connect(lambda path: self.folder.context.refresh())
        self.ai = AiController(loop, self.tabs, self.notices, self.settings, self.save_settings, model_spec,
                               self.folder.context, {"device": device, "quantize": quantize})
        self.find_bar = FindBar()
        self.find_bar.hide()
        self.find_bar.message.connect(lambda text: self.notices.say(text, 4000))
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.tabs)
        layout.addWidget(self.find_bar)
        self.setCentralWidget(central)
        self.folder.tree.file_chosen.connect(self.tabs.open_path)
        self.folder.search.match_chosen.connect(self.open_at)
        self.folder.search.replace_requested.connect(self.replace_in_files)
        self._build_status_bar()
        self.ai.worker.status.connect(self._refresh_welcome)
        self.menu_actions = build_menus(self)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._desktop_scheme_changed)
        self.apply_settings()

    def _build_status_bar(self) -> None:
        self.position_label = QLabel()
        self.format_label = QLabel()
        self.language_label = QLabel()
        self.indent_label = QLabel()
        for widget in (self.position_label, self.indent_label, self.format_label, self.language_label,
                       self.ai.load_progress, self.ai.cancel_load, self.ai.model_label):
            self.statusBar().addPermanentWidget(widget)

    # --- settings -----------------------------------------------------------------------------

    def save_settings(self) -> None:
        self.settings.save(self.store)

    def apply_settings(self) -> None:
        s, actions = self.settings, self.menu_actions
        self.ai.apply_settings()
        actions.rewrite.setShortcut(QKeySequence(s.keys["rewrite"]))
        actions.fill.setShortcut(QKeySequence(s.keys["fill_gaps"]))
        actions.try_again.setShortcut(QKeySequence(s.keys["try_again"]))
        actions.next_alternative.setShortcut(QKeySequence(s.keys["next_alternative"]))
        actions.previous_alternative.setShortcut(QKeySequence(s.keys["previous_alternative"]))
        actions.accept.setText(f"&Accept\t{s.keys['accept']}")
        actions.accept_word.setText(f"Accept &Word\t{s.keys['accept_word']}")
        actions.reject.setText(f"Re&ject\t{s.keys['reject']}")
        actions.review_diff.setText(f"Review as &Diff\t{s.keys['toggle_diff']}")
        actions.review_diff.setChecked(s.review_diff)
        actions.suggest.setChecked(s.suggest_while_typing)
        actions.underline.setChecked(s.underline_low_confidence)
        actions.slow_motion.setChecked(s.slow_motion_ms > 0)
        actions.wrap.setChecked(getattr(s, self.wrap_setting()))
        if s.theme in actions.themes:
            actions.themes[s.theme].setChecked(True)
        actions.whitespace.setChecked(s.show_whitespace)
        apply_theme(s.theme, s.light_style, s.dark_style)
        for document in self.tabs.documents():
            self._configure(document)
        self._show_indentation()
        self._refresh_welcome()

    def _configure(self, document: Document) -> None:
        """The editor as the settings say; indentation: the file's own where it showed one."""
        s, editor = self.settings, document.editor
        spaces, width = document.indentation or (s.indent_with_spaces, None)
        editor.set_indentation(spaces, width or s.indent_width)
        editor.set_word_wrap(s.wrap_prose if document.is_prose else s.word_wrap)
        editor.set_show_whitespace(s.show_whitespace)
        editor.auto_close = s.auto_close
        editor.prose = document.is_prose
        editor.command_keys = command_keys_of(s.keys, self.findChildren(QAction))
        editor.set_text_font(editor_font(s.font_family, s.font_size))
        self._colour(document)

    def _renamed(self, document: Document) -> None:
        """A document took a name (Save As, a restore): its language, wrap and review follow it."""
        self._configure(document)
        if document is self.tabs.current_document():
            self._current_changed()

    def _colour(self, document: Document) -> None:
        """The text area's colours and its highlighting from the pygments style for the theme now."""
        style = current_style()
        document.editor.suggestion.clear()  # highlighting the line again would draw it in the text's colours
        document.editor.setPalette(editor_palette(QApplication.palette(), style))
        if document.highlighter is not None:
            document.highlighter.set_style(style)

    def apply_look(self, s: Settings) -> None:
        """The theme, text styles and font of ``s``: the settings, or the settings dialog's before OK."""
        apply_theme(s.theme, s.light_style, s.dark_style)
        for document in self.tabs.documents():
            document.editor.set_text_font(editor_font(s.font_family, s.font_size))
            self._colour(document)

    def _desktop_scheme_changed(self, _scheme) -> None:
        self.apply_look(self.settings)

    def _document_added(self, document: Document) -> None:
        self._configure(document)
        document.editor.cursorPositionChanged.connect(self._update_position)
        document.editor.cursorPositionChanged.connect(self.ai.cursor_moved)

    def show_welcome(self, document: Document) -> None:
        self.welcome = Welcome(document.editor)
        self._refresh_welcome()

    def _refresh_welcome(self) -> None:
        """The welcome with the keys and the model as they are now (loading, loaded, failed)."""
        if self.welcome is None:
            return
        worker, spec = self.ai.worker, self.ai.model_override or self.settings.model_spec
        if worker.info is not None:
            model = f"{worker.info.name} on {worker.info.device}"
        elif worker.error is not None:
            model = f"none ({spec} did not load: {worker.error})"
        else:
            model = f"{spec} (loading…)"
        self.welcome.show(welcome_text(self.settings.keys, model))

    def wrap_setting(self) -> str:
        """The setting View > Word Wrap shows and sets: the one for the current document's kind."""
        document = self.tabs.current_document()
        return "wrap_prose" if document is not None and document.is_prose else "word_wrap"

    def _remember_recent(self, path: str) -> None:
        self.settings.add_recent(path)
        self.save_settings()

    def toggle(self, setting: str, value: object) -> None:
        """A checkable View entry: the setting follows the check mark, saved and applied at once."""
        setattr(self.settings, setting, value)
        self.save_settings()
        self.apply_settings()

    def open_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self, self.folder.context.sent_files())
        dialog.look_changed.connect(self.apply_look)
        if dialog.exec() != SettingsDialog.DialogCode.Accepted:
            self.apply_settings()  # the look as it was before the dialog's preview
            return
        changed = self.settings.replace_with(dialog.result_settings())
        self.save_settings()
        self.apply_settings()
        if changed & MODEL_SETTINGS:
            self.ai.model_override = None  # the user chose a model: it wins over the command line
            self.ai.hardware_override = {}
            self.ai.start_engine()

    # --- the status bar -----------------------------------------------------------------------

    def _show_indentation(self) -> None:
        editor = self.tabs.current_editor()
        if editor is not None:
            self.indent_label.setText(f"Spaces: {editor.indent_width}" if editor.indent_with_spaces else f"Tabs: {editor.indent_width}")

    def _update_position(self) -> None:
        editor = self.tabs.current_editor()
        if editor is not None:
            cursor = editor.textCursor()
            self.position_label.setText(f"Ln {cursor.blockNumber() + 1}, Col {cursor.positionInBlock() + 1}")

    def _current_changed(self) -> None:
        editor = self.tabs.current_editor()
        self.find_bar.set_editor(editor)
        document = self.tabs.current_document()
        if document is None:
            self.setWindowTitle("Sfumato")
            return
        self.tabs.update_title(editor)
        self._update_position()
        self.format_label.setText(document.format.label)
        self.language_label.setText(document.language)
        self.menu_actions.wrap.setChecked(getattr(self.settings, self.wrap_setting()))
        self._show_indentation()

    # --- the open folder ----------------------------------------------------------------------

    def open_folder(self, folder: str) -> None:
        """Show ``folder``'s files in the sidebar; Go to File searches them."""
        self.folder.open(folder)

    def open_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open Folder", self.tabs.folder())
        if folder:
            self.open_folder(folder)

    def find_in_folder(self) -> None:
        """Show the Find in Folder panel, its box holding the selection (if any) and focused."""
        editor = self.tabs.current_editor()
        self.folder.show_search(editor.textCursor().selectedText() if editor is not None else "")

    def replace_in_files(self, paths: list[str], query: str, replacement: str, case_sensitive: bool) -> None:
        """Replace ``query`` in each file's tab (opened if need be), one undo step per file; nothing
        is saved, so every change can be reviewed and undone."""
        flags = QTextDocument.FindFlag.FindCaseSensitively if case_sensitive else QTextDocument.FindFlag(0)
        replaced, files = 0, 0
        for path in paths[:MAX_FILES_REPLACED]:
            document = self.tabs.open_path(path)
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
        document = self.tabs.open_path(path)
        if document is None:
            return
        editor = document.editor
        editor.go_to_line(line)
        block = editor.textCursor().block()
        cursor = editor.textCursor()
        cursor.setPosition(block.position() + position_of(block.text(), min(column, len(block.text()))))
        editor.setTextCursor(cursor)
        editor.setFocus()

    def go_to_file(self) -> asyncio.Task:
        """A picker over the open folder's files (or, with no folder, the current file's folder),
        filled once a worker thread has listed them: walked on the UI thread, a home folder's
        50,000 files froze the window for 0.7-6.6 s at every Ctrl+P."""
        root = self.folder.root or self.tabs.folder()
        self.picker = picker = Picker("Go to File", [], self, waiting="Reading the folder…")
        picker.open()
        return self._loop.create_task(self._list_files(picker, root))

    async def _list_files(self, picker: Picker, root: str) -> None:
        files = await self._loop.run_in_executor(None, folder_files, root)
        picker.set_entries([(path, "", lambda p=path: self.tabs.open_path(os.path.join(root, p))) for path in files])

    def fill_recent(self) -> None:
        menu = self.menu_actions.recent
        menu.clear()
        for path in self.settings.recent_files:
            menu.addAction(path).triggered.connect(lambda checked=False, p=path: self.tabs.open_path(p))
        if not self.settings.recent_files:
            menu.addAction("(none)").setEnabled(False)

    # --- small commands -----------------------------------------------------------------------

    def on_editor(self, action) -> None:
        editor = self.tabs.current_editor()
        if editor is not None:
            action(editor)

    def show_palette(self) -> None:
        self.picker = Picker("Commands", menu_commands(self.menuBar()), self)
        self.picker.open()

    def go_to_symbol(self) -> None:
        """A picker over the functions and classes the current file defines."""
        document = self.tabs.current_document()
        if document is None:
            return
        found = symbols(document.highlighter.lexer, document.editor.toPlainText()) if document.highlighter is not None else []
        if not found:
            self.notices.say(f"No functions or classes found in {document.name}.", 4000)
            return
        editor = document.editor
        entries = [(name, f"line {line + 1}", lambda n=line + 1: editor.go_to_line(n)) for name, line in found]
        self.picker = Picker("Go to Symbol", entries, self)
        self.picker.open()

    def go_to_line(self) -> None:
        editor = self.tabs.current_editor()
        if editor is None:
            return
        line, ok = QInputDialog.getInt(self, "Go to Line", f"Line (1–{editor.blockCount()}):",
                                       editor.textCursor().blockNumber() + 1, 1, editor.blockCount())
        if ok:
            editor.go_to_line(line)

    def toggle_comment(self) -> None:
        document = self.tabs.current_document()
        if document is not None and not document.editor.toggle_comment():
            self.notices.say(f"{document.language} has no line comments.", 4000)

    def step_tab(self, step: int) -> None:
        if self.tabs.count():
            self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    def show_shortcuts(self) -> None:
        from sfumato.app.shortcuts import ShortcutsDialog

        self.shortcuts = ShortcutsDialog(self.menuBar(), self)
        self.shortcuts.open()

    def show_about(self) -> None:
        from sfumato.app.about import show_about

        show_about(self, self.ai.worker.info)

    # --- the window itself --------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        open_now = self.tabs.open_files_now()
        if not self.tabs.close_all([document.editor for document in self.tabs.documents()]):
            event.ignore()
            return
        remember(self.store, open_now if self.settings.reopen_files else [])
        self.settings.folder = self.folder.root if self.settings.reopen_files and self.folder.tree_dock.isVisible() else ""
        self.save_settings()
        self.ai.worker.stop()
        event.accept()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        """The application's palette changed (light/dark): recolour the text; coming back to the
        window, ask git again (a commit made meanwhile clears the current file's changed-line marks)."""
        if event.type() == QEvent.Type.PaletteChange:
            for document in self.tabs.documents():
                self._colour(document)
        elif event.type() == QEvent.Type.ActivationChange and self.isActiveWindow() and self.tabs.current_document() is not None:
            self.tabs.current_document().refresh_committed()
        super().changeEvent(event)

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt override
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.tabs.open_path(url.toLocalFile())
        event.acceptProposedAction()


def open_files(window: MainWindow, files: list[str]) -> None:
    """Open ``files`` in ``window``; with none, the last session's files (setting) or an untitled document."""
    for path in files:
        if os.path.isdir(path):
            window.open_folder(path)
        else:
            window.tabs.open_path(path)
    if not files and window.settings.reopen_files:
        if window.settings.folder and os.path.isdir(window.settings.folder):
            window.open_folder(window.settings.folder)
        window.tabs.reopen(recall(window.store))
    if not window.tabs.documents():
        window.show_welcome(window.tabs.new_document())


ENGINE_START_DELAY_MS = 150  # let the window paint before the import of torch competes for the CPU


def first_show(window: MainWindow) -> None:
    """Show the window, then start loading the model once it has had time to paint."""
    window.show()
    QTimer.singleShot(ENGINE_START_DELAY_MS, window.ai.start_engine)
