"""How the window tells the user things: a status-bar line, and a window-modal box for errors and
questions that does not block the event loop."""

from __future__ import annotations

from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QMainWindow, QMessageBox


class Notices:
    """``box`` is the last window-modal box opened (kept so it is not garbage-collected open)."""

    def __init__(self, window: QMainWindow):
        self.window = window
        self.box: QMessageBox | None = None

    def say(self, text: str, milliseconds: int = 0) -> None:
        """A status-bar line, for ``milliseconds`` (0: until the next one)."""
        self.window.statusBar().showMessage(text, milliseconds)

    def say_until_edited(self, text: str, document: QTextDocument, milliseconds: int) -> None:
        """A status-bar line that also goes at the document's next change (an undo included)."""
        self.say(text, milliseconds)

        def clear() -> None:
            document.contentsChanged.disconnect(clear)
            self.withdraw(text)

        document.contentsChanged.connect(clear)

    def withdraw(self, text: str) -> None:
        """Clear the status-bar line if it still says ``text``."""
        if self.window.statusBar().currentMessage() == text:
            self.window.statusBar().clearMessage()

    def error(self, text: str) -> None:
        """Tell the user in the status bar and in a window-modal box."""
        self.say(text, 10000)
        self.open(QMessageBox(QMessageBox.Icon.Warning, "Sfumato", text, QMessageBox.StandardButton.Ok, self.window))

    def open(self, box: QMessageBox) -> None:
        """Show ``box`` window-modal; its ``finished`` signal carries the answer."""
        self.box = box
        box.open()
