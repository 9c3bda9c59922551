"""The window's tabs of documents: new, open, save, close and reopen them, and follow their files
when another program changes them on disk."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from PySide6.QtCore import QEvent, QFileSystemWatcher, Qt, QTimer, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication, QFileDialog, QMenu, QMessageBox, QTabWidget

from sfumato.app import document_fill, fileio
from sfumato.app.codeeditor import CodeEditor
from sfumato.app.document import Document
from sfumato.app.notices import Notices
from sfumato.app.reopen import OpenFile

MAX_CLOSED_REMEMBERED = 20
LONG_LINE = 100_000  # characters; Qt lays out a whole line at once, so longer ones get a warning
FILE_FILTER = "All files (*);;Python (*.py);;Text (*.txt *.md)"


class DocumentTabs(QTabWidget):
    """One tab per open document (its ``CodeEditor``); ``documents()`` lists them in tab order.

    ``document_added`` lets the window configure a new document's editor; ``file_used`` carries a
    path opened or saved (for Open Recent); ``title_changed`` the current tab's title for the window.
    """

    document_added = Signal(object)  # Document
    file_used = Signal(str)
    title_changed = Signal(str)
    format_changed = Signal(object)  # Document: saving changed its encoding
    renamed = Signal(object)  # Document: saved under another name, or restored under its own

    def __init__(self, notices: Notices, start_folder: Callable[[], str]):
        super().__init__()
        self.notices = notices
        self._start_folder = start_folder  # where file dialogs start without a current file
        self._documents: dict[CodeEditor, Document] = {}
        self._untitled = 0
        self._closed_paths: list[str] = []  # for Reopen Closed Tab, newest last
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(lambda path: QTimer.singleShot(200, lambda: self._check_disk(path)))
        self.setTabsClosable(True)
        self.setMovable(True)
        self.setDocumentMode(True)
        self.tabCloseRequested.connect(lambda index: self.close_tab(self.widget(index)))
        self.tabBar().installEventFilter(self)
        self.tabBar().setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tabBar().customContextMenuRequested.connect(self._tab_menu)

    # --- the documents ------------------------------------------------------------------------

    def current_editor(self) -> CodeEditor | None:
        widget = self.currentWidget()
        return widget if isinstance(widget, CodeEditor) else None

    def current_document(self) -> Document | None:
        editor = self.current_editor()
        return self._documents.get(editor) if editor is not None else None

    def documents(self) -> list[Document]:
        return [self._documents[self.widget(i)] for i in range(self.count())]

    def folder(self) -> str:
        """The current file's folder, where file dialogs start."""
        document = self.current_document()
        if document is not None and document.path:
            return os.path.dirname(document.path)
        return self._start_folder()

    def _new_editor(self) -> CodeEditor:
        editor = CodeEditor()
        editor.modificationChanged.connect(lambda _=None, e=editor: self.update_title(e))  # the shown document's
        editor.files_dropped.connect(lambda paths: [self.open_path(path) for path in paths])
        return editor

    def _add(self, document: Document) -> None:
        self._documents[document.editor] = document
        self.document_added.emit(document)
        self._watch(document)
        self.setCurrentIndex(self.addTab(document.editor, document.name))
        self.update_title(document.editor)
        document.editor.setFocus()

    def new_document(self) -> Document:
        self._untitled += 1
        document = Document(self._new_editor())
        document.untitled_number = self._untitled
        # emptied again, it has nothing to save: the title's dot follows the text, not just Qt's flag
        document.editor.document().contentsChanged.connect(lambda e=document.editor: self.update_title(e))
        self._add(document)
        return document

    def open_path(self, path: str) -> Document | None:
        """Open ``path`` in a tab (or switch to it); a clear message and no tab when it is not text."""
        absolute = os.path.abspath(path)
        for document in self._documents.values():
            if document.path == absolute:
                self.setCurrentWidget(document.editor)
                return document
        editor = self._new_editor()
        try:
            with self._opening(absolute) as progress:
                document = Document.open(absolute, editor, progress)
        except fileio.NotTextError as error:
            editor.deleteLater()
            self.notices.error(f"Cannot open {os.path.basename(path)}: {error}. Nothing was opened.")
            return None
        except OSError as error:
            editor.deleteLater()
            self.notices.error(f"Cannot open {fileio.shown_path(path)}: {error.strerror or error}.")
            return None
        current = self.current_document()
        if current is not None and current.path is None and not current.is_modified() and not current.editor.toPlainText():
            self._remove_tab(current.editor)
        self._add(document)
        self.file_used.emit(absolute)
        if document.longest_line > LONG_LINE:
            self.notices.say(f"Opened {absolute}: it has a line of {document.longest_line:,} characters; "
                             "editing near it may be slow.", 10000)
        else:
            self.notices.say(f"Opened {absolute}", 3000)
        return document

    @contextmanager
    def _opening(self, path: str) -> Iterator[Callable[[float], None] | None]:
        """While a file long enough to be filled in parts (``document_fill``) is read into its tab: a
        busy cursor, and a status line drawn first that the progress handed out (None for a shorter
        file) keeps up to date."""
        try:
            size = os.path.getsize(path)
        except OSError:  # the open says why
            size = 0
        if size < document_fill.FILLED_IN_PARTS_CHARS:  # at least as many bytes as characters
            yield None
            return
        opening = f"Opening {fileio.shown_path(os.path.basename(path))} ({size / 2**20:.0f} MB)…"
        self.notices.say(opening)
        self.notices.window.statusBar().repaint()
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            yield lambda share: self.notices.say(f"{opening} {share:.0%}")
        finally:
            QApplication.restoreOverrideCursor()

    def open_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open", self.folder(), FILE_FILTER)
        for path in paths:
            self.open_path(path)

    def update_title(self, editor: CodeEditor) -> None:
        """The tab's name, with a dot while it has unsaved changes; the window's title if current."""
        document = self._documents.get(editor)
        if document is None:
            return
        index = self.indexOf(editor)
        self.setTabText(index, document.name + (" •" if document.is_modified() else ""))
        self.setTabToolTip(index, fileio.shown_path(document.path) if document.path else document.name)
        if editor is self.current_editor():
            self.title_changed.emit(f"{document.name}{' •' if document.is_modified() else ''} — Sfumato")

    # --- saving -------------------------------------------------------------------------------

    def save(self, document: Document | None = None) -> bool:
        document = document or self.current_document()
        if document is None:
            return False
        if document.path is None:
            return self.save_as(document)
        if not document.is_modified() and document.disk_state() == "same":
            self.notices.say(f"{document.name} has no unsaved changes; nothing was written.", 3000)
            return True  # the file stays as it is, byte for byte (mixed line endings too)
        return self._may_add_invisibles(document) and self._write(document, None)

    def save_all(self) -> bool:
        """Save every document with unsaved changes (an untitled one asks for a name); False if one was not."""
        return all([self.save(document) for document in self.documents() if document.is_modified()])

    def save_as(self, document: Document | None = None) -> bool:
        document = document or self.current_document()
        if document is None:
            return False
        path, _ = QFileDialog.getSaveFileName(self, "Save As", document.path or self.folder(), FILE_FILTER)
        return bool(path) and self._may_add_invisibles(document) and self._write(document, path)

    def _may_add_invisibles(self, document: Document) -> bool:
        """Ask before a save writes bidi or zero-width characters the file did not hold."""
        added = document.new_invisibles()
        if not added:
            return True
        answer = QMessageBox.question(
            self,
            "Invisible characters",
            f"{document.name} now holds {added}, which the file did not. They can reorder what a line "
            "shows or hide text (a model may have written them); each is marked in orange. Save anyway?",
        )
        if answer != QMessageBox.StandardButton.Yes:
            self.notices.say("Not saved; the invisible characters are marked in orange in the text.", 6000)
            return False
        return True

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
                self.notices.say("Not saved; the text is still here.", 6000)
                return False
            document.format = dataclasses.replace(document.format, encoding="utf-8", bom=False)
            self.format_changed.emit(document)
            return self._write(document, path)
        except OSError as error:
            self.notices.error(f"Cannot save {path or document.path}: {error.strerror or error}. The text is still here.")
            return False
        self.setTabText(self.indexOf(document.editor), document.name)
        if path is not None:
            self.took_name(document)
        self._watch(document)
        self.file_used.emit(document.path)
        self.update_title(document.editor)
        if document.format.mixed_newlines:  # said once: the file now has one ending
            document.format = dataclasses.replace(document.format, mixed_newlines=False)
            self.notices.say(f"Saved {fileio.shown_path(document.path)}; its mixed line endings are all {document.format.newline_name} now.", 8000)
        else:
            self.notices.say(f"Saved {fileio.shown_path(document.path)}", 3000)
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
            self.notices.say("Not saved; the file on disk and your text are both as they were.", 6000)
            return False
        return True

    # --- closing and reopening ----------------------------------------------------------------

    def close_tab(self, editor: CodeEditor | None) -> bool:
        """Close a tab, asking first when it has unsaved changes; False when the user cancels."""
        return editor is not None and self.close_all([editor])

    def close_all(self, editors: list[CodeEditor]) -> bool:
        """Close these tabs. Every unsaved one is asked about before any tab closes, so a Cancel
        (or a failed save) leaves them all open, the current tab as it was (False)."""
        current = self.currentWidget()
        if not all(self._may_close(editor) for editor in editors):
            self.setCurrentWidget(current)
            return False
        for editor in editors:
            path = self._documents[editor].path
            self._remove_tab(editor)
            if path is not None:
                self._closed_paths = [p for p in self._closed_paths if p != path][-MAX_CLOSED_REMEMBERED + 1 :] + [path]
        return True

    def _may_close(self, editor: CodeEditor) -> bool:
        """Save the changes, or discard them, as the user answers; False for Cancel or a failed save."""
        document = self._documents[editor]
        if not document.is_modified():
            return True
        self.setCurrentWidget(editor)
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to {document.name}?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        return answer == QMessageBox.StandardButton.Discard or (answer == QMessageBox.StandardButton.Save and self.save(document))

    def _remove_tab(self, editor: CodeEditor) -> None:
        editor.end_session()
        path = self._documents[editor].path
        if path and path in self.watcher.files():
            self.watcher.removePath(path)
        self.removeTab(self.indexOf(editor))
        del self._documents[editor]
        editor.deleteLater()

    def _tab_menu(self, point) -> None:
        index = self.tabBar().tabAt(point)
        if index >= 0:
            self.tab_menu(index).popup(self.tabBar().mapToGlobal(point))

    def tab_menu(self, index: int) -> QMenu:
        """A tab's right-click menu: close it, the others or those to its right; copy its path."""
        editor = self.widget(index)
        document = self._documents[editor]
        menu = QMenu(self)
        menu.addAction("Close", lambda: self.close_tab(editor))
        menu.addAction("Close Others", lambda: self.close_all([d.editor for d in self.documents() if d.editor is not editor]))
        menu.addAction("Close to the Right", lambda: self.close_all([self.widget(i) for i in range(index + 1, self.count())]))
        copy = menu.addAction("Copy Path", lambda: QApplication.clipboard().setText(document.path))
        copy.setEnabled(document.path is not None)
        return menu

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        """A middle click on a tab closes it."""
        if watched is self.tabBar() and event.type() == QEvent.Type.MouseButtonRelease and event.button() == Qt.MouseButton.MiddleButton:
            index = self.tabBar().tabAt(event.position().toPoint())
            if index >= 0:
                self.close_tab(self.widget(index))
                return True
        return super().eventFilter(watched, event)

    def reopen_closed_tab(self) -> None:
        """Open again the most recently closed file that is not open now."""
        open_now = {document.path for document in self.documents()}
        while self._closed_paths:
            path = self._closed_paths.pop()
            if path not in open_now and os.path.isfile(path):
                self.open_path(path)
                return
        self.notices.say("No closed tab to reopen.", 3000)

    # --- the files of the last session --------------------------------------------------------

    def open_files_now(self) -> list[OpenFile]:
        """The tabs that have a file, in tab order, with their selections and scroll positions."""
        files = []
        for document in self.documents():
            if document.path is not None:
                editor = document.editor
                cursor = editor.textCursor()
                files.append(OpenFile(document.path, cursor.anchor(), cursor.position(),
                                      editor.firstVisibleBlock().blockNumber(), editor is self.current_editor()))
        return files

    def reopen(self, files: list[OpenFile]) -> None:
        """Open ``files`` (those still there), cursors and scroll positions where they were."""
        current = None
        for item in files:
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
            self.setCurrentWidget(current)

    def took_name(self, document: Document) -> None:
        """``document`` took a name (Save As, a restore after a crash): its tab, the lines changed since
        git's commit of that file, the watch for other programs' writes, and ``renamed`` for the rest."""
        self.update_title(document.editor)
        document.refresh_committed()  # a new name: another file as far as git is concerned
        self._watch(document)
        self.renamed.emit(document)

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
            self.notices.say(f"{document.name} was deleted on disk; your text is kept, Save writes it back.", 10000)
            self.update_title(document.editor)
            return
        if not document.is_modified():
            self._reload(document)
            return
        box = QMessageBox(QMessageBox.Icon.Question, "File changed on disk",
                          f"{document.name} was changed by another program, and you have unsaved changes here.",
                          QMessageBox.StandardButton.NoButton, self.notices.window)
        reload = box.addButton("Reload from disk (undo brings your text back)", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Keep my text", QMessageBox.ButtonRole.RejectRole)
        box.finished.connect(lambda _: self._reload(document) if box.clickedButton() is reload else self._keep(document))
        self.notices.open(box)

    def _reload(self, document: Document) -> None:
        try:
            document.reload()
        except (fileio.NotTextError, OSError) as error:
            self.notices.error(f"Cannot reload {document.name}: {error}. Your text is kept.")
            return
        self.update_title(document.editor)
        self.notices.say(f"Reloaded {document.name}: it was changed on disk.", 6000)

    def _keep(self, document: Document) -> None:
        document.disk_stamp = None  # differs from the file: the next save overwrites it knowingly
        self.notices.say(f"Kept your text of {document.name}; saving will replace the file on disk.", 6000)
