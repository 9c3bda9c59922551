"""The editor's gutter: line numbers (the cursor's line brighter) and, at their left edge, marks of
the lines added, modified or deleted since the last commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    from sfumato.app.codeeditor import CodeEditor

MARK_COLORS = {"added": QColor("#3fa34d"), "modified": QColor("#3b7dd8"), "deleted": QColor("#d04040")}


class LineNumberArea(QWidget):
    """Drawn over the editor's left viewport margin, which ``fit`` keeps as wide as the numbers need."""

    def __init__(self, editor: CodeEditor):
        super().__init__(editor)
        self._editor = editor
        editor.blockCountChanged.connect(self.fit)
        editor.updateRequest.connect(self._follow)

    def width_needed(self) -> int:
        digits = len(str(max(1, self._editor.blockCount())))
        return 12 + self._editor.fontMetrics().horizontalAdvance("9") * max(3, digits)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(self.width_needed(), 0)

    def fit(self) -> None:
        self._editor.setViewportMargins(self.width_needed(), 0, 0, 0)

    def place(self) -> None:
        """Over the margin, after the editor was resized."""
        area = self._editor.contentsRect()
        self.setGeometry(QRect(area.left(), area.top(), self.width_needed(), area.height()))

    def _follow(self, rect: QRect, dy: int) -> None:
        """The editor scrolled by ``dy`` or repainted ``rect``: do the same."""
        if dy:
            self.scroll(0, dy)
        else:
            self.update(0, rect.y(), self.width(), rect.height())
        if rect.contains(self._editor.viewport().rect()):
            self.fit()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        editor = self._editor
        painter = QPainter(self)
        palette = editor.palette()
        painter.fillRect(event.rect(), palette.color(QPalette.ColorRole.AlternateBase))
        block = editor.firstVisibleBlock()
        top = round(editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top())
        current = editor.textCursor().blockNumber()
        width = self.width() - 6
        height = editor.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(editor.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                role = QPalette.ColorRole.Text if block.blockNumber() == current else QPalette.ColorRole.PlaceholderText
                painter.setPen(palette.color(role))
                painter.drawText(0, top, width, height, Qt.AlignmentFlag.AlignRight, str(block.blockNumber() + 1))
                mark = editor.line_marks.get(block.blockNumber())
                if mark == "deleted":
                    painter.fillRect(0, top - 1, 6, 3, MARK_COLORS[mark])
                elif mark is not None:
                    painter.fillRect(0, top, 3, bottom - top, MARK_COLORS[mark])
            block = block.next()
            top = bottom
