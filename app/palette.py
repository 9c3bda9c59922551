"""Pickers: a filter box over a list, Enter runs the highlighted entry.

The command palette (Ctrl+Shift+P) lists every menu command; Go to File (Ctrl+P) lists the open
folder's files. Both find an entry by a few of its letters, in order.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QMenuBar, QVBoxLayout, QWidget

MAX_SHOWN = 500  # entries listed at once; typing narrows the rest down
_WORD_BREAKS = " :/\\._-(["  # a word of a label starts after one of these

Entry = tuple[str, str, Callable[[], None]]  # what is matched, a note shown beside it, what Enter does


def menu_commands(menu_bar: QMenuBar) -> list[Entry]:
    """("Menu: Command", keys, trigger) for every enabled command in the menus, submenus included;
    keys: all the action's shortcuts, or the key its text names after a tab (keys a session reads)."""
    entries = []

    def walk(prefix: str, actions: list[QAction]) -> None:
        for action in actions:
            name = action.text().split("\t")[0].replace("&", "")
            if action.menu() is not None:
                walk(f"{prefix}{name}: ", action.menu().actions())
            elif not action.isSeparator() and action.isEnabled() and name:
                keys = ", ".join(key.toString(QKeySequence.SequenceFormat.NativeText) for key in action.shortcuts())
                entries.append((prefix + name, keys or action.text().partition("\t")[2], action.trigger))

    walk("", menu_bar.actions())
    return entries


def rank(query: str, label: str) -> tuple[int, int] | None:
    """How well ``label`` matches ``query`` (smaller is better); None when it does not.

    Best is a word of the label that starts with the query ("wr" finds "Word Wrap" before
    "Rewrite"), then the query anywhere in one piece, then its letters in order ("wrw" finds
    "Word Wrap"); within each, the match that starts earlier comes first.
    """
    query, label = query.lower().strip(), label.lower()
    if not query:
        return (0, 0)
    whole = label.find(query)
    at = whole
    while at >= 0:  # the places the query occurs, the first at a word's start ranks best
        if at == 0 or label[at - 1] in _WORD_BREAKS:
            return (0, at)
        at = label.find(query, at + 1)
    if whole >= 0:
        return (1, whole)
    position, first = 0, None
    for letter in query.replace(" ", ""):
        position = label.find(letter, position)
        if position < 0:
            return None
        first = position if first is None else first
        position += 1
    return (2, first)


class Picker(QDialog):
    """A filter box over ``entries``; Enter runs the highlighted one, Esc closes."""

    def __init__(self, title: str, entries: list[Entry], parent: QWidget | None = None, waiting: str | None = None):
        """``waiting``: the line shown until ``set_entries`` brings the entries (read off the UI thread)."""
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(560, 380)
        self._entries = entries
        self._waiting = waiting
        self._matched: tuple[str, list[int]] | None = None  # the last query and the entries it matched
        self.query = QLineEdit()
        self.query.setPlaceholderText(f"{title}: type a few letters…")
        self.results = QListWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.query)
        layout.addWidget(self.results)
        self.query.textChanged.connect(self._refilter)
        self.query.returnPressed.connect(self._run_current)
        self.results.itemActivated.connect(lambda _item: self._run_current())
        self.query.installEventFilter(self)
        self._refilter("")

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Open near the top of the window, centred, where the eye already is."""
        super().showEvent(event)
        parent = self.parentWidget()
        if parent is not None:
            top = parent.mapToGlobal(parent.rect().topLeft())
            self.move(top.x() + (parent.width() - self.width()) // 2, top.y() + parent.height() // 10)

    def _refilter(self, text: str) -> None:
        """List the entries ``text`` matches, best first. A query that extends the last one can
        only match fewer, so only the last one's matches are ranked again (50,000 file names)."""
        self.results.clear()
        query = text.lower().strip()
        last = self._matched
        pool = last[1] if last is not None and last[0] and query.startswith(last[0]) else range(len(self._entries))
        # equally good matches keep the entries' own order (menu, folder, file order)
        ranked = sorted((score, index) for index in pool if (score := rank(text, self._entries[index][0])) is not None)
        self._matched = (query, [index for _, index in ranked])
        for _, index in ranked[:MAX_SHOWN]:
            label, note, run = self._entries[index]
            item = QListWidgetItem(f"{label}    {note}" if note else label)
            item.setData(Qt.ItemDataRole.UserRole, run)
            self.results.addItem(item)
        if ranked:
            self.results.setCurrentRow(0)
        else:  # a line that says so, not an empty list (Enter closes the picker, running nothing)
            self.results.addItem(QListWidgetItem(self._waiting or "No matches"))
            self.results.item(0).setFlags(Qt.ItemFlag.NoItemFlags)

    def set_entries(self, entries: list[Entry]) -> None:
        """The entries, now they are read; what is typed so far filters them."""
        self._entries, self._waiting, self._matched = entries, None, None
        self._refilter(self.query.text())

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        """Up and Down in the filter box move through the results."""
        if watched is self.query and event.type() == event.Type.KeyPress and event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            step = -1 if event.key() == Qt.Key.Key_Up else 1
            self.results.setCurrentRow(max(0, min(self.results.count() - 1, self.results.currentRow() + step)))
            return True
        return super().eventFilter(watched, event)

    def _run_current(self) -> None:
        item = self.results.currentItem()
        run = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        self.accept()
        if run is not None:
            QTimer.singleShot(0, run)  # once the picker is gone
