"""Bidi controls and zero-width characters drawn where they are, as VS Code does.

The font draws nothing for them (nor does Qt's ``ShowDefaultIgnorables`` with the usual fonts),
yet a bidi override reorders what a line shows and a zero-width space splits a word unseen, and a
model may write them (``model/untrusted_text.py``). Each one in view gets an orange bar at its
place, and its name as the tooltip there. Saving new ones asks first (``Document.new_invisibles``).
"""

from __future__ import annotations

import unicodedata

from PySide6.QtCore import QPoint, QPointF, QRectF
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QPlainTextEdit

from sfumato.app.textpositions import position_of
from sfumato.model.untrusted_text import INVISIBLE

MARK = QColor(230, 100, 0)  # reads on light and dark themes alike
MARK_WIDTH = 2.0


def marks(editor: QPlainTextEdit) -> list[tuple[QRectF, str]]:
    """(where in the viewport, which character) for each invisible character in view. Only a
    line that holds one is laid out for it: this runs at every paint, and asking each line in view
    for its place took most of a paint's time (5 of 8 ms, 40 lines of code, none invisible)."""
    found = []
    offset = editor.contentOffset()
    last = editor.cursorForPosition(QPoint(0, editor.viewport().height())).blockNumber()
    block = editor.firstVisibleBlock()
    while block.isValid() and block.blockNumber() <= last:
        text = block.text()
        if block.isVisible() and INVISIBLE.search(text):
            top = editor.blockBoundingGeometry(block).translated(offset).top()
            layout = block.layout()
            for match in INVISIBLE.finditer(text):
                position = position_of(text, match.start())
                line = layout.lineForTextPosition(position)
                if line.isValid():
                    x = offset.x() + line.cursorToX(position)[0]
                    name = f"U+{ord(match.group()):04X} {unicodedata.name(match.group(), '')}"
                    found.append((QRectF(x - MARK_WIDTH / 2, top + line.y(), MARK_WIDTH, line.height()), name))
        block = block.next()
    return found


def paint_invisibles(editor: QPlainTextEdit, painter: QPainter, area: QRectF) -> None:
    for rect, _name in marks(editor):
        if rect.intersects(area):
            painter.fillRect(rect, MARK)


def invisible_at(editor: QPlainTextEdit, point: QPointF) -> str | None:
    """The name of the invisible character marked at ``point`` (a few pixels either side count)."""
    return next((name for rect, name in marks(editor) if rect.adjusted(-3, 0, 3, 0).contains(point)), None)
