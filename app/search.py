"""Find in Folder: every line of the open folder's text files that holds the query.

``matches_in_folder`` is plain Python (it runs on a worker thread); ``SearchPanel`` is the sidebar
panel that runs it and lists what it found.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sfumato.app import fileio
from sfumato.app.folder import folder_files

MAX_MATCHES = 2_000
MAX_SEARCHED_BYTES = 4 << 20  # larger files (logs, data) are left out of the search
SHOWN_LINE_CHARS = 200
SHOWN_EVERY_S = 0.1  # found lines go to the list at most this often while the search goes on


@dataclass(frozen=True)
class Match:
    path: str  # relative to the folder
    line: int  # 1-based
    column: int  # 0-based, in characters
    text: str  # the line, cut to SHOWN_LINE_CHARS


def may_hold(data: bytes, needle: str, case_sensitive: bool) -> bool:
    """False only where ``data`` is plain ASCII text without ``needle`` (already lowered when the
    case does not matter), which its bytes tell without decoding it: most source files, so a
    search decodes only the files that may match. Anything else may hold it (decoded to know)."""
    if not needle.isascii() or not data.isascii() or b"\0" in data:  # NUL: UTF-16, or binary
        return True
    return needle.encode("ascii") in (data if case_sensitive else data.lower())


def matches_in_folder(root: str, query: str, case_sensitive: bool = False,
                      stopped: Callable[[], bool] = lambda: False) -> Iterator[Match]:
    """The lines of ``root``'s text files that contain ``query``, file by file as each gives them,
    until ``stopped()`` (asked before each file)."""
    if not query:
        return
    needle = query if case_sensitive else query.lower()
    for relative in folder_files(root):
        if stopped():
            return
        path = os.path.join(root, relative)
        try:
            if os.path.getsize(path) > MAX_SEARCHED_BYTES:
                continue
            data = fileio.read_bounded(path)
            if not may_hold(data, needle, case_sensitive):
                continue
            text = fileio.text_of(data).text
        except (OSError, ValueError):  # unreadable, binary or not text: not searched
            continue
        if needle not in (text if case_sensitive else text.lower()):
            continue  # one search of the whole text, no line looked at
        for number, line in enumerate(text.split("\n"), start=1):
            column = (line if case_sensitive else line.lower()).find(needle)
            if column >= 0:
                yield Match(relative, number, column, line[:SHOWN_LINE_CHARS])


class SearchPanel(QWidget):
    """A query box over the folder; activating a result emits (absolute path, line, column)."""

    match_chosen = Signal(str, int, int)
    replace_requested = Signal(list, str, str, bool)  # absolute paths, query, replacement, match case

    def __init__(self, loop: asyncio.AbstractEventLoop, parent: QWidget | None = None):
        super().__init__(parent)
        self._loop = loop
        self.root = ""
        self._generation = 0  # a newer search makes an older one's results stale
        self.query = QLineEdit()
        self.query.setPlaceholderText("Find in folder… (Enter)")
        self.case_sensitive = QCheckBox("Aa")
        self.case_sensitive.setToolTip("Match case")
        self.replacement = QLineEdit()
        self.replacement.setPlaceholderText("Replace with…")
        self.replace_all = QPushButton("Replace All")
        self.replace_all.setToolTip("Replace in the found files' tabs; nothing is saved until you save")
        self.replace_all.setEnabled(False)
        self.replace_all.clicked.connect(self._replace_all)
        self.results = QListWidget()
        self.summary = QLabel()
        self._found: tuple[str, bool, list[str]] | None = None  # query, match case, files of the last search
        row = QHBoxLayout()
        row.addWidget(self.query)
        row.addWidget(self.case_sensitive)
        replace_row = QHBoxLayout()
        replace_row.addWidget(self.replacement)
        replace_row.addWidget(self.replace_all)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(row)
        layout.addLayout(replace_row)
        layout.addWidget(self.summary)
        layout.addWidget(self.results)
        self.query.returnPressed.connect(self.start)
        self.results.itemActivated.connect(self._activated)

    def start(self) -> asyncio.Task | None:
        """Search the folder for the query on a worker thread; found lines are listed as they come
        (a large folder took seconds before its first line showed), a newer search stops it."""
        query = self.query.text()
        if not self.root or not query:
            self.summary.setText("Open a folder first." if not self.root else "")
            return None
        self._generation += 1
        self.results.clear()
        self.replace_all.setEnabled(False)
        self._found = None
        self.summary.setText("Searching…")
        return self._loop.create_task(self._search(self._generation, self.root, query, self.case_sensitive.isChecked()))

    async def _search(self, generation: int, root: str, query: str, case_sensitive: bool) -> None:
        def current() -> bool:
            return generation == self._generation

        def show(batch: list[Match]) -> None:
            if current():
                self._list(batch)

        def search() -> tuple[list[Match], list[Match]]:
            """(every match, the last ones not yet listed: listed with the summary, in one step)."""
            found: list[Match] = []
            batch, shown_at = [], time.monotonic()
            # stopped by a newer search (``_generation``: an int read across threads, never torn)
            for match in matches_in_folder(root, query, case_sensitive, stopped=lambda: not current()):
                found.append(match)
                batch.append(match)
                if len(found) >= MAX_MATCHES:
                    break
                if time.monotonic() - shown_at >= SHOWN_EVERY_S:
                    self._loop.call_soon_threadsafe(show, batch)
                    batch, shown_at = [], time.monotonic()
            return found, batch

        matches, last = await self._loop.run_in_executor(None, search)
        if not current():
            return
        self._list(last)
        paths = list(dict.fromkeys(match.path for match in matches))
        self._found = (query, case_sensitive, [os.path.join(root, path) for path in paths])
        self.replace_all.setEnabled(bool(matches))
        files = len(paths)
        more = " (the first ones)" if len(matches) >= MAX_MATCHES else ""
        count = f"{len(matches)} match" + ("es" if len(matches) > 1 else "")
        self.summary.setText(f"{count} in {files} file{'s' if files > 1 else ''}{more}" if matches else "No matches.")

    def _list(self, matches: list[Match]) -> None:
        for match in matches:
            item = QListWidgetItem(f"{match.path}:{match.line}: {match.text.strip()}")
            item.setData(Qt.ItemDataRole.UserRole, match)
            self.results.addItem(item)

    def _replace_all(self) -> None:
        """Replace in the files of the last search, if the query is still the one searched for."""
        if self._found is None or self._found[:2] != (self.query.text(), self.case_sensitive.isChecked()):
            self.summary.setText("Search first (Enter), then Replace All.")
            return
        query, case_sensitive, paths = self._found
        self.replace_requested.emit(paths, query, self.replacement.text(), case_sensitive)

    def _activated(self, item: QListWidgetItem) -> None:
        match: Match = item.data(Qt.ItemDataRole.UserRole)
        self.match_chosen.emit(os.path.join(self.root, match.path), match.line, match.column)
