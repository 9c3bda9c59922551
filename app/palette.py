"""The command palette (Ctrl+Shift+P): every menu command, found by typing a few of its letters."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QMenuBar, QVBoxLayout, QWidget


def menu_commands(menu_bar: QMenuBar) -> list[tuple[str, QAction]]:
    """("Menu: Command", action) for every enabled command in the menus, submenus included."""
    commands = []

    def walk(prefix: str, actions: list[QAction]) -> None:
        for action in actions:
            name = action.text().split("\t")[0].replace("&", "")
            if action.menu() is not None:
                walk(f"{prefix}{name}: ", action.menu().actions())
            elif not action.isSeparator() and action.isEnabled() and name:
                commands.append((prefix + name, action))

    walk("", menu_bar.actions())
    return commands


def rank(query: str, label: str) -> tuple[int, int] | None:
    """How well ``label`` matches ``query`` (smaller is better); None when it does not.

    A label matches when the query's letters appear in it in order (``wrw`` finds "Word Wrap");
    a match of the query as one piece, then a match that starts earlier, come first.
    """
    query, label = query.lower().replace(" ", ""), label.lower()
    if not query:
        return (0, 0)
    whole = label.replace(" ", "").find(query)
    if whole >= 0:
        return (0, whole)
    position, first = 0, None
    for letter in query:
        position = label.find(letter, position)
        if position < 0:
            return None
        first = position if first is None else first
        position += 1
    return (1, first)


class CommandPalette(QDialog):
    """A filter box over the commands; Enter runs the highlighted one, Esc closes."""

    def __init__(self, commands: list[tuple[str, QAction]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Commands")
        self.resize(520, 360)
        self._commands = commands
        self.query = QLineEdit()
        self.query.setPlaceholderText("Type a command…")
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

    def _refilter(self, text: str) -> None:
        self.results.clear()
        ranked = sorted(
            ((score, label, action) for label, action in self._commands if (score := rank(text, label)) is not None),
            key=lambda item: item[0],
        )
        for _, label, action in ranked:
            shortcut = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            item = QListWidgetItem(f"{label}    {shortcut}" if shortcut else label)
            item.setData(Qt.ItemDataRole.UserRole, action)
            self.results.addItem(item)
        self.results.setCurrentRow(0)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        """Up and Down in the filter box move through the results."""
        if watched is self.query and event.type() == event.Type.KeyPress and event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            step = -1 if event.key() == Qt.Key.Key_Up else 1
            self.results.setCurrentRow(max(0, min(self.results.count() - 1, self.results.currentRow() + step)))
            return True
        return super().eventFilter(watched, event)

    def _run_current(self) -> None:
        item = self.results.currentItem()
        self.accept()
        if item is not None:
            action = item.data(Qt.ItemDataRole.UserRole)
            QTimer.singleShot(0, action.trigger)  # once the palette is gone and the editor has focus back
