"""The line under a finished result that says what the keys do; its words are links for the mouse."""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtGui import QKeySequence, QPalette, QTextCursor
from PySide6.QtWidgets import QLabel

from sfumato.app.codeeditor import CodeEditor


class ReviewHint(QLabel):
    """Sits below the text between the positions ``span()`` gives (asked again on every scroll)."""

    def __init__(self, editor: CodeEditor, span: Callable[[], tuple[int, int]], actions: dict[str, tuple[str, QKeySequence, Callable[[], None]]],
                 warning: str | None = None):
        super().__init__(editor.viewport())
        self._editor = editor
        self._span = span
        self._actions = actions
        self._warning = warning  # shown first: why the result would leave the file failing to parse
        palette = editor.palette()
        self.setStyleSheet(
            f"QLabel {{ background: {palette.color(QPalette.ColorRole.ToolTipBase).name()};"
            f" color: {palette.color(QPalette.ColorRole.ToolTipText).name()};"
            f" border: 1px solid {palette.color(QPalette.ColorRole.Mid).name()}; border-radius: 3px; padding: 1px 6px; }}"
        )
        font = self.font()
        font.setPointSizeF(max(6.0, font.pointSizeF() - 1))
        self.setFont(font)
        self._write()
        self.linkActivated.connect(lambda name: self._actions[name][2]())
        editor.verticalScrollBar().valueChanged.connect(self.place)
        editor.horizontalScrollBar().valueChanged.connect(self.place)
        self.adjustSize()
        self.place()
        self.show()

    def remove(self) -> None:
        """Go for good: from now on a scroll (the reject's cursor move) no longer places it."""
        self._editor.verticalScrollBar().valueChanged.disconnect(self.place)
        self._editor.horizontalScrollBar().valueChanged.disconnect(self.place)
        self.hide()
        self.deleteLater()

    def relabel(self, name: str, label: str, warning: str | None = None) -> None:
        """Give the link ``name`` a new word (the key and the action stay), and the hint its warning
        for the text shown now (none: the text parses, or it is the original)."""
        _, key, run = self._actions[name]
        self._actions[name] = (label, key, run)
        self._warning = warning
        self._write()
        self.adjustSize()
        self.place()

    def _write(self) -> None:
        warning = f"<b>No longer parses: {html.escape(self._warning)}</b> · " if self._warning else ""
        self.setText(warning + " · ".join(
            f'<a href="{name}">{label}</a> {key.toString(QKeySequence.SequenceFormat.NativeText)}'
            for name, (label, key, _) in self._actions.items()
        ))

    def place(self) -> None:
        """After the end of the result's last line, so it covers no text; below that line (and the
        ghost of what it was, app/ghostlines.py) if it does not fit there; kept inside the viewport."""
        last = self._editor.document().characterCount() - 1
        start, end = (self._cursor_at(min(p, last)) for p in self._span())
        end.movePosition(QTextCursor.MoveOperation.EndOfBlock)
        line_end = self._editor.cursorRect(end)
        viewport = self._editor.viewport().rect()
        gap = self._editor.fontMetrics().horizontalAdvance("  ")
        if line_end.right() + gap + self.width() <= viewport.width():
            self.move(line_end.right() + gap, line_end.center().y() - self.height() // 2)
            return
        x = max(0, min(self._editor.cursorRect(start).left(), viewport.width() - self.width()))
        y = round(self._editor.blockBoundingGeometry(end.block()).translated(self._editor.contentOffset()).bottom()) + 2
        if y + self.height() > viewport.height():
            y = max(0, self._editor.cursorRect(start).top() - self.height() - 2)
        self.move(x, y)

    def _cursor_at(self, position: int) -> QTextCursor:
        cursor = QTextCursor(self._editor.document())
        cursor.setPosition(position)
        return cursor
