"""The open folder's two panels, docked at the window's left: its file tree and Find in Folder;
and its files' part of the project context."""

from __future__ import annotations

import asyncio
import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

from sfumato.app.folder import FolderTree
from sfumato.app.folder_context import FolderContext
from sfumato.app.search import SearchPanel


class FolderPanels:
    """``tree`` (in ``tree_dock``) and ``search`` (in ``search_dock``), both hidden until used;
    ``context``: the folder's files as project context."""

    def __init__(self, window: QMainWindow, loop: asyncio.AbstractEventLoop):
        self.tree = FolderTree()
        self.tree_dock = _docked(window, "Folder", "sidebar", self.tree)
        self.search = SearchPanel(loop)
        self.search_dock = _docked(window, "Find in Folder", "search", self.search)
        self.context = FolderContext(loop)

    @property
    def root(self) -> str:
        """The open folder ("" when none)."""
        return self.tree.root

    def open(self, folder: str) -> None:
        """Show ``folder``'s files in the tree; Find in Folder and Go to File search them, and AI
        edits draw on them (read in the background)."""
        self.tree.set_root(os.path.abspath(folder))
        self.search.root = self.tree.root
        self.context.open(self.tree.root)
        self.tree_dock.setWindowTitle(os.path.basename(self.tree.root) or self.tree.root)
        self.tree_dock.show()

    def show_search(self, selected: str) -> None:
        """Show Find in Folder, its box holding ``selected`` (one line of it at most) and focused."""
        if selected and "\u2029" not in selected:
            self.search.query.setText(selected)
        self.search_dock.show()
        self.search_dock.raise_()
        self.search.query.setFocus()
        self.search.query.selectAll()


def _docked(window: QMainWindow, title: str, name: str, widget: QWidget) -> QDockWidget:
    dock = QDockWidget(title, window)
    dock.setObjectName(name)
    dock.setWidget(widget)
    dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable | QDockWidget.DockWidgetFeature.DockWidgetMovable)
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
    dock.hide()
    return dock
