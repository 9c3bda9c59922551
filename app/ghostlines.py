"""Ghost lines: text drawn under a line of the editor that is no text of the document.

A rewrite under review shows what its changed lines were (app/reviewdiff.py) right under the new
ones. The room comes from the editor's document layout: ``GhostLayout`` reports a block that has a
ghost as that much taller, so QPlainTextEdit paints, scrolls, hit-tests and numbers the lines below
it lower down, and the editor paints the ghost in that room (``paint_ghosts``). A ghost is a
QTextLayout of its own: the document, its undo history, its saves and recovery copies never hold it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRect, QRectF
from PySide6.QtGui import QColor, QFont, QPainter, QTextBlock, QTextCharFormat, QTextLayout, QTextOption
from PySide6.QtWidgets import QPlainTextDocumentLayout

from sfumato.app.textpositions import utf16_length

if TYPE_CHECKING:
    from sfumato.app.codeeditor import CodeEditor

Pieces = Sequence[tuple[str, QTextCharFormat]]  # a ghost's text, piece by piece, with its look
UNWRAPPED_WIDTH = 1e6  # a ghost of a text that does not wrap is one row per line, however long


class GhostLayout(QPlainTextDocumentLayout):
    """The editor's document layout; ``ghosts`` maps a block number to the ghost drawn under it."""

    def __init__(self, document):
        super().__init__(document)
        self.ghosts: dict[int, QTextLayout] = {}

    def blockBoundingRect(self, block: QTextBlock) -> QRectF:  # noqa: N802 - Qt override
        rect = super().blockBoundingRect(block)
        ghost = self.ghosts.get(block.blockNumber()) if self.ghosts else None
        if ghost is not None:
            rect.setHeight(rect.height() + ghost.boundingRect().height())
        return rect


def lay_out(pieces: Pieces, font: QFont, tab_stop: float, margin: float, width: float | None) -> QTextLayout:
    """``pieces`` as rows of text at ``margin`` from the left (where the document's text starts),
    wrapped at ``width`` pixels (None: a row per line, as the editor shows unwrapped text)."""
    layout = QTextLayout("".join(text for text, _ in pieces).replace("\n", "\u2028"), font)  # U+2028: a row break
    formats, start = [], 0
    for text, fmt in pieces:
        span = QTextLayout.FormatRange()
        span.start, span.length, span.format = start, utf16_length(text), fmt
        formats.append(span)
        start += span.length
    layout.setFormats(formats)
    option = QTextOption()
    option.setTabStopDistance(tab_stop)
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere if width else QTextOption.WrapMode.NoWrap)
    layout.setTextOption(option)
    layout.beginLayout()
    top = 0.0
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width or UNWRAPPED_WIDTH)
        line.setPosition(QPointF(margin, top))
        top += line.height()
    layout.endLayout()
    return layout


def paint_ghosts(editor: CodeEditor, painter: QPainter, area: QRect, band: QColor) -> None:
    """Paint the ghosts of ``editor`` that meet ``area`` of its viewport, each on a ``band``."""
    offset = editor.contentOffset()
    document = editor.document()
    for number, ghost in document.documentLayout().ghosts.items():
        block = document.findBlockByNumber(number)
        if not block.isValid() or not block.isVisible():
            continue
        height = ghost.boundingRect().height()
        top = editor.blockBoundingGeometry(block).translated(offset).bottom() - height
        room = QRectF(0, top, editor.viewport().width(), height)
        if room.intersects(QRectF(area)):
            painter.fillRect(room, band)
            ghost.draw(painter, QPointF(offset.x(), top))
