"""Help > Keyboard Shortcuts: a searchable list of every key the menus bind.

The list is read from the menu bar itself (``menu_commands``, as the command palette does), so
it cannot drift from the keys that work: a key changed in the settings shows here at once.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QHeaderView, QLineEdit, QMenuBar, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from sfumato.app.palette import menu_commands


class ShortcutsDialog(QDialog):
    """A filter box over a table of (command, keys); the filter matches either."""

    def __init__(self, menu_bar: QMenuBar, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        self.resize(560, 520)
        self.query = QLineEdit()
        self.query.setPlaceholderText("Filter by command or key…")
        self.query.setClearButtonEnabled(True)
        bound = [(label, keys) for label, keys, _ in menu_commands(menu_bar) if keys]
        self.table = QTableWidget(len(bound), 2)
        self.table.setHorizontalHeaderLabels(["Command", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for row, (label, keys) in enumerate(bound):
            self.table.setItem(row, 0, QTableWidgetItem(label))
            self.table.setItem(row, 1, QTableWidgetItem(keys))
        layout = QVBoxLayout(self)
        layout.addWidget(self.query)
        layout.addWidget(self.table)
        self.query.textChanged.connect(self._filter)

    def shown(self) -> list[tuple[str, str]]:
        """The (command, keys) rows the filter lets through."""
        return [(self.table.item(row, 0).text(), self.table.item(row, 1).text())
                for row in range(self.table.rowCount()) if not self.table.isRowHidden(row)]

    def _filter(self, text: str) -> None:
        words = text.lower().split()
        for row in range(self.table.rowCount()):
            line = f"{self.table.item(row, 0).text()} {self.table.item(row, 1).text()}".lower()
            self.table.setRowHidden(row, not all(word in line for word in words))
