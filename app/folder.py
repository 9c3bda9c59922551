"""An open folder: the sidebar tree of its files, and the file list that Go to File searches.

Version-control folders, hidden folders and the usual build and cache folders are left out of
both, so a project's tree shows its own files.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QDir, QModelIndex, QSortFilterProxyModel, Signal
from PySide6.QtWidgets import QFileSystemModel, QTreeView, QWidget

SKIPPED_FOLDERS = {"__pycache__", "node_modules", "venv", "site-packages", "target"}
MAX_FILES = 50_000  # Go to File lists at most this many (a home folder opened by mistake stays quick)


def is_skipped_folder(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_FOLDERS or name.endswith(".egg-info")


def folder_files(root: str, limit: int = MAX_FILES) -> list[str]:
    """The files under ``root`` as paths relative to it, skipped folders left out, sorted."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if not is_skipped_folder(name))
        relative = os.path.relpath(folder, root)
        for name in sorted(files):
            found.append(name if relative == "." else os.path.join(relative, name))
            if len(found) >= limit:
                return found
    return found


class _WithoutSkippedFolders(QSortFilterProxyModel):
    """The skipped folders inside ``root`` left out; the folders on the way to it are kept whatever
    their names (an opened folder under ``~/.config`` or named ``site-packages`` showed the whole
    file system: the tree's root was filtered out)."""

    root = ""  # as the file model spells paths ("/" between names); "": no folder open

    def filterAcceptsRow(self, row: int, parent: QModelIndex) -> bool:  # noqa: N802 - Qt override
        model = self.sourceModel()
        index = model.index(row, 0, parent)
        folder = model.filePath(parent)
        inside = bool(self.root) and (folder == self.root or folder.startswith(self.root.rstrip("/") + "/"))
        return not (inside and model.isDir(index) and is_skipped_folder(model.fileName(index)))


class FolderTree(QTreeView):
    """The folder's files as a tree; activating a file (double click, Enter) emits its path."""

    file_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._files = QFileSystemModel(self)
        self._files.setFilter(QDir.Filter.AllEntries | QDir.Filter.NoDotAndDotDot | QDir.Filter.Hidden)
        self._shown = _WithoutSkippedFolders(self)
        self._shown.setSourceModel(self._files)
        self.setModel(self._shown)
        self.setHeaderHidden(True)
        self.activated.connect(self._activated)
        self.root = ""

    def set_root(self, root: str) -> None:
        self.root = root
        self._files.setRootPath(root)
        self._shown.beginFilterChange()
        self._shown.root = self._files.filePath(self._files.index(root))
        self._shown.endFilterChange()
        self.setRootIndex(self._shown.mapFromSource(self._files.index(root)))
        for column in range(1, self._files.columnCount()):
            self.hideColumn(column)

    def _activated(self, index: QModelIndex) -> None:
        source = self._shown.mapToSource(index)
        if not self._files.isDir(source):
            self.file_chosen.emit(self._files.filePath(source))
